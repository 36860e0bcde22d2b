//! `dualperf send`: flows from flags or a flow file, paced on absolute deadlines, with
//! sender-side and receiver-side results per flow.
//!
//! - `mod.rs`: flags → validated [`SendConfig`] (the flow options are `traffic::options`'
//!   vocabulary: clap reads them into a [`FlowOptions`], which checks them and makes the
//!   flows);
//! - `session.rs`: the control session (handshake, registration, finish, results);
//! - `engine.rs`: a sender thread, every flow given to it on one scheduler, one loop;
//! - `flow.rs`: one flow inside an engine: its packets, its socket's batch, its echoes;
//! - `remote.rs`: flows an agent sends (`--reverse`, `--bidir`, `--from`);
//! - `--stamp` hands the one flow to the STAMP Session-Sender, `crate::stamp::sender`;
//! - what is printed without `--json` is `results::send::text`, beside the report's types.

pub(crate) mod callback;
mod engine;
mod flow;
pub(crate) mod remote;
mod reserve;
pub(crate) mod session;
mod tcpinfo;
mod zerocopy;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration as StdDuration;

use anyhow::Result;
use clap::Parser;
use results::send::text;
use traffic::options::Vad;
use traffic::{FlowOptions, FlowSpec, OptionError, Rate};
use wire::control::Meter;
use wire::ds::{Dscp, Ecn};
use wire::time::Duration;

pub(crate) use session::{run_session, PartialReport};
pub(crate) use traffic::policy::RunCaps;

use crate::control::{resolve, Family, DEFAULT_PORT, MAX_SESSION_WINDOWS};
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
  dualperf send ::1 --tcp --bulk --parallel 4 --congestion bbr --interval 1s   # Retr, Cwnd
  dualperf send ::1 --tcp --bulk --rate 10gbit -w 4MiB -O 2s   # paced by the kernel, warm-up left out
  dualperf send 127.0.0.1 --udp --bulk --rate 100mbit --interval 1s
  dualperf send 127.0.0.1 --udp --bulk --size 1400       # as fast as the socket takes it (iperf3 -b 0)
  dualperf send ::1 --voip g711.1 --calls 2000 --duration 60s   # 2,000 calls, one report
  dualperf send ::1 -u -b 10M -l 512 -t 5 -J            # iperf3's flags: UDP, 10 Mbit/s, 512 B, 5 s, JSON
  dualperf send HOST --key K --reverse --tcp --bulk     # HOST's agent sends to us (iperf3 -R)
  dualperf send HOST --key K --bidir --voip g711.1      # both directions at once
  dualperf send --from HOST-A HOST-B --key K            # HOST-A's agent sends to HOST-B
  dualperf send ::1 --stream webaudio --reserve controlled-load   # RSVP (needs CAP_NET_RAW)

--reverse, --bidir and --from need `dualperf agent` on the other host (docs/agent.md).
A session estimates the receiver's clock offset (RFC 5905 on-wire method) and reports it
with its bound; one-way delays between two hosts include that offset (docs/output.md).
Every option, flow files (--flows) and flows in a plan: docs/flows.md.")]
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
    #[command(flatten)]
    reserve: reserve::ReserveArgs,
    /// Run the flows listed in FILE instead of the one given by flags: one flow per line,
    /// written with the same flow options as this command (e.g. `--tcp --rate 100pps
    /// --size 512 --dscp AF41 --start 2s --duration 5s`); `#` starts a comment. Flows run
    /// concurrently, all on the sender threads of --threads.
    #[arg(long, value_name = "FILE", conflicts_with = "ditg_script")]
    flows: Option<PathBuf>,
    /// Run the flows of a D-ITG script (ITGSend's multi-flow file, one flow per line:
    /// `-a ADDR -T UDP -C 100 -c 512 -t 10000`, `VoIP -x G.711.1 -h RTP`, `CSa`…),
    /// translated option by option; `-a` must name DEST, ports and log options are
    /// dualperf's own and left out. An option dualperf cannot honour is an error.
    #[arg(long, value_name = "FILE")]
    ditg_script: Option<PathBuf>,
    /// Shared secret of a receiver started with --key (with --reverse and --bidir: the
    /// agent's at DEST; with --from: DEST's).
    #[arg(long, env = "DUALPERF_KEY", hide_env_values = true)]
    key: Option<String>,
    /// The agent at DEST sends these flows to us instead (iperf3 -R): a receiver starts
    /// here for the session, reached as --reverse-mode says (by default also from behind
    /// a NAT), and the report is the agent's, as `send` prints it, with our receiver's
    /// figures. Needs `dualperf agent` at DEST. With --log, the log is our receiver's.
    #[arg(short = 'R', long, conflicts_with_all = ["bidir", "from"])]
    reverse: bool,
    /// How the reverse direction (--reverse, --bidir) reaches us: `callback` over
    /// connections we open to the agent and to where our UDP punches come from (works
    /// from behind a NAT or stateful firewall, as iperf3 -R), `listen` to a receiver we
    /// start on a free port (the agent connects: no NAT in front of us), `auto` callback
    /// when the agent offers it.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    reverse_mode: callback::ReverseMode,
    /// Keepalive interval of a quiet reverse UDP flow in callback mode (a test aid).
    #[arg(long, hide = true, default_value = "15s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    nat_keepalive: StdDuration,
    /// Our receiver's first punch of a reverse UDP flow waits this long (a test aid).
    #[arg(long, hide = true, default_value = "0s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    punch_delay: StdDuration,
    /// Both directions at once: these flows to the agent at DEST and the same flows from
    /// it to us (iperf3 --bidir); each direction reported on its own.
    #[arg(long, conflicts_with_all = ["from", "log"])]
    bidir: bool,
    /// Have the agent at AGENT (ADDR, ADDR:PORT or [IPv6]:PORT; port 4646 by default)
    /// send these flows to DEST itself: a third-party measurement driven from here (plans
    /// across hosts use this). DEST must be within the agent's --allow.
    #[arg(long, value_name = "AGENT", conflicts_with = "log")]
    from: Option<String>,
    /// The key of the agent of --from, when it is not --key (ignored without --from).
    #[arg(long, env = "DUALPERF_AGENT_KEY", hide_env_values = true)]
    agent_key: Option<String>,
    /// Print one JSON object with sender- and receiver-side results per flow (iperf3's
    /// -J).
    #[arg(short = 'J', long)]
    json: bool,
    /// Print one table row per flow however many there are (by default more than 20
    /// flows are shown as their spread: median, 90th percentile and worst flow).
    #[arg(long)]
    per_flow: bool,
    /// Print the full result table: every column in fixed units (about 120 characters
    /// wide) instead of the default one that fits 100 columns.
    #[arg(long)]
    wide: bool,
    /// Say "dualperf send: started" on stderr once the receiver has accepted the flows
    /// and they begin (for `dualperf run`, which starts the measured flow only after
    /// background flows have begun).
    #[arg(long, hide = true)]
    announce_start: bool,
    /// Set the session up (connect, authenticate, register the flows, open their TCP
    /// connections), say "dualperf send: ready" on stderr, and start the flows only when
    /// a line arrives on stdin; its end halts them unsent (for `dualperf run`, which sets
    /// up every session of a run before any flow loads the path their control
    /// connections cross).
    #[arg(long, hide = true, conflicts_with_all = ["bidir", "stamp"])]
    wait_for_go: bool,
    /// iperf3's `--skip-rx-copy`, which its client passes to its server: here the
    /// receiver's own option (`recv --skip-rx-copy`), refused with that hint.
    #[arg(long, hide = true)]
    skip_rx_copy: bool,
    /// No UDP GSO: every datagram goes through the stack on its own. By default, to a
    /// receiver on loopback, runs of equal-sized datagrams that leave in one
    /// batch go as one GSO send (`UDP_SEGMENT`): each keeps its own probe, sequence
    /// number and send time (the batch's), and the kernel cuts them apart. Across a
    /// device dualperf never uses GSO (a capture or a userspace router there would see
    /// 64 KB packets). A kernel without UDP GSO falls back to single datagrams by itself.
    #[arg(long)]
    no_gso: bool,
    /// How long connecting to the receiver may take (its control connection and TCP
    /// data connections), and at least how long setting up the session may; raise it
    /// across a congested link, where lost SYNs wait out TCP's 1 s, 3 s, 7 s retries.
    #[arg(long, default_value = "5s", value_parser = crate::args::std_duration, value_name = "DURATION")]
    connect_timeout: StdDuration,
    /// Write the sender's per-packet records (send schedule, and echoes for --meter rtt)
    /// to this binary log as they are made; read it with `dualperf decode`. A writer
    /// thread takes them: no flow waits for the disk, and records it could not take are
    /// counted (`unlogged_records`). A name ending in `.zst` writes it zstd-compressed.
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
    /// Sender threads for paced flows. Default: one per 1,000,000 pkt/s of the flows' mean
    /// rate, at most one per CPU (a thread spins before each deadline: more threads than
    /// the load needs take CPUs from the receiver and the kernel). Each thread keeps all
    /// of its flows on one timer and sends every packet due across them in one sendmmsg;
    /// UDP flows of a thread that mark alike share a socket. A bulk flow (--bulk) always
    /// gets a thread of its own.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Print the throughput sent in each interval while the flows run, and report the
    /// receiver's series in these windows (like iperf3 -i): 1s, 500ms.
    #[arg(short, long, value_parser = crate::args::duration, value_name = "DURATION")]
    interval: Option<Duration>,
    /// Also report each flow's delay distribution (`delay_cdf_ns` in --json: the smallest
    /// delay, then its percentiles 1 to 100): the round trip with --meter rtt, else the
    /// receiver's one-way delay. `dualperf report` draws it as a CDF; plans ask for it.
    /// Also for the flows an agent sends (--reverse, --bidir, --from), and with --stamp
    /// (the round trip without the reflector's turnaround).
    #[arg(long)]
    cdf: bool,
    /// Measure against a STAMP Session-Reflector at DEST (RFC 8762/8972: `dualperf recv
    /// --stamp`, stamp-suite -i, a router…) instead of a dualperf receiver; port 862
    /// unless DEST or --port gives one. The one flow of the flow options is sent as STAMP
    /// test packets (its rate or gaps, its sizes by an Extra Padding TLV, its marking);
    /// reported: the round trip less the reflector's turnaround (primary unless --meter
    /// owd is given), the forward and reverse one-way delays (two clocks: their offset
    /// is estimated from the same timestamps), loss by direction with a stateful
    /// reflector.
    #[arg(long, conflicts_with_all = ["reverse", "bidir", "from", "flows", "ditg_script",
          "log", "interval", "tcp", "bulk", "calls", "parallel", "cport", "omit"])]
    stamp: bool,
    /// STAMP authenticated mode (RFC 8762 §4.2.2: HMAC-SHA-256 with --stamp-key).
    #[arg(long, requires = "stamp")]
    stamp_auth: bool,
    /// The HMAC key of --stamp-auth, in hex: at least 16 bytes (32 hex digits).
    #[arg(
        long,
        env = "DUALPERF_STAMP_KEY",
        hide_env_values = true,
        value_name = "HEX"
    )]
    stamp_key: Option<String>,
    /// The Session-Sender Identifier of the STAMP session (RFC 8972 §3), 1-65535.
    /// Default: random.
    #[arg(long, value_name = "N", requires = "stamp",
          value_parser = clap::value_parser!(u16).range(1..))]
    stamp_ssid: Option<u16>,
    /// Ask the reflector to mark its replies with the flow's --dscp (BE without one;
    /// Class of Service TLV, RFC 8972 §4.4), and report the DSCP and ECN it received.
    #[arg(long, requires = "stamp")]
    stamp_cos: bool,
    /// Timestamps in PTP format (IEEE 1588 truncated) instead of NTP (RFC 8762 §4.2.1).
    #[arg(long, requires = "stamp")]
    stamp_ptp: bool,
    /// How long to wait for the last STAMP replies after the last packet.
    #[arg(long, default_value = "2s", value_parser = crate::args::std_duration,
          value_name = "DURATION", requires = "stamp")]
    stamp_timeout: StdDuration,
}

/// The options of one flow, shared by the command line and flow files: clap's reading of
/// [`FlowOptions`], field by field.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FlowArgs {
    /// UDP datagrams (default; iperf3's -u).
    #[arg(short = 'u', long, conflicts_with = "tcp")]
    udp: bool,
    /// Length-prefixed messages on one TCP connection.
    #[arg(long)]
    tcp: bool,
    /// Send rate: packets per second (30000pps) or payload bits per second (10mbit, 64kbit;
    /// a bare K/M/G suffix means bits, as in iperf: 10M). Default 1000pps; with --bulk, a
    /// cap (TCP) or the target (UDP). iperf3's -b/--bitrate spelling works too.
    #[arg(short, long, visible_short_alias = 'b', visible_alias = "bitrate")]
    rate: Option<Rate>,
    /// Payload bytes per packet (UDP payload, or TCP message body; 64k, 1M). At least 16:
    /// the probe header. Default 512; with --bulk 128KiB on TCP (one message per write,
    /// like iperf3's -l), 1400 on UDP. iperf3's -l/--length spelling works too.
    #[arg(short, long, visible_short_alias = 'l', visible_alias = "length",
          value_parser = crate::args::byte_count, value_name = "BYTES")]
    size: Option<u64>,
    /// Bulk load, for throughput and background traffic, like iperf3: as fast as the
    /// transport takes it (TCP: as the window allows; UDP: as the socket takes it, with
    /// no congestion control, iperf3's -b 0), or at most --rate (TCP: paced by the
    /// kernel). See --parallel, --congestion, --window and --interval.
    #[arg(long, conflicts_with_all = ["voip", "app", "stream", "idt"])]
    bulk: bool,
    /// Run N identical copies of this flow at once, each on its own connection (iperf3 -P).
    #[arg(short = 'P', long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    parallel: u16,
    /// Run N copies of this flow as independent calls: each starts at a random phase
    /// within one period of the flow (drawn from --seed), and random models draw their
    /// own samples. `--voip g711.1 --calls 2000` emulates 2,000 calls. The report sums
    /// them and shows how they spread (median and worst flow); --json lists every flow.
    #[arg(long, value_name = "N", conflicts_with_all = ["parallel", "bulk"],
          value_parser = clap::value_parser!(u32).range(1..=i64::from(traffic::options::MAX_CALLS)))]
    calls: Option<u32>,
    /// TCP congestion control: cubic, bbr, reno… (see
    /// /proc/sys/net/ipv4/tcp_available_congestion_control). Default: the kernel's.
    #[arg(long, value_name = "NAME")]
    congestion: Option<String>,
    /// Socket buffer size (iperf3 -w): the sender's send buffer and, for TCP, the
    /// receiver's receive buffer, which bounds the window (256KiB, 4MiB; K and M are
    /// 1000s, as in --size). Default: the kernel's, with TCP's autotuning (UDP: 4 MiB).
    /// The send buffer granted is reported (`tcp.summary.send_buffer_bytes` in --json).
    #[arg(short = 'w', long, value_parser = crate::args::byte_count, value_name = "BYTES")]
    window: Option<u64>,
    /// Source port of the flow's data (iperf3's --cport): the TCP connection is bound to
    /// it before connecting, a UDP flow sends from a socket of its own bound to it. With
    /// --parallel N the copies take PORT to PORT+N-1, as iperf3's streams do.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    cport: Option<u16>,
    /// Leave the first DURATION of the flow out of the figures (iperf3's -O): slow start
    /// and filling buffers. The flow sends from the start; packets stamped within
    /// DURATION of its first packet are counted apart (`omitted_packets`,
    /// `omitted_bytes`), on both sides, and never as loss. A bare number is seconds.
    #[arg(short = 'O', long, value_parser = crate::args::duration, value_name = "DURATION")]
    omit: Option<Duration>,
    /// Send TCP bulk data with MSG_ZEROCOPY (iperf3's -Z): the kernel sends from our
    /// buffers, which are reused once it reports them done; the completions, and the sends
    /// it copied anyway (as on loopback), are reported (`zerocopy` in --json).
    #[arg(short = 'Z', long)]
    zerocopy: bool,
    /// UDP with Don't Fragment at every size, the cached path MTU ignored: a datagram
    /// larger than the route's MTU is not sent but counted (`too_big`), and one that
    /// crosses a smaller link is dropped there. The probes of DPLPMTUD (RFC 8899 §4.4).
    #[arg(long)]
    df: bool,
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
    /// Packetisation time of --stream g711 (10ms, 20ms, 30ms…). Bouras et al.'s 294-byte IPv4
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
    #[arg(long, value_name = "DIST", value_parser = dist, conflicts_with = "rate")]
    idt: Option<traffic::distribution::Dist>,
    /// Payload sizes in bytes from a distribution instead of --size (same spelling as
    /// --idt); truncated and clamped to what the probe and the protocol allow.
    #[arg(long, value_name = "DIST", value_parser = dist, conflicts_with = "size")]
    size_dist: Option<traffic::distribution::Dist>,
    /// Send only during ON periods of an on/off process whose ON and OFF durations, in
    /// milliseconds, come from these distributions (same spelling as --idt; D-ITG's -B):
    /// --on exp:1000 --off const:2000.
    #[arg(long, value_name = "DIST", value_parser = dist, requires = "off", conflicts_with = "vad")]
    on: Option<traffic::distribution::Dist>,
    /// OFF durations in milliseconds; see --on.
    #[arg(long, value_name = "DIST", value_parser = dist, requires = "on")]
    off: Option<traffic::distribution::Dist>,
    /// Seed of --idt, --size-dist and --app (default: random; the seed used is in the results).
    #[arg(long)]
    seed: Option<u64>,
    /// Header bytes D-ITG's VoIP model counts in the payload: rtp (12), crtp (2) or none.
    #[arg(long, default_value = "rtp", value_parser = traffic::options::parse_voip_header, requires = "voip")]
    voip_header: traffic::voip::VoipHeader,
    /// Voice activity, for --voip and the audio --stream presets. onoff: talk spurts and
    /// silences, exponential with ITU-T P.59's means (1.004 s and 1.587 s, 38.75 %
    /// activity), no packets in a silence; onoff:SPURT,PAUSE sets the means in seconds.
    /// ditg: D-ITG's -VAD, every packet's codec bytes times 0.65 (--voip only).
    #[arg(long, value_parser = traffic::options::parse_vad, value_name = "MODEL")]
    vad: Option<Vad>,
    /// Stop after this long (10s, 500ms, 2m). Default 10s when no stop is given. A sender
    /// that cannot keep up stops at this plus 1 % and reports the shortfall. A bare
    /// number is seconds, as iperf3's -t/--time (also accepted).
    #[arg(short = 't', long, visible_alias = "time", value_parser = crate::args::duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Stop after this many packets. Unlike iperf3's -n, which counts bytes: that is
    /// --bytes here.
    #[arg(short = 'n', long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many payload bytes (1M, 64k).
    #[arg(long, value_parser = crate::args::byte_count, value_name = "BYTES")]
    bytes: Option<u64>,
    /// owd: the receiver measures one-way delay. rtt: the receiver echoes each probe and
    /// the sender measures round-trip time.
    #[arg(short, long, default_value = "owd", value_parser = traffic::options::parse_meter)]
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
    #[arg(long, value_parser = traffic::options::parse_flow_label)]
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
    /// The options, as traffic's vocabulary holds them.
    fn options(&self) -> FlowOptions {
        FlowOptions {
            udp: self.udp,
            tcp: self.tcp,
            rate: self.rate,
            size: self.size,
            bulk: self.bulk,
            parallel: self.parallel,
            calls: self.calls,
            congestion: self.congestion.clone(),
            window: self.window,
            cport: self.cport,
            omit: self.omit,
            zerocopy: self.zerocopy,
            df: self.df,
            voip: self.voip,
            stream: self.stream,
            ptime: self.ptime,
            app: self.app,
            idt: self.idt.clone(),
            size_dist: self.size_dist.clone(),
            on: self.on.clone(),
            off: self.off.clone(),
            seed: self.seed,
            voip_header: self.voip_header,
            vad: self.vad,
            duration: self.duration,
            count: self.count,
            bytes: self.bytes,
            meter: self.meter,
            dscp: self.dscp,
            ecn: self.ecn,
            ttl: self.ttl,
            flow_label: self.flow_label,
            nodelay: self.nodelay,
            start: self.start,
            label: self.label.clone(),
        }
    }

    /// The flows these options describe: one, or `--parallel` copies.
    fn to_specs(&self, default_label: String) -> Result<Vec<FlowSpec>> {
        flow_specs(&self.options(), default_label)
    }
}

/// The flows `options` describe, with a random seed for a flow that gives none; notes
/// go to stderr, mistakes are usage errors.
fn flow_specs(options: &FlowOptions, default_label: String) -> Result<Vec<FlowSpec>> {
    let seed = u64::from_ne_bytes(crate::control::random_bytes());
    let specs = options
        .to_specs(default_label, seed)
        .map_err(|e: OptionError| anyhow::Error::new(crate::UsageError(e.to_string())))?;
    for note in specs.notes {
        crate::out::note!("dualperf send: note: {note}");
    }
    Ok(specs.flows)
}

/// A distribution in `kind:args` spelling; `file:PATH` reads the values from a file.
fn dist(s: &str) -> Result<traffic::distribution::Dist, traffic::options::ValueError> {
    traffic::options::parse_dist(s, |path| std::fs::read_to_string(path))
}

/// A validated send: destination, flows, options.
#[derive(Clone)]
pub(crate) struct SendConfig {
    pub(crate) dest: SocketAddr,
    pub(crate) flows: Vec<FlowSpec>,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) spin: Option<Duration>,
    pub(crate) batch_window: Duration,
    /// Sender threads for paced flows (`None`: one per core).
    pub(crate) threads: Option<usize>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) progress: bool,
    /// The receiver's series in these windows, and live per-interval throughput lines
    /// on stdout when `live` is set.
    pub(crate) interval: Option<Duration>,
    /// Report each flow's delay distribution (`--cdf`).
    pub(crate) cdf: bool,
    pub(crate) live: bool,
    /// Say on stderr when the flows begin.
    pub(crate) announce_start: bool,
    /// Bound on connecting to the receiver (see `--connect-timeout`).
    pub(crate) connect_timeout: StdDuration,
    /// Proves the receiver's key instead of `key` (an agent's session: the asker holds
    /// the key and answers the receiver's challenge).
    pub(crate) prover: Option<std::sync::Arc<crate::control::Prover>>,
    /// Caps an agent puts on a session it runs for someone else: the flows are halted
    /// (and the report says why) when they reach either.
    pub(crate) caps: Option<RunCaps>,
    /// UDP GSO to a loopback receiver (`--no-gso` turns it off).
    pub(crate) gso: bool,
    /// Holds the set-up session's flows until they may start (`--wait-for-go`, an
    /// agent's held request).
    pub(crate) hold: Option<std::sync::Arc<Hold>>,
    /// The reverse direction's mode and NAT keepalive (`--reverse-mode`).
    pub(crate) reverse: callback::ReverseOptions,
    /// An agent's session in callback mode: its TCP connections and UDP peers come
    /// from the asker (`callback::Dialer`).
    pub(crate) callback: Option<std::sync::Arc<callback::Dialer>>,
    /// `--reserve`: the flows' RSVP reservations.
    pub(crate) reserve: Option<reserve::Reserve>,
}

/// Holds a set-up session's flows until they may start: `true` starts them, `false`
/// halts them unsent (stopped, or whoever holds them went away). Called with the
/// session's stop flag.
pub(crate) type Hold = dyn Fn(&AtomicBool) -> bool + Send + Sync;

/// `--wait-for-go`: say "dualperf send: ready" on stderr, then start on a line on
/// stdin; the end of stdin (the runner gone) or Ctrl-C halts the flows unsent.
fn stdin_hold() -> std::sync::Arc<Hold> {
    std::sync::Arc::new(|stop: &AtomicBool| {
        eprintln!("dualperf send: ready");
        let (tx, rx) = std::sync::mpsc::channel();
        // Left blocked on stdin if Ctrl-C comes first: the process is ending.
        std::thread::spawn(move || {
            let mut line = String::new();
            let go = matches!(std::io::stdin().read_line(&mut line), Ok(n) if n > 0);
            let _ = tx.send(go);
        });
        wait_for_go(&rx, stop, None).unwrap_or(false)
    })
}

/// What a [`Hold`] waits for: the word on `go`, checking `stop` every 50 ms, until
/// `until` if given. `None` when stopped, past `until`, or the word's sender gone.
pub(crate) fn wait_for_go<T>(
    go: &std::sync::mpsc::Receiver<T>,
    stop: &AtomicBool,
    until: Option<std::time::Instant>,
) -> Option<T> {
    loop {
        match go.recv_timeout(StdDuration::from_millis(50)) {
            Ok(word) => return Some(word),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                if !stop.load(Ordering::SeqCst)
                    && until.is_none_or(|u| std::time::Instant::now() < u) => {}
            Err(_) => return None,
        }
    }
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
            threads: None,
            log: None,
            progress: false,
            interval: None,
            live: false,
            announce_start: false,
            connect_timeout: StdDuration::from_secs(5),
            prover: None,
            caps: None,
            gso: true,
            cdf: false,
            hold: None,
            reverse: callback::ReverseOptions::default(),
            callback: None,
            reserve: None,
        }
    }
}

pub(crate) fn run(mut args: SendArgs) -> Result<()> {
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    if args.skip_rx_copy {
        usage!("--skip-rx-copy is the receiver's option here: start it as `dualperf recv --skip-rx-copy` (each UDP datagram's head copied, for every sender it serves)");
    }
    if args.stamp {
        return run_stamp(&args, family);
    }
    let dest = resolve(&args.dest, args.port, family)?;
    if (args.flows.is_some() || args.ditg_script.is_some())
        && args.flow.options() != FlowOptions::default()
    {
        usage!("flow options on the command line do not apply to the flows of --flows or --ditg-script: write them on the file's lines");
    }
    let mut flows = match (&args.flows, &args.ditg_script) {
        (Some(path), _) => read_flow_file(path, |line| Ok(line.to_owned()))?,
        (None, Some(path)) => read_flow_file(path, |line| {
            let t = traffic::ditg::translate(line).map_err(|e| e.to_string())?;
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
    let reserve = args.reserve.config(dest, &mut flows)?;
    let agent = match &args.from {
        Some(a) => Some(remote::AgentRef {
            addr: resolve(a, DEFAULT_PORT, family)?,
            key: args
                .agent_key
                .clone()
                .or_else(|| args.key.clone())
                .map(String::into_bytes),
            connect_timeout: args.connect_timeout,
        }),
        None => None,
    };
    let remote_log = if args.reverse { args.log.take() } else { None };
    let config = SendConfig {
        key: args.key.clone().map(String::into_bytes),
        spin: args.spin,
        batch_window: args.batch_window,
        threads: args.threads.map(usize::from),
        log: args.log,
        progress: crate::out::progress_on_stderr() && !args.json && args.interval.is_none(),
        interval: check_interval(args.interval, &flows)?,
        // As iperf3 -J: JSON alone on stdout.
        live: !args.json,
        announce_start: args.announce_start,
        connect_timeout: args.connect_timeout,
        cdf: args.cdf,
        gso: !args.no_gso,
        hold: args.wait_for_go.then(stdin_hold),
        reverse: callback::ReverseOptions {
            mode: args.reverse_mode,
            keepalive: args.nat_keepalive,
            punch_delay: args.punch_delay,
        },
        reserve,
        ..SendConfig::new(dest, flows)
    };
    let stop = crate::interrupt::flag();
    if args.bidir {
        let report = remote::bidir(&config, &stop);
        if args.json {
            crate::out::print_json(&report)?;
        } else {
            crate::out::print(text::bidir_text(&report, args.per_flow, args.wide))?;
        }
        return match report.errors.is_empty() {
            true => Ok(()),
            false => Err(anyhow::anyhow!(report.errors.join("; "))),
        };
    }
    let (outcome, heading) = match &agent {
        Some(agent) => (
            remote::request_send(
                agent,
                remote::Target::Host(dest, args.key.clone()),
                &config,
                args.announce_start,
                &stop,
            ),
            Some(format!("the agent at {} sent these flows", agent.addr)),
        ),
        None if args.reverse => (
            remote::reverse(&config, remote_log, args.announce_start, &stop),
            Some(format!(
                "reverse: the agent at {dest} sent these flows to us"
            )),
        ),
        None => (run_session(&config, &stop), None),
    };
    // Whatever happened, print what was measured before reporting an error.
    print_outcome(outcome, args.json, args.per_flow, args.wide, heading)
}

/// The session a plain `send` command line runs, for a sender in this process (the
/// in-process executor of `compare`): its flows to DEST, as `run` would measure them,
/// without live output. Only what a plan's measured flow uses: `--stamp`, `--from`,
/// `--reverse`, `--bidir`, `--flows`, `--ditg-script` and `--log` are refused.
pub(crate) fn plain_session(args: SendArgs) -> Result<SendConfig> {
    if args.stamp || args.from.is_some() || args.reverse || args.bidir || args.reserve.given() {
        usage!(
            "an in-process sender runs a plain session: no --stamp, --from, --reverse, --bidir or --reserve"
        );
    }
    if args.flows.is_some() || args.ditg_script.is_some() || args.log.is_some() {
        usage!("an in-process sender takes its flows from the command line, and keeps no log");
    }
    let family = match (args.ipv4, args.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    let dest = resolve(&args.dest, args.port, family)?;
    let flows = args.flow.to_specs("flow 0".into())?;
    Ok(SendConfig {
        key: args.key.map(String::into_bytes),
        spin: args.spin,
        batch_window: args.batch_window,
        threads: args.threads.map(usize::from),
        interval: check_interval(args.interval, &flows)?,
        live: false,
        connect_timeout: args.connect_timeout,
        cdf: args.cdf,
        gso: !args.no_gso,
        ..SendConfig::new(dest, flows)
    })
}

/// Whether `send`'s flag `id` was given on the command line rather than left at its
/// default: clap's derive keeps no trace of it, so the command line is read again.
fn given(id: &str) -> bool {
    use clap::CommandFactory;
    let Ok(m) = crate::Cli::command().try_get_matches_from(std::env::args_os()) else {
        return false;
    };
    m.subcommand_matches("send")
        .is_some_and(|m| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
}

/// `send --stamp`: the one flow of the flow options to a STAMP Session-Reflector
/// (`crate::stamp::sender`), reported as `send` reports.
fn run_stamp(args: &SendArgs, family: Family) -> Result<()> {
    use crate::stamp::sender::{self, StampConfig};
    use wire::stamp::{Mode, TimestampFormat};

    let port = if given("port") {
        args.port
    } else {
        wire::stamp::DEFAULT_PORT
    };
    let dest = resolve(&args.dest, port, family)?;
    let mut flows = args.flow.to_specs("flow 0".into())?;
    let (Some(mut spec), true) = (flows.pop(), flows.is_empty()) else {
        usage!("--stamp sends one flow");
    };
    if spec.marking.flow_label.is_some() && dest.is_ipv4() {
        usage!("--flow-label applies to IPv6 only; {dest} is IPv4");
    }
    // The round trip is STAMP's own figure: primary unless --meter owd is asked for.
    spec.meter = if given("meter") {
        args.flow.meter
    } else {
        Meter::Rtt
    };
    let key = match (args.stamp_auth, &args.stamp_key) {
        (true, None) => usage!("--stamp-auth needs a key: --stamp-key HEX or DUALPERF_STAMP_KEY"),
        (false, Some(_)) if given("stamp_key") => {
            usage!("--stamp-key is the key of --stamp-auth: add --stamp-auth")
        }
        (true, Some(hex)) => Some(crate::args::hex_key(hex).map_err(crate::UsageError)?),
        (false, _) => None,
    };
    let ssid = args
        .stamp_ssid
        .unwrap_or_else(|| u16::from_ne_bytes(crate::control::random_bytes()).max(1));
    let config = StampConfig {
        dest,
        spec,
        mode: if args.stamp_auth {
            Mode::Authenticated
        } else {
            Mode::Unauthenticated
        },
        key,
        ssid,
        cos: args.stamp_cos,
        format: if args.stamp_ptp {
            TimestampFormat::Ptp
        } else {
            TimestampFormat::Ntp
        },
        timeout: args.stamp_timeout,
        spin: args.spin,
        progress: crate::out::progress_on_stderr() && !args.json,
        announce_start: args.announce_start,
        cdf: args.cdf,
    };
    let stop = crate::interrupt::flag();
    print_outcome(
        sender::run(&config, &stop),
        args.json,
        args.per_flow,
        args.wide,
        None,
    )
}

/// Print what a session measured (also when it failed after measuring: a
/// [`PartialReport`]), then return its error; `heading` goes above the text.
fn print_outcome(
    outcome: Result<results::send::SendReport>,
    json: bool,
    per_flow: bool,
    wide: bool,
    heading: Option<String>,
) -> Result<()> {
    let (report, error) = match outcome {
        Ok(r) => (r, None),
        Err(e) => match e.downcast::<PartialReport>() {
            Ok(partial) => (partial.report, Some(partial.error)),
            Err(e) => return Err(e),
        },
    };
    if json {
        crate::out::print_json(&report)?;
    } else {
        let mut out = heading.map(|h| format!("{h}\n")).unwrap_or_default();
        out.push_str(&text::send_text(&report, per_flow, wide));
        crate::out::print(out)?;
    }
    match error {
        Some(e) => Err(anyhow::anyhow!(e)),
        None => Ok(()),
    }
}

/// Check `--interval` against its bounds and, for flows with a duration, the number of
/// windows the receiver would report.
fn check_interval(interval: Option<Duration>, flows: &[FlowSpec]) -> Result<Option<Duration>> {
    interval
        .map(|w| traffic::interval::check(w, flows, MAX_SESSION_WINDOWS))
        .transpose()
        .map_err(|e| anyhow::Error::new(crate::UsageError(e.to_string())))
}

/// The flows of a file, one per line (`#` starts a comment); `translate` turns a line
/// into dualperf's flow options (the identity for flow files, D-ITG's for scripts).
fn read_flow_file(
    path: &Path,
    translate: impl Fn(&str) -> Result<String, String>,
) -> Result<Vec<FlowSpec>> {
    let text = crate::args::read_input(path, "the flow file")?;
    let mut flows = Vec::new();
    for (n, line) in traffic::options::flow_lines(&text) {
        let at = format!("{}:{}", path.display(), n);
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
            .to_specs(format!("line {n}"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn line(args: &[&str]) -> std::result::Result<FlowLine, clap::Error> {
        FlowLine::try_parse_from(args)
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        send: SendArgs,
    }

    #[test]
    fn iperf3s_short_flags_mean_what_they_mean_there() {
        let cli =
            Cli::try_parse_from("send ::1 -u -b 10M -l 512 -t 5 -J -P 2 -R --key k".split(' '))
                .unwrap();
        let (s, o) = (&cli.send, cli.send.flow.options());
        assert!(o.udp && !o.tcp);
        assert_eq!(o.rate, Some("10mbit".parse().unwrap()));
        assert_eq!(
            (o.size, o.duration),
            (Some(512), Some(Duration::from_secs(5)))
        );
        assert_eq!(o.parallel, 2);
        assert!(s.json && s.reverse);
        // The long spellings too; -n stays a packet count (iperf3's counts bytes).
        let cli =
            Cli::try_parse_from("send ::1 --bitrate 64kbit --length 200 --time 2 -n 7".split(' '))
                .unwrap();
        let o = cli.send.flow.options();
        assert_eq!(o.rate, Some("64kbit".parse().unwrap()));
        assert_eq!(
            (o.size, o.duration, o.count),
            (Some(200), Some(Duration::from_secs(2)), Some(7))
        );
        assert_eq!(o.bytes, None);
    }

    #[test]
    fn no_flags_read_as_traffics_default_options() {
        let none = line(&[]).unwrap();
        assert_eq!(none.flow.options(), FlowOptions::default());
    }

    #[test]
    fn every_flag_is_a_name_traffic_knows() {
        for arg in FlowLine::command().get_arguments() {
            let long = arg.get_long().unwrap_or_default();
            assert_eq!(
                traffic::options::canonical(long),
                Some(long),
                "--{long} is a flow option traffic does not set by name"
            );
        }
    }

    /// A value each flow option accepts, for the conflict checks below.
    fn value_of(name: &str) -> Option<&'static str> {
        match name {
            "udp" | "tcp" | "bulk" | "nodelay" | "zerocopy" | "df" => None,
            "voip" => Some("g711.1"),
            "calls" => Some("2"),
            "stream" => Some("g711"),
            "app" => Some("dns"),
            "idt" | "size-dist" | "on" | "off" => Some("const:10"),
            "ptime" => Some("20ms"),
            "vad" => Some("onoff"),
            "voip-header" => Some("rtp"),
            "rate" => Some("10pps"),
            "meter" => Some("owd"),
            "ecn" => Some("ect1"),
            "window" => Some("64KiB"),
            _ => Some("1"),
        }
    }

    #[test]
    fn flags_and_traffic_agree_on_conflicts_and_requirements() {
        let names: Vec<&str> = FlowLine::command()
            .get_arguments()
            .filter_map(|a| a.get_long())
            .map(|l| traffic::options::canonical(l).unwrap())
            .collect();
        // Every pair of options (with what each requires): clap refuses it exactly
        // when traffic's named options do.
        let with_required = |n: &'static str| -> Vec<&'static str> {
            let mut v = vec![n];
            for (a, b) in traffic::options::REQUIRES {
                if a == n && !v.contains(&b) {
                    v.push(b);
                }
            }
            v
        };
        for (i, a) in names.iter().enumerate() {
            for b in &names[i..] {
                let mut set = with_required(a);
                for n in with_required(b) {
                    if !set.contains(&n) {
                        set.push(n);
                    }
                }
                let mut args = Vec::new();
                let mut named = traffic::options::NamedOptions::new(|_| Ok("1".into()));
                for n in &set {
                    args.push(format!("--{n}"));
                    args.extend(value_of(n).map(str::to_owned));
                    named.set(n, value_of(n)).unwrap();
                }
                let clap_ok = FlowLine::try_parse_from(&args).is_ok();
                let traffic_ok = named.finish().is_ok();
                assert_eq!(clap_ok, traffic_ok, "{args:?}");
            }
        }
        // What a flag requires alone.
        for (a, b) in traffic::options::REQUIRES {
            let mut args = vec![format!("--{a}")];
            args.extend(value_of(a).map(str::to_owned));
            assert!(
                FlowLine::try_parse_from(&args).is_err(),
                "--{a} without --{b}"
            );
        }
    }
}
