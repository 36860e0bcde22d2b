//! Hosts and their clocks: what an agent says about itself (`HostDoc`), how well its
//! clock is disciplined (`SyncState`), and what `dualperf clock --peer` prints
//! (`PeerClockDoc`). A plan across hosts keeps one `HostDoc` per host in its run directory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use meter::clock::OffsetEstimate;

/// Version of [`PeerClockDoc`].
pub const CLOCK_FORMAT_VERSION: u32 = 1;

/// A host's own view of its clock's synchronisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
pub struct SyncState {
    /// The kernel's discipline (`adjtimex(2)`), `None` where it cannot be read.
    pub kernel: Option<KernelClock>,
    /// `chronyc tracking`, when chrony runs on the host.
    pub chrony: Option<ChronyTracking>,
}

/// A host's synchronisation in a few words: the kernel's, then chrony's when it runs.
pub fn sync_text(sync: &SyncState) -> String {
    let mut parts = Vec::new();
    match &sync.kernel {
        Some(k) => parts.push(format!(
            "{} (kernel: est. error {:.3} ms, max error {:.3} ms)",
            if k.synchronised {
                "synchronised"
            } else {
                "NOT synchronised"
            },
            k.est_error_ns as f64 / 1e6,
            k.max_error_ns as f64 / 1e6
        )),
        None => parts.push("state unknown".into()),
    }
    if let Some(c) = &sync.chrony {
        parts.push(format!(
            "chrony: {} stratum {}, system time {:+.3} ms, root dispersion {:.3} ms",
            c.reference,
            c.stratum,
            c.system_time_offset_ns / 1e6,
            c.root_dispersion_ns / 1e6
        ));
    }
    parts.join("; ")
}

/// The kernel clock discipline as `adjtimex(2)` reports it (read only: `modes` 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KernelClock {
    /// The clock is synchronised (return value is not `TIME_ERROR` and `STA_UNSYNC` is
    /// clear): an NTP daemon disciplines it.
    pub synchronised: bool,
    /// The `status` bits (`STA_*`).
    pub status: u32,
    /// Maximum error, ns (`maxerror`, which the kernel grows by 500 ppm while nobody
    /// updates it).
    pub max_error_ns: u64,
    /// Estimated error, ns (`esterror`).
    pub est_error_ns: u64,
    /// The remaining offset being slewed out, ns (`offset`).
    pub offset_ns: i64,
    /// The clock's frequency correction, parts per million (`freq` / 2^16).
    pub freq_ppm: f64,
}

/// `chronyc -c tracking`, field by field (chrony's documentation of `tracking`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChronyTracking {
    /// Reference ID (hex) and name or address of the source.
    pub reference: String,
    /// Stratum of the host.
    pub stratum: u32,
    /// How far the system clock is from chrony's best estimate, ns ("System time";
    /// positive: fast).
    pub system_time_offset_ns: f64,
    /// Offset of the last clock update, ns ("Last offset").
    pub last_offset_ns: f64,
    /// Long-term average of the offset, ns ("RMS offset").
    pub rms_offset_ns: f64,
    /// Network path delay to the stratum-1 source, ns ("Root delay").
    pub root_delay_ns: f64,
    /// Total dispersion accumulated to the stratum-1 source, ns ("Root dispersion").
    pub root_dispersion_ns: f64,
    /// "Normal", "Insert second", "Delete second" or "Not synchronised".
    pub leap_status: String,
}

/// What a host says about itself: an agent answers a host query with this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostDoc {
    /// `dualperf` and its version.
    pub tool: String,
    /// The host's name.
    pub hostname: String,
    /// The kernel (`uname -sr`).
    pub kernel: String,
    /// CPUs this process may use.
    pub cpus: usize,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): two ends with the same
    /// boot id read one clock.
    pub boot_id: Option<String>,
    /// The host's own clock synchronisation.
    pub clock: SyncState,
    /// The wall clock when the host answered, ns since the Unix epoch.
    pub wall_unix_ns: u64,
}

/// `dualperf clock --peer --json`: this host, the peer, and the offset between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PeerClockDoc {
    /// [`CLOCK_FORMAT_VERSION`].
    pub format_version: u32,
    /// The peer's address as asked.
    pub peer: std::net::SocketAddr,
    /// This host.
    pub local: HostDoc,
    /// The peer, as it describes itself.
    pub remote: HostDoc,
    /// The peer's clock minus this host's, and its bound.
    pub offset: Option<OffsetEstimate>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_text_says_the_kernels_state_then_chronys() {
        assert_eq!(sync_text(&SyncState::default()), "state unknown");
        let sync = SyncState {
            kernel: Some(KernelClock {
                synchronised: false,
                status: 0x40,
                max_error_ns: 16_000_000,
                est_error_ns: 1_600,
                offset_ns: 0,
                freq_ppm: 0.0,
            }),
            chrony: Some(ChronyTracking {
                reference: "CB00710F (ntp1.example.net)".into(),
                stratum: 3,
                system_time_offset_ns: -6_523.0,
                last_offset_ns: 0.0,
                rms_offset_ns: 0.0,
                root_delay_ns: 0.0,
                root_dispersion_ns: 1_100_737.0,
                leap_status: "Normal".into(),
            }),
        };
        assert_eq!(
            sync_text(&sync),
            "NOT synchronised (kernel: est. error 0.002 ms, max error 16.000 ms); chrony: \
             CB00710F (ntp1.example.net) stratum 3, system time -0.007 ms, root dispersion \
             1.101 ms"
        );
    }
}
