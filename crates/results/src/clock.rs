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
