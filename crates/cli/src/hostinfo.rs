//! What this host says about itself: its name, kernel, CPUs, boot id and how well its
//! clock is synchronised ([`results::clock::HostDoc`]), for host queries and the clock
//! exchanges of the control channel.
//!
//! The clock's state comes from the kernel (`adjtimex(2)`, read only) and, when chrony
//! runs, from `chronyc -c tracking` (`lab::doctor::programs`, which reads it). Nothing
//! here fails: what cannot be read is `None` or "unknown".

use std::path::Path;

use results::clock::{HostDoc, KernelClock, SyncState};

/// This host's clock synchronisation: the kernel's discipline (`None` when `adjtimex`
/// fails) and chrony's tracking (`None` without `chronyc` on `PATH`, or when it fails,
/// prints no tracking line, or takes over 2 s).
pub(crate) fn sync_state() -> SyncState {
    let kernel = netio::clock::adjtimex_state().ok().map(|k| KernelClock {
        synchronised: k.synchronised,
        status: k.status,
        max_error_ns: k.max_error_ns,
        est_error_ns: k.est_error_ns,
        offset_ns: k.offset_ns,
        freq_ppm: k.freq_ppm,
    });
    SyncState {
        kernel,
        chrony: lab::doctor::programs::chrony_tracking(),
    }
}

/// What this host says about itself, now.
pub(crate) fn host_doc() -> HostDoc {
    let hostname = read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into());
    let kernel = match (
        read_trimmed("/proc/sys/kernel/ostype"),
        read_trimmed("/proc/sys/kernel/osrelease"),
    ) {
        (Some(os), Some(release)) => format!("{os} {release}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "unknown".into(),
    };
    HostDoc {
        tool: format!("dualperf {}", env!("CARGO_PKG_VERSION")),
        hostname,
        kernel,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        boot_id: boot_id(),
        clock: sync_state(),
        wall_unix_ns: netio::clock::wall_ns(),
    }
}

/// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): two processes with the
/// same one read the same clock. `None` when it cannot be read, and when this process
/// shifts its wall clock (`netio::clock::set_wall_offset_ns`): such a process does not
/// share its clock with the other processes of its kernel.
pub(crate) fn boot_id() -> Option<String> {
    boot_id_unless_shifted(netio::clock::wall_offset_ns(), || {
        read_trimmed("/proc/sys/kernel/random/boot_id")
    })
}

/// `read()`, unless the wall clock is shifted (`wall_offset_ns != 0`).
fn boot_id_unless_shifted(
    wall_offset_ns: i64,
    read: impl FnOnce() -> Option<String>,
) -> Option<String> {
    if wall_offset_ns == 0 {
        read()
    } else {
        None
    }
}

/// A file's contents, trimmed; `None` if unreadable or empty.
fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shifted_clock_claims_no_boot_id() {
        let read = || Some("3b6f1f3e-0000-4000-8000-000000000000".to_owned());
        assert_eq!(
            boot_id_unless_shifted(0, read).as_deref(),
            read().as_deref()
        );
        assert_eq!(boot_id_unless_shifted(1, read), None);
        assert_eq!(boot_id_unless_shifted(-5_000_000_000, read), None);
    }

    #[test]
    fn describes_this_host() {
        let doc = host_doc();
        assert!(doc.tool.starts_with("dualperf "), "{doc:?}");
        assert!(!doc.hostname.is_empty() && !doc.hostname.contains('\n'));
        assert!(doc.kernel.starts_with("Linux "), "{}", doc.kernel);
        assert!(doc.cpus >= 1);
        // No test of this binary shifts the wall clock.
        if let Some(id) = &doc.boot_id {
            assert_eq!(id.len(), 36, "{id}");
            assert_eq!(boot_id().as_ref(), Some(id));
        }
        assert!(doc.wall_unix_ns > 1_577_836_800 * 1_000_000_000);
        assert!(
            doc.clock.kernel.is_some(),
            "adjtimex with modes 0 needs no privilege"
        );
    }
}
