//! `dualperf send`: flows from flags or a flow file, paced on absolute deadlines, with
//! sender-side and receiver-side results per flow.
//!
//! - `mod.rs`: flags → validated [`SendConfig`];
//! - `session.rs`: the control session (handshake, registration, finish, results);
//! - `flow.rs`: one flow's pacing loop and its echo reader;
//! - `report.rs`: what is printed.

mod ditg;
mod flow;
mod report;
mod session;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration as StdDuration;

use anyhow::{Context, Result};
use clap::Parser;
use traffic::{FlowSpec, MarkingSpec, Rate, StopSpec};
use wire::control::{Meter, Protocol};
use wire::ds::{Dscp, Ecn};
use wire::probe;
use wire::time::Duration;

pub(crate) use report::FlowOutcome;
pub(crate) use session::{run_session, PartialReport};

use crate::control::{resolve, Family, DEFAULT_PORT};
use crate::usage;

/// Send flows to a `dualperf recv` and report what both ends measured.
///
/// Packets leave on absolute deadlines (no drift); each one's scheduled and actual send
/// time is kept, so schedule error is reported. Results: per flow, the sender's counts
/// and rate, the receiver's summary (delay, four jitters, loss, marking as received),
/// and for `--meter rtt` the round-trip summary of the echoes.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  dualperf send 127.0.0.1 --rate 30000pps --size 64 --duration 10s
  dualperf send ::1 --tcp --rate 10mbit --size 1024 --meter rtt --dscp EF
  dualperf send [::1]:4646 --flows flows.txt --json
  dualperf send ::1 --meter rtt --dscp EF --ecn ect1 --ttl 7 --flow-label 0x12345
  dualperf send ::1 --voip g711.1 --vad onoff        # talk spurts and silences (ITU-T P.59)
  dualperf send ::1 --stream h261 --dscp AF41        # H.261 CIF video over RTP
  dualperf send ::1 --tcp --bulk --parallel 4 --congestion bbr --interval 1s
  dualperf send 127.0.0.1 --udp --bulk --rate 100mbit --interval 1s")]
pub(crate) struct SendArgs {
    /// Receiver: an address, a name, HOST:PORT or [IPv6]:PORT.
    dest: String,
    /// Use IPv4 only.
    #[arg(short = '4', conflicts_with = "ipv6")]
    ipv4: bool,
    /// Use IPv6 only.
    #[arg(short = '6')]
    ipv6: bool,
    /// Receiver port, when DEST carries none.
    #[arg(short, long, default_value_t = DEFAULT_PORT)]
    port: u16,
    #[command(flatten)]
    flow: FlowArgs,
    /// Run the flows listed in FILE instead of the one given by flags: one flow per line,
    /// written with the same flow options as this command (e.g. `--tcp --rate 100pps
    /// --size 512 --dscp AF41 --start 2s --duration 5s`); `#` starts a comment. Flows run
    /// concurrently, each on its own thread and socket.
    #[arg(long, value_name = "FILE", conflicts_with = "ditg_script")]
    flows: Option<PathBuf>,
    /// Run the flows of a D-ITG script (ITGSend's multi-flow file, one flow per line:
    /// `-a ADDR -T UDP -C 100 -c 512 -t 10000`, `VoIP -x G.711.1 -h RTP`, `CSa`…),
    /// translated option by option; `-a` must name DEST, ports and log options are
    /// dualperf's own and left out. An option dualperf cannot honour is an error.
    #[arg(long, value_name = "FILE")]
    ditg_script: Option<PathBuf>,
    /// Shared secret of a receiver started with --key.
    #[arg(long, env = "DUALPERF_KEY", hide_env_values = true)]
    key: Option<String>,
    /// Print one JSON object with sender- and receiver-side results per flow.
    #[arg(long)]
    json: bool,
    /// Say "dualperf send: started" on stderr once the receiver has accepted the flows
    /// and they begin (for `dualperf run`, which starts the measured flow only after
    /// background flows have begun).
    #[arg(long, hide = true)]
    announce_start: bool,
    /// How long connecting to the receiver may take (its control connection and TCP
    /// data connections), and at least how long setting up the session may; raise it
    /// across a congested link, where lost SYNs wait out TCP's 1 s, 3 s, 7 s retries.
    #[arg(long, default_value = "5s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    connect_timeout: StdDuration,
    /// Write the sender's per-packet records (send schedule, and echoes for --meter rtt)
    /// to this binary log.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Spin (busy-wait) for the last part of each wait before a deadline. Default: 50µs,
    /// or a quarter of the inter-departure time if that is shorter; 0 never spins.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    spin: Option<Duration>,
    /// Wake once for all packets due within this window and send them in one sendmmsg,
    /// instead of waking for each packet: fewer wake-ups at very high rates, at the cost
    /// of up to one window of schedule error and back-to-back packets. 0 (default) keeps
    /// every packet on its own deadline; a late sender still batches what is due.
    #[arg(long, default_value = "0", value_parser = crate::args::duration, value_name = "DURATION")]
    batch_window: Duration,
    /// Print the throughput sent in each interval while the flows run, and report the
    /// receiver's series in these windows (like iperf3 -i): 1s, 500ms.
    #[arg(short, long, value_parser = crate::args::duration, value_name = "DURATION")]
    interval: Option<Duration>,
}

/// The options of one flow, shared by the command line and flow files.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FlowArgs {
    /// UDP datagrams (default).
    #[arg(long, conflicts_with = "tcp")]
    udp: bool,
    /// Length-prefixed messages on one TCP connection.
    #[arg(long)]
    tcp: bool,
    /// Send rate: packets per second (30000pps) or payload bits per second (10mbit, 64kbit;
    /// a bare K/M/G suffix means bits, as in iperf: 10M). Default 1000pps; with --bulk, a
    /// cap (TCP) or the target (UDP).
    #[arg(short, long)]
    rate: Option<Rate>,
    /// Payload bytes per packet (UDP payload, or TCP message body; 64k, 1M). At least 16:
    /// the probe header. Default 512; with --bulk 128KiB on TCP (one message per write,
    /// like iperf3's -l), 1400 on UDP.
    #[arg(short, long, value_parser = crate::args::byte_count, value_name = "BYTES")]
    size: Option<u64>,
    /// Bulk load: TCP as fast as the window allows (or capped by --rate), UDP at the
    /// --rate given; meant for background traffic and throughput, like iperf3. See
    /// --parallel, --congestion and --interval.
    #[arg(long, conflicts_with_all = ["voip", "app", "stream", "idt"])]
    bulk: bool,
    /// Run N identical copies of this flow at once, each on its own connection (iperf3 -P).
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    parallel: u16,
    /// TCP congestion control: cubic, bbr, reno… (see
    /// /proc/sys/net/ipv4/tcp_available_congestion_control). Default: the kernel's.
    #[arg(long, value_name = "NAME")]
    congestion: Option<String>,
    /// VoIP as D-ITG models it: g711.1, g711.2, g723.1, g729.2 or g729.3 sets the packet
    /// rate and payload size (UDP). See --voip-header and --vad.
    #[arg(long, alias = "codec", value_name = "CODEC", conflicts_with_all = ["rate", "size", "tcp"])]
    voip: Option<traffic::voip::Codec>,
    /// An RTP stream of the seed studies, with a real RTP header: g711 (µ-law, 64 kbit/s,
    /// 20 ms packets; see --ptime), webaudio (1250 B every 50 ms, 200 kbit/s) or h261
    /// (CIF video, 384 kbit/s in the mean, frames cut into ≤1400-byte packets).
    #[arg(long, value_name = "STREAM",
          conflicts_with_all = ["rate", "size", "tcp", "voip", "app", "idt", "size_dist"])]
    stream: Option<traffic::stream::Stream>,
    /// Packetisation time of --stream g711 (10ms, 20ms, 30ms…). Seed 000's 294-byte IPv4
    /// frames are 30 ms packets.
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION", requires = "stream")]
    ptime: Option<Duration>,
    /// An application model of D-ITG: telnet (TCP), dns (UDP, or TCP with --tcp),
    /// quake3, csa (Counter-Strike active) or csi (idle): gaps and sizes from its fitted
    /// distributions.
    #[arg(long, value_name = "APP", conflicts_with_all = ["rate", "size", "voip", "idt", "size_dist"])]
    app: Option<traffic::app::App>,
    /// Inter-departure times in milliseconds from a distribution instead of --rate:
    /// const:10, uniform:1,5, exp:10 (mean), normal:20,2, poisson:5, pareto:1.5,1,
    /// cauchy:0,1, gamma:2,3, weibull:1.5,2, t:41.7,0.1,0.7, mix:0.6*exp:4.29+0.4*const:10.75,
    /// values:1,2,3, file:PATH.
    #[arg(long, value_name = "DIST", value_parser = parse_dist, conflicts_with = "rate")]
    idt: Option<traffic::dist::Dist>,
    /// Payload sizes in bytes from a distribution instead of --size (same spelling as
    /// --idt); truncated and clamped to what the probe and the protocol allow.
    #[arg(long, value_name = "DIST", value_parser = parse_dist, conflicts_with = "size")]
    size_dist: Option<traffic::dist::Dist>,
    /// Send only during ON periods of an on/off process whose ON and OFF durations, in
    /// milliseconds, come from these distributions (same spelling as --idt; D-ITG's -B):
    /// --on exp:1000 --off const:2000.
    #[arg(long, value_name = "DIST", value_parser = parse_dist, requires = "off", conflicts_with = "vad")]
    on: Option<traffic::dist::Dist>,
    /// OFF durations in milliseconds; see --on.
    #[arg(long, value_name = "DIST", value_parser = parse_dist, requires = "on")]
    off: Option<traffic::dist::Dist>,
    /// Seed of --idt, --size-dist and --app (default: random; the seed used is in the results).
    #[arg(long)]
    seed: Option<u64>,
    /// Header bytes D-ITG's VoIP model counts in the payload: rtp (12), crtp (2) or none.
    #[arg(long, default_value = "rtp", value_parser = parse_voip_header, requires = "voip")]
    voip_header: traffic::voip::VoipHeader,
    /// Voice activity, for --voip and the audio --stream presets. onoff: talk spurts and
    /// silences, exponential with ITU-T P.59's means (1.004 s and 1.587 s, 38.75 %
    /// activity), no packets in a silence; onoff:SPURT,PAUSE sets the means in seconds.
    /// ditg: D-ITG's -VAD, every packet's codec bytes times 0.65 (--voip only).
    #[arg(long, value_parser = parse_vad, value_name = "MODEL")]
    vad: Option<Vad>,
    /// Stop after this long (10s, 500ms, 2m). Default 10s when no stop is given. A sender
    /// that cannot keep up stops at this plus 1 % and reports the shortfall.
    #[arg(short = 't', long, value_parser = crate::args::duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Stop after this many packets.
    #[arg(short = 'n', long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many payload bytes (1M, 64k).
    #[arg(long, value_parser = crate::args::byte_count, value_name = "BYTES")]
    bytes: Option<u64>,
    /// owd: the receiver measures one-way delay. rtt: the receiver echoes each probe and
    /// the sender measures round-trip time.
    #[arg(short, long, default_value = "owd", value_parser = crate::args::meter)]
    meter: Meter,
    /// DSCP: 0-63 or a name (EF, AF41, CS1, BE, LE, VA).
    #[arg(long)]
    dscp: Option<Dscp>,
    /// ECN codepoint: not-ect, ect1, ect0, ce (UDP only: on TCP the kernel owns ECN).
    #[arg(long)]
    ecn: Option<Ecn>,
    /// IPv4 TTL / IPv6 hop limit (1-255).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
    ttl: Option<u8>,
    /// IPv6 flow label (0x12345 or decimal, up to 20 bits), for UDP and TCP alike.
    #[arg(long, value_parser = crate::args::flow_label)]
    flow_label: Option<u32>,
    /// TCP_NODELAY: send each TCP message at once (no Nagle).
    #[arg(long)]
    nodelay: bool,
    /// Start this long after the run begins (for flow files).
    #[arg(long, value_parser = crate::args::duration, value_name = "DURATION")]
    start: Option<Duration>,
    /// A name for this flow in the output.
    #[arg(long)]
    label: Option<String>,
}

#[derive(Parser)]
#[command(name = "flow line", no_binary_name = true, disable_help_flag = true)]
struct FlowLine {
    #[command(flatten)]
    flow: FlowArgs,
}

impl FlowArgs {
    /// The flows these options describe: one, or `--parallel` copies.
    fn to_specs(&self, default_label: String) -> Result<Vec<FlowSpec>> {
        let spec = self.to_spec(default_label)?;
        if self.parallel == 1 {
            return Ok(vec![spec]);
        }
        let n = self.parallel;
        Ok((0..n)
            .map(|i| FlowSpec {
                label: format!("{} [{}/{n}]", spec.label, i + 1),
                // Copies of a random model draw different samples.
                seed: spec.seed.wrapping_add(u64::from(i)),
                ..spec.clone()
            })
            .collect())
    }

    fn to_spec(&self, default_label: String) -> Result<FlowSpec> {
        let min = probe::HEADER_LEN as u64;
        let size = self.size.unwrap_or(match (self.bulk, self.tcp) {
            (true, true) => 128 * 1024,
            (true, false) => 1400,
            (false, _) => 512,
        });
        if size < min {
            usage!("--size {size} is too small: the probe header needs {min} bytes");
        }
        if !self.tcp && size > 65_507 {
            usage!("--size {size} exceeds the largest UDP payload (65507 bytes)");
        }
        if self.tcp && size > wire::frame::MAX_DATA_LEN as u64 {
            usage!(
                "--size {size} exceeds the largest TCP message ({} bytes)",
                wire::frame::MAX_DATA_LEN
            );
        }
        let size = size as u32;
        if self.tcp && self.ecn.is_some() {
            usage!("--ecn applies to UDP only: on TCP the kernel sets the ECN bits");
        }
        if self.count == Some(0) || self.bytes == Some(0) || self.duration == Some(Duration::ZERO) {
            usage!("a stop condition of zero sends nothing: give --count, --bytes or --duration above 0");
        }
        if self.bulk && self.meter == Meter::Rtt {
            usage!("--bulk measures throughput one way: leave --meter at owd");
        }
        if self.bulk && !self.tcp && self.rate.is_none() {
            usage!("--bulk on UDP needs --rate (e.g. 100mbit): UDP has no congestion control to find the rate");
        }
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
            if app != traffic::app::App::Dns {
                if self.tcp && model.protocol == Protocol::Udp
                    || self.udp && model.protocol == Protocol::Tcp
                {
                    usage!("--app {app} runs over {:?} only", model.protocol);
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
                    usage!("{flag}: {e}");
                }
            }
        }
        let mut on_off_ms = match self.vad {
            Some(Vad::OnOff { spurt_s, pause_s }) => {
                if self.voip.is_none()
                    && !matches!(
                        self.stream,
                        Some(traffic::stream::Stream::G711 | traffic::stream::Stream::WebAudio)
                    )
                {
                    usage!("--vad onoff applies to --voip and the audio streams (--stream g711 or webaudio)");
                }
                Some(traffic::voip::talk_spurts(spurt_s, pause_s))
            }
            Some(Vad::Ditg) if self.voip.is_none() => {
                usage!("--vad ditg applies to --voip only (D-ITG's codec models)");
            }
            _ => None,
        };
        if let (Some(on), Some(off)) = (&self.on, &self.off) {
            on_off_ms = Some(traffic::dist::OnOff {
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
            if let Err(e) = process.validate() {
                usage!("{flags}: {e}");
            }
            if !process.on.can_be_positive() {
                usage!("{flags}: {}", traffic::dist::DistError::NeverOn);
            }
            if self.bulk && self.tcp && self.rate.is_none() {
                usage!("{flags} gates paced flows; an unpaced --bulk flow has no deadlines to gate (give --rate)");
            }
        }
        if self.congestion.is_some() && protocol != Protocol::Tcp {
            usage!("--congestion applies to TCP flows (--tcp, --app telnet, --app dns --tcp)");
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
            let real_rtp = self.voip_header == traffic::voip::VoipHeader::Rtp;
            let rtp = if real_rtp && size as usize >= RTP_PROBE_MIN {
                Some(codec.rtp())
            } else {
                if real_rtp {
                    eprintln!(
                        "dualperf send: note: {label}: {size}-byte payloads leave no room for an RTP header and the probe ({RTP_PROBE_MIN} bytes); sending the probe alone"
                    );
                }
                None
            };
            (codec.rate(), size, label, rtp)
        } else if let Some(stream) = self.stream {
            let ptime_ms = match self.ptime {
                None => None,
                Some(p) if stream != traffic::stream::Stream::G711 => {
                    usage!("--ptime applies to --stream g711 only, not {stream} ({p})")
                }
                Some(p) => {
                    let ms = p.as_nanos() / 1_000_000;
                    if p.as_nanos() % 1_000_000 != 0 || !(1..=1000).contains(&ms) {
                        usage!("--ptime must be whole milliseconds from 1ms to 1s, not {p}");
                    }
                    Some(ms as u32)
                }
            };
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
        Ok(FlowSpec {
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
            seed: self
                .seed
                .unwrap_or_else(|| u64::from_ne_bytes(crate::control::random_bytes())),
            on_off_ms,
            video,
            unpaced: self.bulk && self.tcp && self.rate.is_none(),
            congestion: self.congestion.clone(),
        })
    }
}

/// A voice activity model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Vad {
    /// D-ITG's constant 0.65 factor.
    Ditg,
    /// Exponential talk spurts and silences with these means.
    OnOff { spurt_s: f64, pause_s: f64 },
}

fn parse_vad(s: &str) -> Result<Vad, String> {
    use traffic::voip::{P59_PAUSE_S, P59_TALK_SPURT_S};
    let lower = s.to_ascii_lowercase();
    match lower.split_once(':') {
        None if lower == "ditg" => Ok(Vad::Ditg),
        None if lower == "onoff" => Ok(Vad::OnOff {
            spurt_s: P59_TALK_SPURT_S,
            pause_s: P59_PAUSE_S,
        }),
        Some(("onoff", means)) => {
            let parse = |v: Option<&str>| {
                v.and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v > 0.0)
            };
            let mut it = means.split(',');
            match (parse(it.next()), parse(it.next()), it.next()) {
                (Some(spurt_s), Some(pause_s), None) => Ok(Vad::OnOff { spurt_s, pause_s }),
                _ => Err(format!(
                    "'{s}': onoff:SPURT,PAUSE takes two mean durations in seconds above 0, e.g. onoff:1.004,1.587"
                )),
            }
        }
        _ => Err(format!(
            "unknown voice activity model '{s}': use onoff, onoff:SPURT,PAUSE or ditg"
        )),
    }
}

/// An RTP header (12 bytes) and the probe (16 bytes).
const RTP_PROBE_MIN: usize = wire::rtp::HEADER_LEN + probe::HEADER_LEN;

/// A distribution in `kind:args` spelling; `file:PATH` reads the values from a file.
fn parse_dist(s: &str) -> Result<traffic::dist::Dist, String> {
    use traffic::dist::{Dist, DistError};
    match s.parse::<Dist>() {
        Err(DistError::NeedsFile(path)) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read values from {path}: {e}"))?;
            Dist::empirical_from_text(&text).map_err(|e| format!("{path}: {e}"))
        }
        other => other.map_err(|e| e.to_string()),
    }
}

fn parse_voip_header(s: &str) -> Result<traffic::voip::VoipHeader, String> {
    use traffic::voip::VoipHeader;
    match s.to_ascii_lowercase().as_str() {
        "rtp" => Ok(VoipHeader::Rtp),
        "crtp" => Ok(VoipHeader::Crtp),
        "none" => Ok(VoipHeader::None),
        _ => Err(format!("unknown VoIP header '{s}': use rtp, crtp or none")),
    }
}

/// A validated send: destination, flows, options.
pub(crate) struct SendConfig {
    pub(crate) dest: SocketAddr,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) spin: Option<Duration>,
    pub(crate) batch_window: Duration,
    pub(crate) log: Option<PathBuf>,
    pub(crate) progress: bool,
    /// The receiver's series in these windows, and live per-interval throughput lines
    /// on stdout when `live` is set.
    pub(crate) interval: Option<Duration>,
    pub(crate) live: bool,
    /// Say on stderr when the flows begin.
    pub(crate) announce_start: bool,
    /// Bound on connecting to the receiver (see `--connect-timeout`).
    pub(crate) connect_timeout: StdDuration,
}

impl SendConfig {
    /// A config for flows to `dest` with default pacing, no key, no log.
    pub(crate) fn new(dest: SocketAddr, flows: Vec<FlowSpec>) -> Self {
        Self {
            dest,
            flows,
            key: None,
            spin: None,
            batch_window: Duration::ZERO,
            log: None,
            progress: false,
            interval: None,
            live: false,
            announce_start: false,
            connect_timeout: StdDuration::from_secs(5),
        }
    }
}

pub(crate) fn run(args: SendArgs) -> Result<()> {
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    let dest = resolve(&args.dest, args.port, family)?;
    if (args.flows.is_some() || args.ditg_script.is_some())
        && format!("{:?}", args.flow) != format!("{:?}", default_flow_args())
    {
        usage!("flow options on the command line do not apply to the flows of --flows or --ditg-script: write them on the file's lines");
    }
    let flows = match (&args.flows, &args.ditg_script) {
        (Some(path), _) => read_flow_file(path, |line| Ok(line.to_owned()))?,
        (None, Some(path)) => read_flow_file(path, |line| {
            let t = ditg::translate(line)?;
            if let Some(a) = &t.dest {
                match resolve(a, args.port, family) {
                    Ok(addr) if addr.ip() == dest.ip() => {}
                    _ => {
                        return Err(format!(
                            "-a {a} is not {}: one script goes to one receiver (DEST)",
                            dest.ip()
                        ))
                    }
                }
            }
            Ok(t.args.join(" "))
        })?,
        (None, None) => args.flow.to_specs("flow 0".into())?,
    };
    for f in &flows {
        if f.marking.flow_label.is_some() && dest.is_ipv4() {
            usage!("--flow-label applies to IPv6 only; {dest} is IPv4");
        }
    }
    let config = SendConfig {
        key: args.key.map(String::into_bytes),
        spin: args.spin,
        batch_window: args.batch_window,
        log: args.log,
        progress: std::io::stderr().is_terminal() && !args.json && args.interval.is_none(),
        interval: check_interval(args.interval, &flows)?,
        // As iperf3 -J: JSON alone on stdout.
        live: !args.json,
        announce_start: args.announce_start,
        connect_timeout: args.connect_timeout,
        ..SendConfig::new(dest, flows)
    };
    let outcome = run_session(&config, &crate::interrupt::flag());
    // Whatever happened, print what was measured before reporting an error.
    let (report, error) = match outcome {
        Ok(r) => (r, None),
        Err(e) => match e.downcast::<PartialReport>() {
            Ok(partial) => (partial.report, Some(partial.error)),
            Err(e) => return Err(e),
        },
    };
    if args.json {
        crate::out::print_json(&report)?;
    } else {
        crate::out::print(report.to_text())?;
    }
    match error {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}

/// Check flow options as `send` would read them (a plan's points, before anything runs);
/// the error is send's own message.
pub(crate) fn check_flow_args(args: &[String]) -> std::result::Result<(), String> {
    let line = FlowLine::try_parse_from(args).map_err(|e| {
        e.to_string()
            .trim()
            .trim_start_matches("error: ")
            .to_owned()
    })?;
    line.flow
        .to_specs("check".into())
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
}

/// Flow options as no option sets them.
fn default_flow_args() -> FlowArgs {
    FlowLine::try_parse_from(std::iter::empty::<&str>())
        .map(|l| l.flow)
        .unwrap_or_else(|e| unreachable!("flow options have defaults: {e}"))
}

/// Shortest `--interval`: windows of at least this, so a window holds a meaningful count.
const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Longest `--interval`.
const MAX_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// Most windows a session may ask the receiver for, all flows together: the series
/// travel in one results message (about 300 bytes of JSON a window, under its 16 MiB).
pub(crate) const MAX_SESSION_WINDOWS: u64 = 30_000;

/// Check `--interval` against its bounds and, for flows with a duration, the number of
/// windows the receiver would report.
fn check_interval(interval: Option<Duration>, flows: &[FlowSpec]) -> Result<Option<Duration>> {
    let Some(w) = interval else {
        return Ok(None);
    };
    if w < MIN_INTERVAL || w > MAX_INTERVAL {
        usage!("--interval {w} is outside {MIN_INTERVAL} to 24 h");
    }
    let windows: u64 = flows
        .iter()
        .filter_map(|f| f.stop.duration)
        .map(|d| {
            (d + Duration::from_nanos(d.as_nanos() / 100) + traffic::schedule::MIN_GRACE).as_nanos()
                / w.as_nanos()
                + 1
        })
        .sum();
    if windows > MAX_SESSION_WINDOWS {
        usage!("--interval {w} over these flows makes {windows} windows; the receiver reports at most {MAX_SESSION_WINDOWS} per session: use a longer interval");
    }
    Ok(Some(w))
}

/// The flows of a file, one per line (`#` starts a comment); `translate` turns a line
/// into dualperf's flow options (the identity for flow files, D-ITG's for scripts).
fn read_flow_file(
    path: &Path,
    translate: impl Fn(&str) -> Result<String, String>,
) -> Result<Vec<FlowSpec>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read flow file {}", path.display()))?;
    let mut flows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), n + 1);
        let line = translate(line)
            .map_err(|e| anyhow::Error::new(crate::UsageError(format!("{at}: {e}"))))?;
        let parsed = FlowLine::try_parse_from(line.split_whitespace()).map_err(|e| {
            anyhow::Error::new(crate::UsageError(format!(
                "{at}: {}",
                e.to_string().trim().trim_start_matches("error: ")
            )))
        })?;
        let specs = parsed
            .flow
            .to_specs(format!("line {}", n + 1))
            .map_err(|e| match e.downcast::<crate::UsageError>() {
                Ok(u) => anyhow::Error::new(crate::UsageError(format!("{at}: {u}"))),
                Err(e) => e.context(at.clone()),
            })?;
        flows.extend(specs);
    }
    if flows.is_empty() {
        usage!("flow file {} lists no flows", path.display());
    }
    Ok(flows)
}
