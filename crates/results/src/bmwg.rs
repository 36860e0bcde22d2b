//! What `dualperf rfc2544` writes (`rfc2544.json` in its run directory, and `--json`):
//! a device's benchmarks by RFC 2544, RFC 5180 (IPv6), RFC 8219 (IPv6 transition:
//! NAT64, SIIT) and RFC 9004 (back-to-back frames), per path, frame size and direction,
//! with every trial behind each figure.
//!
//! These are plain data: the methods that produce the figures are the `bmwg` crate's
//! (searches, loss curve, latency statistics), and the cli turns their results into
//! these types, so this crate does not depend on them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The value of [`Rfc2544Doc::schema`].
pub const RFC2544_SCHEMA: &str = "dualperf.rfc2544/1";

/// `dualperf rfc2544`'s document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rfc2544Doc {
    /// [`RFC2544_SCHEMA`]: `dualperf.rfc2544/1`.
    #[schemars(extend("const" = "dualperf.rfc2544/1"))]
    pub schema: String,
    /// The device under test.
    pub device: Device,
    /// The tester and what it can offer.
    pub tester: Tester,
    /// How the benchmarks were run.
    pub settings: Settings,
    /// One entry per path, frame size and direction, in the order they ran.
    pub paths: Vec<PathResult>,
    /// What a reader must know about the figures, one sentence each (a tester ceiling
    /// reached, a test left out and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The device under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Device {
    /// Its node name in the lab (`dut`), or `none` for the tester's self-test.
    pub name: String,
    /// What forwards the frames.
    pub kind: DeviceKind,
    /// The lab it ran in; `None` for the self-test (tester back to back).
    pub lab: Option<String>,
}

/// What forwards the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// `dualperf route`, the lab's userspace router.
    Route,
    /// Linux forwarding in the node's namespace.
    Kernel,
    /// TAYGA, stateless NAT64 / SIIT.
    Tayga,
    /// The lab's NAT44 node.
    Nat44,
    /// No device: the tester's two ports back to back (`--self-test`).
    None,
}

/// The tester.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tester {
    /// How frames are sent and counted: `xdp-live-frames` (an XDP program run with
    /// `BPF_F_TEST_XDP_LIVE_FRAMES`, paced inside the program; an XDP program counts on
    /// the receiving port).
    pub method: String,
    /// The most the tester offers without falling behind, per frame size and family
    /// (measured back to back, no device): a device figure at the ceiling is a lower
    /// bound.
    pub ceiling: Vec<Ceiling>,
    /// The CPU the tester ran on (`/proc/cpuinfo`'s model name).
    pub cpu: String,
}

/// The tester's ceiling at one frame size and family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ceiling {
    /// Frame size in bytes, FCS included (RFC 2544 §9).
    pub frame_size: u64,
    /// IPv6 frames.
    pub v6: bool,
    /// Frames per second.
    pub fps: u64,
    /// Sending cores.
    pub cores: u32,
}

/// How the benchmarks were run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Settings {
    /// `--quick`: shorter final trials and fewer back-to-back repetitions.
    pub quick: bool,
    /// The throughput search's first trial duration, ns.
    pub initial_duration_ns: u64,
    /// The final trial duration, ns (RFC 2544 §24: at least 60 s; `--quick` 10 s).
    pub final_duration_ns: u64,
    /// The PDR's loss ratio goal (0.005 is 0.5 %).
    pub pdr_ratio: f64,
    /// The search's final width goal, (upper − lower) / upper.
    pub precision: f64,
    /// A frame received later than this after it was sent counts as lost, ns (a
    /// per-frame timeout, not RFC 8219's end-of-trial one).
    pub timeout_ns: u64,
    /// Both directions at once (RFC 2544 §14), each offered the rate.
    pub bidirectional: bool,
    /// UDP ports varied per frame by RFC 4814 §4.5's pseudorandom rule.
    pub rfc4814_ports: bool,
    /// The rate ramp before each trial, ns (its frames are not counted).
    pub ramp_ns: u64,
    /// Back-to-back searches per frame size (RFC 9004 §3.4).
    pub b2b_repeats: u32,
}

/// Which path through the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PathKind {
    /// IPv4 in, IPv4 out.
    Ipv4,
    /// IPv6 in, IPv6 out.
    Ipv6,
    /// IPv6 in, IPv4 out (RFC 8219: the device translates).
    Nat64,
    /// IPv4 in, IPv6 out.
    Nat46,
}

/// Which way frames crossed the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From tester port a to port b.
    AToB,
    /// From b to a.
    BToA,
    /// Both at once; rates are per direction.
    Both,
}

/// The benchmarks of one path, frame size and direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathResult {
    /// The path.
    pub path: PathKind,
    /// Frame size in bytes, FCS included (RFC 2544 §9: a 64-byte frame is 60 bytes
    /// handed to the interface).
    pub frame_size: u64,
    /// The direction.
    pub direction: Direction,
    /// Throughput: NDR and PDR (RFC 2544 §26.1), if run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// Latency at the throughput (RFC 8219 §7.2), if run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// The frame loss rate curve (RFC 2544 §26.3), if run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flr: Vec<FlrPoint>,
    /// Back-to-back frames (RFC 9004), if run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_to_back: Option<BackToBack>,
}

/// Throughput: the NDR and PDR search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Throughput {
    /// The NDR: the highest load with no frame lost, frames per second (0 if even the
    /// lowest load lost frames).
    pub ndr_fps: u64,
    /// The PDR: the highest load losing at most `pdr_ratio`.
    pub pdr_fps: u64,
    /// The NDR in bits per second of frames, FCS included, preamble and gap not
    /// ([`frame_bps`]).
    pub ndr_bps: u64,
    /// The PDR in bits per second, as `ndr_bps`.
    pub pdr_bps: u64,
    /// The lowest load found to lose frames: the NDR lies in [ndr_fps, ndr_upper_fps);
    /// `None` if no load lost.
    pub ndr_upper_fps: Option<u64>,
    /// The lowest load found to lose more than `pdr_ratio`.
    pub pdr_upper_fps: Option<u64>,
    /// The NDR is the highest load offered (the line rate or the tester's ceiling): the
    /// device did at least that; "at least" wherever shown.
    pub lower_bound: bool,
    /// The search reached its width goal at the final duration; `false` if it ran out of
    /// trials first.
    pub converged: bool,
    /// Every trial of the search, in order.
    pub trials: Vec<Trial>,
}

/// One trial as the tester counted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trial {
    /// The load, frames per second.
    pub rate_fps: u64,
    /// How long the counted frames were sent, ns.
    pub duration_ns: u64,
    /// Frames sent (the ramp not counted).
    pub offered: u64,
    /// Frames received within the timeout.
    pub received: u64,
    /// Frames received after the timeout (lost for the figures).
    pub late: u64,
    /// (offered − received) / offered.
    pub loss_ratio: f64,
    /// The generator fell behind its schedule: the load was not offered, and the trial
    /// says nothing about the device.
    pub tester_late: bool,
}

/// Latency over the tagged frames of one trial (RFC 8219 §7.2, §7.3). The delay figures
/// are `null` when no tagged frame arrived (IPDV: fewer than two).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Latency {
    /// The trial's load, frames per second (the throughput, RFC 8219 §7.2).
    pub rate_fps: u64,
    /// Tagged frames received within the timeout.
    pub samples: u64,
    /// Tagged frames lost or late.
    pub lost: u64,
    /// The smallest one-way delay, ns.
    pub min_ns: Option<u64>,
    /// The median: RFC 8219's Typical Latency, ns.
    pub median_ns: Option<u64>,
    /// The 99.9th percentile: RFC 8219's Worst Case Latency, ns.
    pub p99_9_ns: Option<u64>,
    /// The largest delay, ns.
    pub max_ns: Option<u64>,
    /// PDV: the 99.9th percentile minus the minimum (RFC 8219 §7.3.1, over the tagged
    /// frames), ns.
    pub pdv_ns: Option<u64>,
    /// IPDV: the 99.9th percentile of |D_i − D_{i−1}| over consecutive received tagged
    /// frames (RFC 8219 §7.3.2), ns.
    pub ipdv_p99_9_ns: Option<i64>,
    /// Fewer than 500 tagged frames arrived (RFC 8219 §7.2 asks for 500): the figures are
    /// not a benchmark.
    pub too_few: bool,
}

/// One point of the frame loss rate curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FlrPoint {
    /// The load, percent of the highest rate (100, 90, …).
    pub percent: u32,
    /// The load, frames per second.
    pub rate_fps: u64,
    /// Frames lost (late included) over frames offered.
    pub loss_ratio: f64,
    /// The tester could not offer this load.
    pub tester_late: bool,
}

/// Back-to-back frames (RFC 9004).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackToBack {
    /// The burst rate, frames per second (line rate or the tester's ceiling).
    pub rate_fps: u64,
    /// The benchmark: the mean of the searches' longest lossless bursts, frames.
    pub frames_mean: f64,
    /// Each search's longest lossless burst, frames.
    pub bursts: Vec<u64>,
    /// The mean burst as time at the burst rate (RFC 9004 §3.5 Implied DUT Buffer
    /// Time), ns.
    pub implied_buffer_time_ns: f64,
    /// The Corrected DUT Buffer Time (RFC 9004 §3.5): the implied time less the frames
    /// the device forwarded at its throughput during the burst, ns; `None` without a
    /// throughput.
    pub buffer_time_ns: Option<f64>,
    /// A search's longest burst was the longest tried: the figures are lower bounds.
    pub lower_bound: bool,
    /// Every burst, in order.
    pub trials: Vec<Trial>,
}

/// Bits per second of `fps` frames of `frame_size` bytes (FCS included), without the
/// 20 bytes of preamble and inter-frame gap a line also carries per frame.
pub fn frame_bps(frame_size: u64, fps: u64) -> u64 {
    frame_size.saturating_mul(8).saturating_mul(fps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(rate_fps: u64, offered: u64, received: u64) -> Trial {
        Trial {
            rate_fps,
            duration_ns: 10_000_000_000,
            offered,
            received,
            late: 0,
            loss_ratio: (offered - received) as f64 / offered as f64,
            tester_late: false,
        }
    }

    fn doc() -> Rfc2544Doc {
        Rfc2544Doc {
            schema: RFC2544_SCHEMA.into(),
            device: Device {
                name: "dut".into(),
                kind: DeviceKind::Tayga,
                lab: Some("dut-tayga".into()),
            },
            tester: Tester {
                method: "xdp-live-frames".into(),
                ceiling: vec![Ceiling {
                    frame_size: 84,
                    v6: true,
                    fps: 7_500_000,
                    cores: 1,
                }],
                cpu: "virtual".into(),
            },
            settings: Settings {
                quick: true,
                initial_duration_ns: 1_000_000_000,
                final_duration_ns: 10_000_000_000,
                pdr_ratio: 0.005,
                precision: 0.005,
                timeout_ns: 2_000_000,
                bidirectional: false,
                rfc4814_ports: true,
                ramp_ns: 100_000_000,
                b2b_repeats: 5,
            },
            paths: vec![PathResult {
                path: PathKind::Nat64,
                frame_size: 84,
                direction: Direction::AToB,
                throughput: Some(Throughput {
                    ndr_fps: 812_345,
                    pdr_fps: 814_990,
                    ndr_bps: frame_bps(84, 812_345),
                    pdr_bps: frame_bps(84, 814_990),
                    ndr_upper_fps: Some(814_990),
                    pdr_upper_fps: Some(819_085),
                    lower_bound: false,
                    converged: true,
                    trials: vec![trial(812_345, 8_123_450, 8_123_450)],
                }),
                latency: None,
                flr: vec![FlrPoint {
                    percent: 100,
                    rate_fps: 1_000_000,
                    loss_ratio: 0.187655,
                    tester_late: false,
                }],
                back_to_back: None,
            }],
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_document_reads_back_and_names_its_fields_as_documented() {
        let schema = serde_json::to_value(schemars::schema_for!(Rfc2544Doc)).unwrap();
        assert_eq!(schema["properties"]["schema"]["const"], RFC2544_SCHEMA);
        let d = doc();
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["schema"], "dualperf.rfc2544/1");
        assert_eq!(v["device"]["kind"], "tayga");
        let p = &v["paths"][0];
        assert_eq!(
            (p["path"].as_str(), p["direction"].as_str()),
            (Some("nat64"), Some("a_to_b"))
        );
        assert_eq!(p["throughput"]["ndr_bps"], 545_895_840);
        // Tests not run are left out, not null.
        assert!(p.get("latency").is_none() && p.get("back_to_back").is_none());
        assert!(v.get("notes").is_none());
        let back: Rfc2544Doc = serde_json::from_value(v).unwrap();
        assert_eq!(back, d);
    }
}
