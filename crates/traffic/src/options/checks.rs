//! One flow's options ([`FlowOptions`]) and the checks that turn them into
//! [`FlowSpec`]s, with errors that name the offending option ([`OptionError`]).

use wire::control::{Meter, Protocol};
use wire::ds::{Dscp, Ecn};
use wire::probe;
use wire::time::Duration;

use crate::app::App;
use crate::distribution::{Dist, DistError, OnOff};
use crate::flow::{FlowSpec, MarkingSpec, StopSpec};
use crate::stream::Stream;
use crate::units::Rate;
use crate::voip::{Codec, VoipHeader};

use super::values::Vad;

/// The options of one flow, as `dualperf send` and its flow files take them; each field
/// is the option of the same name (`size_dist` is `--size-dist`). `None` and `false`:
/// not given.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowOptions {
    /// `--udp`.
    pub udp: bool,
    /// `--tcp`.
    pub tcp: bool,
    /// `--rate`.
    pub rate: Option<Rate>,
    /// `--size`, payload bytes.
    pub size: Option<u64>,
    /// `--bulk`.
    pub bulk: bool,
    /// `--parallel`: copies of the flow (1 to 256).
    pub parallel: u16,
    /// `--calls`: copies of the flow with random start phases (1 to [`MAX_CALLS`]).
    pub calls: Option<u32>,
    /// `--congestion`.
    pub congestion: Option<String>,
    /// `-w/--window`, bytes.
    pub window: Option<u64>,
    /// `--cport`: the first copy's source port (copies take the next ones).
    pub cport: Option<u16>,
    /// `-O/--omit`.
    pub omit: Option<Duration>,
    /// `-Z/--zerocopy`.
    pub zerocopy: bool,
    /// `--df`: UDP with Don't Fragment at every size.
    pub df: bool,
    /// `--voip`.
    pub voip: Option<Codec>,
    /// `--stream`.
    pub stream: Option<Stream>,
    /// `--ptime`.
    pub ptime: Option<Duration>,
    /// `--app`.
    pub app: Option<App>,
    /// `--idt`, milliseconds.
    pub idt: Option<Dist>,
    /// `--size-dist`, bytes.
    pub size_dist: Option<Dist>,
    /// `--on`, milliseconds.
    pub on: Option<Dist>,
    /// `--off`, milliseconds.
    pub off: Option<Dist>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--voip-header`.
    pub voip_header: VoipHeader,
    /// `--vad`.
    pub vad: Option<Vad>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--count`.
    pub count: Option<u64>,
    /// `--bytes`.
    pub bytes: Option<u64>,
    /// `--meter`.
    pub meter: Meter,
    /// `--dscp`.
    pub dscp: Option<Dscp>,
    /// `--ecn`.
    pub ecn: Option<Ecn>,
    /// `--ttl` (1-255).
    pub ttl: Option<u8>,
    /// `--flow-label`.
    pub flow_label: Option<u32>,
    /// `--nodelay`.
    pub nodelay: bool,
    /// `--start`.
    pub start: Option<Duration>,
    /// `--label`.
    pub label: Option<String>,
}

impl Default for FlowOptions {
    /// The options as no flag sets them.
    fn default() -> Self {
        Self {
            udp: false,
            tcp: false,
            rate: None,
            size: None,
            bulk: false,
            parallel: 1,
            calls: None,
            congestion: None,
            window: None,
            cport: None,
            omit: None,
            zerocopy: false,
            df: false,
            voip: None,
            stream: None,
            ptime: None,
            app: None,
            idt: None,
            size_dist: None,
            on: None,
            off: None,
            seed: None,
            voip_header: VoipHeader::Rtp,
            vad: None,
            duration: None,
            count: None,
            bytes: None,
            meter: Meter::Owd,
            dscp: None,
            ecn: None,
            ttl: None,
            flow_label: None,
            nodelay: false,
            start: None,
            label: None,
        }
    }
}

/// Flow options that cannot be used, naming the offending option.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OptionError {
    option: String,
    message: String,
}

impl OptionError {
    /// An error about `option` (spelled `--size-dist`), with the whole message.
    pub fn new(option: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            option: option.into(),
            message: message.into(),
        }
    }

    /// The offending option, as `send` spells it (`--size-dist`).
    pub fn option(&self) -> &str {
        &self.option
    }
}

/// `return Err(OptionError)` naming `$option`.
macro_rules! refuse {
    ($option:expr, $($fmt:tt)+) => {
        return Err(OptionError::new($option, format!($($fmt)+)))
    };
}

/// The flows one line of options describes, and notes for the user about them.
#[derive(Clone, Debug, PartialEq)]
pub struct Specs {
    /// One flow, or `--parallel` copies.
    pub flows: Vec<FlowSpec>,
    /// Things worth saying that are not errors (a VoIP payload with no room for RTP).
    pub notes: Vec<String>,
}

/// Most copies `--calls` makes: flow ids are 16-bit, and a receiver holds at most
/// 65,534 flows at once.
pub const MAX_CALLS: u32 = 60_000;

/// The smallest `--window`: Linux grants at least 4,608 bytes of receive buffer anyway
/// (`SOCK_MIN_RCVBUF`), and a smaller window than one message is no test.
pub const MIN_WINDOW: u64 = 4096;
/// The largest `--window`: 1 GiB (the kernel keeps twice the value in an `int`).
pub const MAX_WINDOW: u64 = 1 << 30;

/// An RTP header (12 bytes) and the probe (16 bytes).
pub const RTP_PROBE_MIN: usize = wire::rtp::HEADER_LEN + probe::HEADER_LEN;

impl FlowOptions {
    /// The flows these options describe: one, or `--parallel` copies. `default_label`
    /// names a flow that has no `--label` and no preset; `seed` is the seed of a flow
    /// that gives no `--seed` (copies take the next seeds).
    pub fn to_specs(&self, default_label: String, seed: u64) -> Result<Specs, OptionError> {
        let (spec, notes) = self.to_spec(default_label, seed)?;
        let mut flows = if let Some(n) = self.calls {
            calls(&spec, n)?
        } else if self.parallel == 1 {
            vec![spec]
        } else {
            let n = self.parallel;
            (0..n)
                .map(|i| FlowSpec {
                    label: format!("{} [{}/{n}]", spec.label, i + 1),
                    // Copies of a random model draw different samples.
                    seed: spec.seed.wrapping_add(u64::from(i)),
                    ..spec.clone()
                })
                .collect()
        };
        // iperf3's --cport with -P: the streams take ports PORT, PORT+1, … PORT+N-1.
        if let Some(first) = self.cport {
            let last = u64::from(first) + flows.len() as u64 - 1;
            if first == 0 || last > u64::from(u16::MAX) {
                refuse!(
                    "--cport",
                    "--cport {first} for {} flows needs ports {first} to {last}, within 1 to 65535",
                    flows.len()
                );
            }
            for (k, f) in flows.iter_mut().enumerate() {
                f.cport = Some(first + k as u16);
            }
        }
        Ok(Specs { flows, notes })
    }
}

/// `n` copies of `spec` as independent calls: each starts at a random phase within one
/// mean inter-departure time of the flow (at most 1 s), drawn from the flow's seed, so
/// the copies do not all send at the same instants, and each draws its own random
/// model (seed + k), as `--parallel` copies do. Labels are `LABEL #k`.
fn calls(spec: &FlowSpec, n: u32) -> Result<Vec<FlowSpec>, OptionError> {
    if !(1..=MAX_CALLS).contains(&n) {
        refuse!("--calls", "--calls {n} is not in 1..={MAX_CALLS}");
    }
    let Some(pps) = spec.mean_pps().filter(|p| *p > 0.0) else {
        refuse!(
            "--calls",
            "--calls needs a paced flow: a bulk flow has no period to spread calls over"
        );
    };
    let period_ns = ((1e9 / pps) as u64).clamp(1, 1_000_000_000);
    Ok((0..n)
        .map(|k| {
            let seed = spec.seed.wrapping_add(u64::from(k));
            let phase_ns = crate::distribution::splitmix64(seed ^ CALL_PHASE_STREAM) % period_ns;
            FlowSpec {
                label: format!("{} #{}", spec.label, k + 1),
                seed,
                start_offset: spec.start_offset + Duration::from_nanos(phase_ns),
                ..spec.clone()
            }
        })
        .collect())
}

/// Keeps the phase draw of `--calls` independent of the flow's own random streams.
const CALL_PHASE_STREAM: u64 = 0xca11_5eed_0ff5_e7a1;

impl FlowOptions {
    /// The payload size: `--size`, or the default for the kind of flow, within what the
    /// probe and the protocol allow.
    fn checked_size(&self) -> Result<u32, OptionError> {
        let min = probe::HEADER_LEN as u64;
        let size = self.size.unwrap_or(match (self.bulk, self.tcp) {
            (true, true) => 128 * 1024,
            (true, false) => 1400,
            (false, _) => 512,
        });
        if size < min {
            refuse!(
                "--size",
                "--size {size} is too small: the probe header needs {min} bytes"
            );
        }
        if !self.tcp && size > 65_507 {
            refuse!(
                "--size",
                "--size {size} exceeds the largest UDP payload (65507 bytes)"
            );
        }
        if self.tcp && size > wire::frame::MAX_DATA_LEN as u64 {
            refuse!(
                "--size",
                "--size {size} exceeds the largest TCP message ({} bytes)",
                wire::frame::MAX_DATA_LEN
            );
        }
        Ok(size as u32)
    }

    /// `-O/--omit` in nanoseconds: shorter than `--duration`, if that stops the flow, so
    /// something is counted. Zero is no omission.
    fn checked_omit(&self) -> Result<Option<u64>, OptionError> {
        let Some(omit) = self.omit.filter(|o| *o > Duration::ZERO) else {
            return Ok(None);
        };
        if self.meter == Meter::Rtt {
            refuse!(
                "--omit",
                "--omit applies to one-way flows: leave --meter at owd"
            );
        }
        if self.count.is_none() && self.bytes.is_none() {
            let duration = self.duration.unwrap_or(Duration::from_secs(10));
            if omit >= duration {
                refuse!(
                    "--omit",
                    "--omit {omit} leaves nothing of a {duration} flow to count: omit less than --duration"
                );
            }
        }
        Ok(Some(omit.as_nanos()))
    }

    /// Checks of options that do not go together whatever the preset.
    fn check_basics(&self) -> Result<(), OptionError> {
        if self.tcp && self.ecn.is_some() {
            refuse!(
                "--ecn",
                "--ecn applies to UDP only: on TCP the kernel sets the ECN bits"
            );
        }
        let zero = if self.count == Some(0) {
            Some("--count")
        } else if self.bytes == Some(0) {
            Some("--bytes")
        } else if self.duration == Some(Duration::ZERO) {
            Some("--duration")
        } else {
            None
        };
        if let Some(option) = zero {
            refuse!(option, "a stop condition of zero sends nothing: give --count, --bytes or --duration above 0");
        }
        if self.bulk && self.meter == Meter::Rtt {
            refuse!(
                "--bulk",
                "--bulk measures throughput one way: leave --meter at owd"
            );
        }
        Ok(())
    }

    /// The on/off gating of `--vad onoff` or `--on`/`--off`, checked.
    fn on_off(&self) -> Result<Option<OnOff>, OptionError> {
        let mut on_off_ms = match self.vad {
            Some(Vad::OnOff { spurt_s, pause_s }) => {
                if self.voip.is_none()
                    && !matches!(self.stream, Some(Stream::G711 | Stream::WebAudio))
                {
                    refuse!("--vad", "--vad onoff applies to --voip and the audio streams (--stream g711 or webaudio)");
                }
                Some(crate::voip::talk_spurts(spurt_s, pause_s))
            }
            Some(Vad::Ditg) if self.voip.is_none() => {
                refuse!(
                    "--vad",
                    "--vad ditg applies to --voip only (D-ITG's codec models)"
                );
            }
            _ => None,
        };
        if let (Some(on), Some(off)) = (&self.on, &self.off) {
            on_off_ms = Some(OnOff {
                on: on.clone(),
                off: off.clone(),
            });
        }
        if let Some(process) = &on_off_ms {
            let flags = if self.vad.is_some() {
                "--vad"
            } else {
                "--on/--off"
            };
            let option = if self.vad.is_some() { "--vad" } else { "--on" };
            if let Err(e) = process.validate() {
                refuse!(option, "{flags}: {e}");
            }
            if !process.on.can_be_positive() {
                refuse!(option, "{flags}: {}", DistError::NeverOn);
            }
            if self.bulk && self.tcp && self.rate.is_none() {
                refuse!(option, "{flags} gates paced flows; an unpaced --bulk flow has no deadlines to gate (give --rate)");
            }
        }
        Ok(on_off_ms)
    }

    /// `--ptime` in whole milliseconds, for `--stream g711` only.
    fn ptime_ms(&self, stream: Stream) -> Result<Option<u32>, OptionError> {
        match self.ptime {
            None => Ok(None),
            Some(p) if stream != Stream::G711 => {
                refuse!(
                    "--ptime",
                    "--ptime applies to --stream g711 only, not {stream} ({p})"
                )
            }
            Some(p) => {
                let ms = p.as_nanos() / 1_000_000;
                if p.as_nanos() % 1_000_000 != 0 || !(1..=1000).contains(&ms) {
                    refuse!(
                        "--ptime",
                        "--ptime must be whole milliseconds from 1ms to 1s, not {p}"
                    );
                }
                Ok(Some(ms as u32))
            }
        }
    }

    fn to_spec(
        &self,
        default_label: String,
        seed: u64,
    ) -> Result<(FlowSpec, Vec<String>), OptionError> {
        let size = self.checked_size()?;
        self.check_basics()?;
        let mut notes = Vec::new();
        let mut protocol = if self.tcp {
            Protocol::Tcp
        } else {
            Protocol::Udp
        };
        let (mut idt_ms, mut size_dist) = (self.idt.clone(), self.size_dist.clone());
        let mut default_label = default_label;
        if let Some(app) = self.app {
            let model = app.model();
            // DNS runs over either transport; the others over D-ITG's.
            if app != App::Dns {
                if self.tcp && model.protocol == Protocol::Udp
                    || self.udp && model.protocol == Protocol::Tcp
                {
                    refuse!("--app", "--app {app} runs over {:?} only", model.protocol);
                }
                protocol = model.protocol;
            }
            idt_ms = Some(model.idt_ms);
            size_dist = Some(model.size);
            default_label = format!("app {app}");
        }
        for (flag, d) in [("--idt", &idt_ms), ("--size-dist", &size_dist)] {
            if let Some(d) = d {
                if let Err(e) = d.validate() {
                    refuse!(flag, "{flag}: {e}");
                }
            }
        }
        let on_off_ms = self.on_off()?;
        // The kernel doubles what it is given and caps it at INT_MAX (socket(7)).
        let window_bytes = match self.window {
            None => None,
            Some(w) if (MIN_WINDOW..=MAX_WINDOW).contains(&w) => Some(w as u32),
            Some(w) => refuse!(
                "--window",
                "--window {w} bytes is outside {MIN_WINDOW} to {MAX_WINDOW} (1 GiB)"
            ),
        };
        let omit_ns = self.checked_omit()?;
        if self.zerocopy && !(self.bulk && protocol == Protocol::Tcp) {
            refuse!(
                "--zerocopy",
                "--zerocopy applies to TCP bulk flows (--tcp --bulk): it sends their large writes without a copy"
            );
        }
        if self.df && protocol != Protocol::Udp {
            refuse!(
                "--df",
                "--df applies to UDP flows: TCP finds its path MTU itself (RFC 1191, RFC 8201)"
            );
        }
        if self.congestion.is_some() && protocol != Protocol::Tcp {
            refuse!(
                "--congestion",
                "--congestion applies to TCP flows (--tcp, --app telnet, --app dns --tcp)"
            );
        }
        let vad_label = match self.vad {
            Some(Vad::Ditg) => " vad",
            Some(Vad::OnOff { .. }) => " vad-onoff",
            None => "",
        };
        let mut video = None;
        let (rate, size, label, rtp) = if let Some(codec) = self.voip {
            let ditg_vad = self.vad == Some(Vad::Ditg);
            let size = codec.payload_bytes(self.voip_header, ditg_vad);
            let header = format!("{:?}", self.voip_header).to_lowercase();
            let label = format!("voip {codec} {header}{vad_label}");
            // The 12 bytes D-ITG counts for RTP become a real RTP header when the
            // probe still fits behind it.
            let real_rtp = self.voip_header == VoipHeader::Rtp;
            let rtp = if real_rtp && size as usize >= RTP_PROBE_MIN {
                Some(codec.rtp())
            } else {
                if real_rtp {
                    notes.push(format!(
                        "{label}: {size}-byte payloads leave no room for an RTP header and the probe ({RTP_PROBE_MIN} bytes); sending the probe alone"
                    ));
                }
                None
            };
            (codec.rate(), size, label, rtp)
        } else if let Some(stream) = self.stream {
            let ptime_ms = self.ptime_ms(stream)?;
            let model = stream.model(ptime_ms);
            video = model.video;
            let ptime = ptime_ms.map_or(String::new(), |p| format!(" {p}ms"));
            (
                model.rate,
                model.size_bytes,
                format!("stream {stream}{ptime}{vad_label}"),
                Some(model.rtp),
            )
        } else {
            let label = if self.bulk {
                format!("bulk {}", if self.tcp { "tcp" } else { "udp" })
            } else {
                default_label
            };
            (
                self.rate.unwrap_or(Rate::MilliPps(1_000_000)),
                size,
                label,
                None,
            )
        };
        let mut stop = StopSpec {
            duration: self.duration,
            count: self.count,
            bytes: self.bytes,
        };
        if stop.duration.is_none() && stop.count.is_none() && stop.bytes.is_none() {
            stop.duration = Some(Duration::from_secs(10));
        }
        let spec = FlowSpec {
            protocol,
            meter: self.meter,
            rate,
            size_bytes: size,
            stop,
            start_offset: self.start.unwrap_or_default(),
            marking: MarkingSpec {
                dscp: self.dscp,
                ecn: self.ecn,
                ttl: self.ttl,
                flow_label: self.flow_label,
            },
            nodelay: self.nodelay,
            label: self.label.clone().unwrap_or(label),
            rtp,
            idt_ms,
            size_dist,
            seed: self.seed.unwrap_or(seed),
            on_off_ms,
            video,
            unpaced: self.bulk && self.rate.is_none(),
            congestion: self.congestion.clone(),
            bulk: self.bulk,
            window_bytes,
            cport: None,
            omit_ns,
            zerocopy: self.zerocopy,
            dont_fragment: self.df,
        };
        Ok((spec, notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(o: &FlowOptions) -> FlowSpec {
        let mut s = o.to_specs("flow 0".into(), 7).unwrap();
        assert_eq!(s.flows.len(), 1);
        s.flows.remove(0)
    }

    #[test]
    fn no_options_make_sends_default_flow() {
        let s = one(&FlowOptions::default());
        assert_eq!(
            s,
            FlowSpec {
                label: "flow 0".into(),
                seed: 7,
                ..FlowSpec::default()
            }
        );
    }

    #[test]
    fn presets_set_rate_size_and_label() {
        let s = one(&FlowOptions {
            voip: Some(Codec::G711x1),
            vad: Some(Vad::Ditg),
            ..FlowOptions::default()
        });
        assert_eq!(s.label, "voip g711.1 rtp vad");
        assert!(s.rtp.is_some());
        let s = one(&FlowOptions {
            stream: Some(Stream::G711),
            ptime: Some(Duration::from_millis(30)),
            ..FlowOptions::default()
        });
        assert_eq!(s.label, "stream g711 30ms");
        let s = one(&FlowOptions {
            app: Some(App::Telnet),
            ..FlowOptions::default()
        });
        assert_eq!(
            (s.protocol, s.label.as_str()),
            (Protocol::Tcp, "app telnet")
        );
        let s = one(&FlowOptions {
            bulk: true,
            tcp: true,
            ..FlowOptions::default()
        });
        assert!(s.unpaced);
        assert_eq!((s.size_bytes, s.label.as_str()), (128 * 1024, "bulk tcp"));
    }

    #[test]
    fn calls_start_at_seeded_phases_within_one_period() {
        let opts = FlowOptions {
            voip: Some(Codec::G711x1),
            calls: Some(500),
            seed: Some(7),
            start: Some(Duration::from_secs(1)),
            ..FlowOptions::default()
        };
        let s = opts.to_specs("f".into(), 0).unwrap();
        assert_eq!(s.flows.len(), 500);
        // One period of the codec's packet rate.
        let pps = s.flows[0].mean_pps().unwrap();
        let period = Duration::from_nanos((1e9 / pps) as u64);
        let offsets: Vec<_> = s.flows.iter().map(|f| f.start_offset).collect();
        assert!(offsets
            .iter()
            .all(|o| *o >= Duration::from_secs(1) && *o < Duration::from_secs(1) + period));
        // Spread out: the phases fill the period (no quarter of it left empty).
        let quarter = Duration::from_nanos(period.as_nanos() / 4);
        for q in 0..4u64 {
            let lo = Duration::from_secs(1) + Duration::from_nanos(quarter.as_nanos() * q);
            let hi = lo + quarter;
            assert!(
                offsets.iter().any(|o| *o >= lo && *o < hi),
                "quarter {q} empty"
            );
        }
        assert_eq!(s.flows[0].label, "voip g711.1 rtp #1");
        assert_eq!((s.flows[0].seed, s.flows[499].seed), (7, 506));
        // The same seed gives the same phases.
        let again = opts.to_specs("f".into(), 0).unwrap();
        assert_eq!(again.flows, s.flows);
        // A bulk flow has no period; 0 calls are none.
        for (o, text) in [
            (
                FlowOptions {
                    bulk: true,
                    tcp: true,
                    calls: Some(2),
                    ..FlowOptions::default()
                },
                "needs a paced flow",
            ),
            (
                FlowOptions {
                    calls: Some(0),
                    ..FlowOptions::default()
                },
                "not in 1..=60000",
            ),
        ] {
            let e = o.to_specs("f".into(), 0).unwrap_err();
            assert_eq!(e.option(), "--calls");
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    #[test]
    fn parallel_copies_take_numbered_labels_and_next_seeds() {
        let s = FlowOptions {
            parallel: 3,
            seed: Some(10),
            ..FlowOptions::default()
        }
        .to_specs("f".into(), 0)
        .unwrap();
        let got: Vec<_> = s.flows.iter().map(|f| (f.label.as_str(), f.seed)).collect();
        assert_eq!(got, [("f [1/3]", 10), ("f [2/3]", 11), ("f [3/3]", 12)]);
    }

    #[test]
    fn a_voip_payload_too_small_for_rtp_is_a_note() {
        let s = FlowOptions {
            voip: Some(Codec::G729x2),
            vad: Some(Vad::Ditg),
            ..FlowOptions::default()
        }
        .to_specs("f".into(), 0)
        .unwrap();
        assert!(s.flows[0].rtp.is_none());
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
        assert!(s.notes[0].contains("no room for an RTP header"));
    }

    #[test]
    fn errors_name_the_offending_option() {
        let d = FlowOptions::default;
        for (o, option, text) in [
            (
                FlowOptions {
                    size: Some(8),
                    ..d()
                },
                "--size",
                "--size 8 is too small",
            ),
            (
                FlowOptions {
                    tcp: true,
                    ecn: Some(Ecn::Ect1),
                    ..d()
                },
                "--ecn",
                "--ecn applies to UDP only",
            ),
            (
                FlowOptions {
                    bytes: Some(0),
                    ..d()
                },
                "--bytes",
                "a stop condition of zero",
            ),
            (
                FlowOptions {
                    size_dist: Some(Dist::Uniform { min: 5.0, max: 1.0 }),
                    ..d()
                },
                "--size-dist",
                "--size-dist: ",
            ),
            (
                FlowOptions {
                    vad: Some(Vad::Ditg),
                    ..d()
                },
                "--vad",
                "--vad ditg applies to --voip only",
            ),
            (
                FlowOptions {
                    on: Some(Dist::Constant { value: 0.0 }),
                    off: Some(Dist::Constant { value: 10.0 }),
                    ..d()
                },
                "--on",
                "--on/--off: ",
            ),
            (
                FlowOptions {
                    congestion: Some("bbr".into()),
                    ..d()
                },
                "--congestion",
                "applies to TCP flows",
            ),
            (
                FlowOptions {
                    app: Some(App::Telnet),
                    udp: true,
                    ..d()
                },
                "--app",
                "--app telnet runs over Tcp only",
            ),
            (
                FlowOptions {
                    stream: Some(Stream::H261),
                    ptime: Some(Duration::from_millis(20)),
                    ..d()
                },
                "--ptime",
                "--ptime applies to --stream g711 only",
            ),
        ] {
            let e = o.to_specs("f".into(), 0).unwrap_err();
            assert_eq!(e.option(), option, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
    }

    #[test]
    fn cport_numbers_the_copies_and_omit_and_zerocopy_are_checked() {
        let d = FlowOptions::default;
        // --cport with -P: PORT to PORT+N-1, as iperf3's streams.
        let s = FlowOptions {
            tcp: true,
            parallel: 3,
            cport: Some(5000),
            ..d()
        }
        .to_specs("f".into(), 0)
        .unwrap();
        let ports: Vec<_> = s.flows.iter().map(|f| f.cport).collect();
        assert_eq!(ports, [Some(5000), Some(5001), Some(5002)]);
        assert_eq!(one(&d()).cport, None);
        let omit = one(&FlowOptions {
            omit: Some(Duration::from_secs(1)),
            duration: Some(Duration::from_secs(2)),
            ..d()
        });
        assert_eq!(omit.omit_ns, Some(1_000_000_000));
        // -O 0 is no omission; -Z is kept for TCP bulk.
        assert_eq!(
            one(&FlowOptions {
                omit: Some(Duration::ZERO),
                ..d()
            })
            .omit_ns,
            None
        );
        let zc = one(&FlowOptions {
            tcp: true,
            bulk: true,
            zerocopy: true,
            ..d()
        });
        assert!(zc.zerocopy);
        for (o, option, text) in [
            (
                FlowOptions {
                    parallel: 2,
                    cport: Some(u16::MAX),
                    ..d()
                },
                "--cport",
                "needs ports 65535 to 65536",
            ),
            (
                FlowOptions {
                    omit: Some(Duration::from_secs(10)),
                    ..d()
                },
                "--omit",
                "leaves nothing",
            ),
            (
                FlowOptions {
                    zerocopy: true,
                    bulk: true,
                    ..d()
                },
                "--zerocopy",
                "TCP bulk",
            ),
        ] {
            let e = o.to_specs("f".into(), 0).unwrap_err();
            assert_eq!(e.option(), option, "{e}");
            assert!(e.to_string().contains(text), "{e}");
        }
    }
    #[test]
    fn df_sets_dont_fragment_on_udp_flows_only() {
        let df = one(&FlowOptions {
            df: true,
            size: Some(1452),
            ..FlowOptions::default()
        });
        assert!(df.dont_fragment);
        assert!(!one(&FlowOptions::default()).dont_fragment);
        let tcp = FlowOptions {
            df: true,
            tcp: true,
            ..FlowOptions::default()
        };
        let e = tcp.to_specs("f".into(), 0).unwrap_err();
        assert_eq!(e.option(), "--df");
        assert_eq!(
            e.to_string(),
            "--df applies to UDP flows: TCP finds its path MTU itself (RFC 1191, RFC 8201)"
        );
        let mut named = crate::options::NamedOptions::new(|_| Ok(String::new()));
        named.set("df", None).unwrap();
        named.set("udp", None).unwrap();
        assert!(named.finish().unwrap().df);
    }
}
