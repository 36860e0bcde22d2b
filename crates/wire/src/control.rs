//! Control-channel messages: JSON bodies in [`crate::frame`] framing on a TCP connection
//! to the receiver's port.
//!
//! A connection's first message says what it is:
//! - [`Msg::Hello`] opens a control session:
//!   ```text
//!   sender                               receiver
//!   Hello{version}              ──▶
//!                               ◀──      Challenge{nonce, auth_required}
//!   Auth{mac}                   ──▶      (mac = HMAC-SHA256(key, CONTEXT ‖ nonce), hex)
//!                               ◀──      Welcome{} | Error{message}
//!   Register{flows}             ──▶
//!                               ◀──      Registered{flows: id + token}
//!        … data flows run …
//!   Finish{flows: sent counts}  ──▶
//!                               ◀──      Results{flows: receiver-side summaries, more}
//!                               ◀──      … further Results while `more` is true
//!   ```
//!   Between `Welcome` and `Register` the sender may send [`Msg::TimeRequest`]s (clock
//!   exchanges, RFC 5905 §8) and a [`Msg::HostQuery`].
//! - Instead of `Register`, a [`Msg::SendRequest`] asks an agent to send flows itself:
//!   ```text
//!   asker                                agent
//!   SendRequest{dest, flows}    ──▶
//!                               ◀──      SendAccepted{} | Error{message}
//!                               ◀──      AuthQuery{nonce}   (the destination's challenge)
//!   AuthAnswer{mac}             ──▶      (the asker holds the destination's key)
//!                               ◀──      Ready{}            (only if asked to `hold`)
//!   Go{}                        ──▶
//!                               ◀──      SendDone{report, error}
//!   ```
//!   Anything else the asker sends, or its closing, halts the agent's flows.
//!
//!   With `callback` (the reverse direction, the asker behind a NAT) the agent opens
//!   nothing toward the asker: for each TCP connection its session needs (control, then
//!   each TCP flow's data) it says `Dial{ticket}` on the request's connection, and the
//!   asker opens a connection to the agent's port that starts with `Callback{ticket}`.
//!   Each UDP flow goes to where its punches ([`crate::punch`]) come from.
//! - [`Msg::Attach`] turns the connection into the TCP data stream of a registered flow;
//!   the token proves it belongs to the session that registered it.
//!
//! Until `Welcome`, every body is at most [`MAX_MSG_LEN`] bytes (a stranger cannot make
//! the receiver buffer more); after it, at most [`MAX_SESSION_MSG_LEN`]. [`parse`] never
//! panics. [`stranger`] tells a peer that does not speak this protocol by its first bytes.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

mod reserve;
pub mod stranger;

pub use reserve::{Refusal, ReservationSeen, ReserveRequest, ReserveService};

/// Version of the control protocol.
pub const PROTOCOL_VERSION: u32 = 1;
/// Largest control message body accepted before the session is authenticated.
pub const MAX_MSG_LEN: usize = 64 * 1024;
/// Largest body once authenticated: registrations and results of thousands of flows.
pub const MAX_SESSION_MSG_LEN: usize = 16 << 20;
/// The [`Msg::Welcome`] feature of an agent that takes [`Msg::SendRequest`]s in callback
/// mode.
pub const FEATURE_CALLBACK: &str = "callback";
/// Domain-separation prefix of the handshake MAC.
pub const CONTEXT: &[u8] = b"dualperf control v1";

/// Transport of a flow.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// UDP datagrams, one probe each.
    #[default]
    Udp,
    /// Framed messages on a TCP connection.
    Tcp,
}

/// What the flow measures.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Meter {
    /// One-way delay: the receiver timestamps each probe.
    #[default]
    Owd,
    /// Round trip: the receiver echoes each probe back to its sender.
    Rtt,
}

/// A flow as the sender announces it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct FlowAnnounce {
    /// The sender's own index for this flow.
    pub index: u32,
    /// Transport.
    pub protocol: Protocol,
    /// Meter.
    pub meter: Meter,
    /// Payload bytes per packet (UDP payload, or TCP message body).
    pub size_bytes: u32,
    /// DS byte the sender sets, also used on echoes.
    pub tos: Option<u8>,
    /// TTL / hop limit the sender sets, also used on echoes.
    pub ttl: Option<u8>,
    /// IPv6 flow label the sender sets, also used on echoes.
    pub flow_label: Option<u32>,
    /// For UDP: the sender's source port, so echoes go to it and nowhere else.
    pub src_port: Option<u16>,
    /// A NAT on the way translates the sender's ports (the receiver's `Welcome.peer` was
    /// not the sender's own address): `src_port` is the port before translation, and the
    /// receiver takes the flow from the port its first datagram comes from instead, as
    /// NAT traversal does (RFC 4787 §4.1: the mapping is the NAT's). A receiver that
    /// predates it ignores the key and takes only `src_port`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub translated: bool,
    /// Free-form label (preset name, flow file line) for logs.
    #[serde(default)]
    pub label: String,
    /// For RTP flows: the media clock of the RTP timestamps, so the receiver can compute
    /// the RFC 3550 jitter against them as RTP tools do.
    #[serde(default)]
    pub rtp_clock_hz: Option<u32>,
    /// Report the receiver-side series in windows of this many ns (iperf3's intervals).
    #[serde(default)]
    pub interval_ns: Option<u64>,
    /// Report the delay's distribution too (`FlowResult::delay_cdf_ns`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cdf: bool,
    /// A bulk flow (`--bulk`): its measurement is throughput, so an unmarked TCP bulk
    /// flow is received without per-segment header fields and with the kernel's buffer
    /// autotuning (see the receiver's `data_stream`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bulk: bool,
    /// An unpaced bulk flow (`--bulk` without a rate): as fast as the transport takes
    /// it, so its receiver may wait for larger reads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unpaced: bool,
    /// The socket buffer the sender asked for (`-w/--window`, iperf3's `-w`): the
    /// receiver sets its receive buffer to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_bytes: Option<u32>,
    /// The warm-up left out of the figures (`-O/--omit`, iperf3's `-O`), ns: a probe
    /// whose transmit timestamp is less than this after that of the flow's first packet
    /// is counted apart ([`Omitted`]), not in the summary, its series or its loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit_ns: Option<u64>,
    /// `send --reserve`: answer this flow's RSVP Path with a Resv ([`ReserveRequest`]).
    /// Absent (as from a sender that predates it): the receiver signals nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<ReserveRequest>,
}

/// What the receiver left out of a flow's figures (`-O/--omit`).
///
/// The omitted span is by transmit timestamp: a probe stamped less than `omit_ns` after
/// the first packet the receiver got of the flow (the flow's first packet, unless that
/// was lost or overtaken) is omitted. The counted span starts at the first counted
/// probe to arrive, `counted_from_seq`: loss is counted from that sequence number on
/// (the sender's count of packets numbered from it on is the `expected`), and a probe
/// numbered below it arrives as omitted whatever its stamp (one reordered across the
/// boundary, behind a later one).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Omitted {
    /// Packets received within the omitted span.
    pub omitted_packets: u64,
    /// Their payload bytes.
    pub omitted_bytes: u64,
    /// The sequence number the counted span starts at; `None` while nothing counted
    /// came.
    pub counted_from_seq: Option<u64>,
}

/// The receiver's answer for one announced flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowGrant {
    /// The sender's index.
    pub index: u32,
    /// The flow id to put in every probe.
    pub id: u16,
    /// Token for attaching a TCP data connection.
    pub token: u64,
}

/// What the sender sent, reported at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowSent {
    /// Flow id.
    pub id: u16,
    /// Packets handed to the kernel.
    pub packets: u64,
    /// Payload bytes handed to the kernel.
    pub bytes: u64,
}

/// One flow's receiver-side result. The figures are JSON values by default (any
/// version's fields read); an end that knows their types reads and writes them typed
/// ([`ResultsPart`]), with the same bytes on the wire and no tree of values per flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "FlowResult")]
pub struct FlowResult<S = serde_json::Value, R = serde_json::Value, I = serde_json::Value> {
    /// Flow id.
    pub id: u16,
    /// The receiver's summary (a `meter::FlowSummary` as JSON).
    pub summary: S,
    /// Datagrams or messages for this flow that were malformed.
    #[serde(default)]
    pub malformed: u64,
    /// For RTP flows: the RFC 3550 jitter against the RTP timestamps (JSON). Absent
    /// reads as none, as for every `Option` here.
    pub rtp: Option<R>,
    /// The interval series asked for with `interval_ns` (`meter::Interval`s as JSON).
    pub intervals: Option<I>,
    /// Why the series asked for is missing (too many windows).
    #[serde(default)]
    pub intervals_error: Option<String>,
    /// Asked for with `cdf`: the smallest one-way delay, then its percentiles 1 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_cdf_ns: Option<Vec<i64>>,
    /// With `omit_ns`: what was left out of the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// With `reserve`: what the receiver saw of the flow's reservation (absent from a
    /// receiver that predates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<ReservationSeen>,
}

/// A control message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Msg {
    /// Opens a control session.
    Hello {
        /// [`PROTOCOL_VERSION`] of the sender.
        version: u32,
    },
    /// The receiver's challenge.
    Challenge {
        /// Random nonce, hex.
        nonce: String,
        /// Whether the receiver was started with `--key`.
        auth_required: bool,
    },
    /// The sender's proof of the key (empty without a key).
    Auth {
        /// HMAC-SHA256 over [`CONTEXT`] and the nonce, hex.
        mac: String,
    },
    /// The session is open.
    Welcome {
        /// The receiver's software version.
        receiver: String,
        /// What this end can do beyond the base protocol ([`FEATURE_CALLBACK`]: an agent
        /// that sends reverse flows over connections the asker opens). Absent when none,
        /// as from a peer that predates it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        features: Vec<String>,
        /// The asker's address and port as this end saw them: a controller that finds
        /// another address than its own sits behind a NAT. Absent from a peer that
        /// predates it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peer: Option<std::net::SocketAddr>,
    },
    /// Flows the sender is about to send.
    Register {
        /// The flows.
        flows: Vec<FlowAnnounce>,
    },
    /// Flow ids and tokens, in announcement order.
    Registered {
        /// The grants.
        flows: Vec<FlowGrant>,
    },
    /// First message of a TCP data connection.
    Attach {
        /// Flow id.
        flow: u16,
        /// Token from [`Msg::Registered`].
        token: u64,
    },
    /// The sender is done; counts per flow.
    Finish {
        /// What was sent.
        flows: Vec<FlowSent>,
    },
    /// Receiver-side results per flow, in one message or several ([`results_messages`]).
    Results {
        /// The results.
        flows: Vec<FlowResult>,
        /// More `Results` follow (the session's results did not fit one message). Absent
        /// when false, so results that fit one message read as they always did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        more: bool,
    },
    /// A clock exchange (RFC 5905 §8's on-wire method): the sender's wall clock when it
    /// sent this. Allowed after `Welcome`, before `Register`, any number of times.
    TimeRequest {
        /// Request sent, the asker's `CLOCK_REALTIME` ns (t1).
        t1_ns: u64,
    },
    /// The answer to [`Msg::TimeRequest`], stamped on the answering host's clock.
    TimeReply {
        /// t1, echoed.
        t1_ns: u64,
        /// Request received (t2).
        t2_ns: u64,
        /// Reply sent (t3).
        t3_ns: u64,
        /// The answering kernel's boot id: an asker with the same one reads the same
        /// clock, so the offset is exactly 0.
        #[serde(default)]
        boot_id: Option<String>,
        /// Resolution of the answering host's clock, ns.
        #[serde(default)]
        resolution_ns: u64,
    },
    /// Asks the host to describe itself (after `Welcome`, before `Register`).
    HostQuery {},
    /// The host's description (a `results::clock::HostDoc` as JSON).
    HostReply {
        /// The description.
        host: serde_json::Value,
    },
    /// Asks an agent to send flows itself (after `Welcome`, instead of `Register`): to
    /// `dest`, or with `dest` absent back to the asker's own address at `port` (its
    /// reverse direction).
    SendRequest {
        /// Where to send; absent: the asker's address, as the agent sees it.
        #[serde(default)]
        dest: Option<std::net::SocketAddr>,
        /// The receiver's port when `dest` is absent.
        #[serde(default)]
        port: u16,
        /// The flows (`traffic::FlowSpec`s as JSON).
        flows: serde_json::Value,
        /// The receiver's series in windows of this many ns.
        #[serde(default)]
        interval_ns: Option<u64>,
        /// Sender threads, as `send --threads`.
        #[serde(default)]
        threads: Option<u16>,
        /// How long the agent may take to reach the destination's receiver and set up
        /// its session (`send --connect-timeout`), ns.
        #[serde(default)]
        connect_timeout_ns: Option<u64>,
        /// Report each flow's delay distribution, as `send --cdf` (an agent that
        /// predates it ignores the key and reports none).
        #[serde(default)]
        cdf: bool,
        /// Set the session up (reach the destination, authenticate, register the flows,
        /// open their TCP connections), say [`Msg::Ready`], and start the flows only on
        /// [`Msg::Go`]: a plan sets up every session of a run before any flow loads the
        /// path its control connections cross. An agent that predates it ignores the
        /// key and starts at once (the asker then sees `SendDone` without `Ready`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        hold: bool,
        /// Callback mode (the reverse direction through a NAT in front of the asker):
        /// the agent opens no connection to the asker. It asks for each TCP connection
        /// with [`Msg::Dial`], and sends each UDP flow to where the flow's punches come
        /// from (`crate::punch`). Only an agent that advertises [`FEATURE_CALLBACK`]
        /// may be asked.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        callback: bool,
    },
    /// Agent → asker, on the request's connection (callback mode): open a TCP
    /// connection to the agent's port and send [`Msg::Callback`] with this ticket on it.
    Dial {
        /// A random, single-use ticket that expires.
        ticket: u64,
    },
    /// First message of a connection the asker opened for [`Msg::Dial`]: the agent
    /// hands it to the request's session as if it had connected itself. An unknown or
    /// expired ticket is refused.
    Callback {
        /// The ticket from [`Msg::Dial`].
        ticket: u64,
    },
    /// The agent accepted a [`Msg::SendRequest`] and is starting its flows.
    SendAccepted {},
    /// The held session of a [`Msg::SendRequest`] with `hold` is set up; its flows wait
    /// for [`Msg::Go`].
    Ready {},
    /// Start the held flows.
    Go {},
    /// The agent asks the asker to prove the destination receiver's key for it: the
    /// receiver's challenge. Keys never cross the wire; the asker answers with the MAC.
    AuthQuery {
        /// The destination receiver's nonce, hex.
        nonce: String,
    },
    /// The asker's answer to [`Msg::AuthQuery`]: HMAC-SHA256 over [`CONTEXT`] and the
    /// nonce under the destination's key (empty without a key).
    AuthAnswer {
        /// The MAC, hex.
        mac: String,
    },
    /// The agent's flows are done: its `send --json` report, and the error that cut
    /// them short, if one did.
    SendDone {
        /// The report (a `results::send::SendReport` as JSON); absent if nothing ran.
        #[serde(default)]
        report: Option<serde_json::Value>,
        /// What went wrong, if anything.
        #[serde(default)]
        error: Option<String>,
    },
    /// A refusal; the connection closes after it.
    Error {
        /// Human-readable reason.
        message: String,
    },
}

/// Why a control message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The body exceeds [`MAX_SESSION_MSG_LEN`].
    #[error("control message of {0} bytes exceeds the {MAX_SESSION_MSG_LEN}-byte limit")]
    TooLong(usize),
    /// The body is not a valid message.
    #[error("malformed control message: {0}")]
    Malformed(#[from] serde_json::Error),
}

/// The peer closed the control connection (end of stream where a message was due).
#[derive(Debug, thiserror::Error)]
#[error("the peer closed the control connection")]
pub struct PeerClosed;

/// Parse a control message body.
pub fn parse(body: &[u8]) -> Result<Msg, ControlError> {
    if body.len() > MAX_SESSION_MSG_LEN {
        return Err(ControlError::TooLong(body.len()));
    }
    Ok(serde_json::from_slice(body)?)
}

/// The tag of [`ResultsPart`]: `"type":"results"`, as [`Msg::Results`] has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ResultsTag {
    Results,
}

/// One [`Msg::Results`] message with its flows' figures typed by the caller: the same
/// bytes on the wire (the field order of the tagged enum), read and written without a
/// tree of JSON values per flow. A body that is not a results message does not parse.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultsPart<S = serde_json::Value, R = serde_json::Value, I = serde_json::Value> {
    #[serde(rename = "type")]
    tag: ResultsTag,
    /// The results.
    pub flows: Vec<FlowResult<S, R, I>>,
    /// More `Results` follow; absent when false, as in [`Msg::Results`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
}

impl<S, R, I> ResultsPart<S, R, I> {
    /// A results message of `flows`, with `more` to follow or not.
    pub fn new(flows: Vec<FlowResult<S, R, I>>, more: bool) -> Self {
        Self {
            tag: ResultsTag::Results,
            flows,
            more,
        }
    }
}

impl<S: Serialize, R: Serialize, I: Serialize> ResultsPart<S, R, I> {
    /// Encode as a framed body, ready to write to the stream (as [`encode`] does).
    pub fn encode(&self) -> Vec<u8> {
        framed(self)
    }
}

/// Parse a body as a results message with typed figures ([`ResultsPart`]); any other
/// message, or figures that are not of these types, is an error. Never panics.
pub fn parse_results<S, R, I>(body: &[u8]) -> Result<ResultsPart<S, R, I>, ControlError>
where
    S: serde::de::DeserializeOwned,
    R: serde::de::DeserializeOwned,
    I: serde::de::DeserializeOwned,
{
    if body.len() > MAX_SESSION_MSG_LEN {
        return Err(ControlError::TooLong(body.len()));
    }
    Ok(serde_json::from_slice(body)?)
}

/// What a read of a session's results gave.
#[derive(Debug)]
pub enum Results<S, R, I> {
    /// Every flow's result, and whether more were announced (false once gathered).
    Flows(Vec<FlowResult<S, R, I>>, bool),
    /// Another message where results were due (an error, say).
    Other(Msg),
}

/// Why a session's results did not read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The body is not a control message.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// A results message whose figures are not of the types this version reads.
    #[error("the receiver's results do not read as this version's")]
    NotThisVersion(#[source] ControlError),
    /// Another message after a part of the results.
    #[error("the receiver's results were cut short by {0:?}")]
    CutShort(Box<Msg>),
    /// A part without flows that announces more.
    #[error("the receiver sent an empty part of its results")]
    EmptyPart,
    /// More flows than flow ids exist.
    #[error("the receiver sent results of more flows than flow ids exist")]
    TooManyFlows,
}

/// A body read where results are due: a part of them with its figures typed
/// ([`parse_results`]), or any other message as [`Results::Other`]. A results message
/// whose figures are not of these types is an error. Never panics.
pub fn parse_results_or_other<S, R, I>(body: &[u8]) -> Result<Results<S, R, I>, ResultsError>
where
    S: serde::de::DeserializeOwned,
    R: serde::de::DeserializeOwned,
    I: serde::de::DeserializeOwned,
{
    match parse_results::<S, R, I>(body) {
        Ok(part) => Ok(Results::Flows(part.flows, part.more)),
        Err(typed) => match parse(body)? {
            Msg::Results { .. } => Err(ResultsError::NotThisVersion(typed)),
            other => Ok(Results::Other(other)),
        },
    }
}

/// A session's results gathered from its `Results` messages, up to the one without
/// `more`.
#[derive(Debug)]
pub struct ResultsGather<S, R, I> {
    flows: Vec<FlowResult<S, R, I>>,
}

impl<S, R, I> Default for ResultsGather<S, R, I> {
    fn default() -> Self {
        Self { flows: Vec::new() }
    }
}

impl<S, R, I> ResultsGather<S, R, I> {
    /// Nothing gathered yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no flow is gathered yet: no part has read (every part but a lone last one
    /// holds flows).
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// The next read ([`parse_results_or_other`]): `Some` once the results are whole
    /// (every flow's, `more` false) or when another message came first; `None` while more
    /// parts are due. Another message after a part is an error, as are an empty part
    /// announcing more and more flows than flow ids exist.
    pub fn handle_read(
        &mut self,
        read: Results<S, R, I>,
    ) -> Result<Option<Results<S, R, I>>, ResultsError> {
        let (flows, more) = match read {
            Results::Flows(flows, more) => (flows, more),
            other @ Results::Other(_) if self.flows.is_empty() => return Ok(Some(other)),
            Results::Other(other) => return Err(ResultsError::CutShort(Box::new(other))),
        };
        if more && flows.is_empty() {
            return Err(ResultsError::EmptyPart);
        }
        self.flows.extend(flows);
        if self.flows.len() > usize::from(u16::MAX) {
            return Err(ResultsError::TooManyFlows);
        }
        Ok((!more).then(|| Results::Flows(std::mem::take(&mut self.flows), false)))
    }
}

/// A session's results as `Results` messages whose bodies are at most `max_body` bytes
/// each (pass [`MAX_SESSION_MSG_LEN`]), in order, every one but the last with `more`:
/// results that fit one message go in one, as before `more` existed. A single flow's
/// result larger than `max_body` travels alone (the receiver bounds the interval series
/// that make results large). No results make one empty message.
pub fn results_messages<S: Serialize, R: Serialize, I: Serialize>(
    flows: Vec<FlowResult<S, R, I>>,
    max_body: usize,
) -> Vec<ResultsPart<S, R, I>> {
    /// `{"type":"results","flows":[` … `],"more":true}`, with room to spare.
    const ENVELOPE: usize = 64;
    let mut out = Vec::new();
    let mut part = Vec::new();
    let mut len = ENVELOPE;
    for flow in flows {
        // Serialising these plain structs cannot fail; a failure would only cost a split.
        let mut counter = ByteCount(0);
        let flow_len = serde_json::to_writer(&mut counter, &flow).map_or(0, |()| counter.0) + 1;
        if !part.is_empty() && len + flow_len > max_body {
            out.push(ResultsPart::new(std::mem::take(&mut part), true));
            len = ENVELOPE;
        }
        len += flow_len;
        part.push(flow);
    }
    out.push(ResultsPart::new(part, false));
    out
}

/// A writer that only counts what it is given (a result's encoded length without
/// encoding it into memory).
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Encode a message as a framed body, ready to write to the stream.
pub fn encode(msg: &Msg) -> Vec<u8> {
    framed(msg)
}

/// A message's JSON body in its frame.
fn framed<T: Serialize>(msg: &T) -> Vec<u8> {
    // Serialising these plain structs cannot fail.
    let body = serde_json::to_vec(msg).unwrap_or_default();
    crate::frame::encode(&body).unwrap_or_default()
}

/// The handshake MAC for `nonce` under `key`, hex-encoded.
pub fn auth_mac(key: &[u8], nonce: &str) -> String {
    let mut mac = mac_for(key);
    mac.update(nonce.as_bytes());
    hex(&mac.finalize().into_bytes())
}

/// Check a MAC in constant time.
pub fn verify_mac(key: &[u8], nonce: &str, mac_hex: &str) -> bool {
    let Some(tag) = unhex(mac_hex) else {
        return false;
    };
    let mut mac = mac_for(key);
    mac.update(nonce.as_bytes());
    mac.verify_slice(&tag).is_ok()
}

fn mac_for(key: &[u8]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(CONTEXT);
    mac
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::FrameDecoder;
    use serde_json::Value;

    #[test]
    fn messages_round_trip_through_framing() {
        let msgs = [
            Msg::Hello { version: 1 },
            Msg::Register {
                flows: vec![FlowAnnounce {
                    index: 0,
                    protocol: Protocol::Tcp,
                    meter: Meter::Rtt,
                    size_bytes: 64,
                    tos: Some(0xb8),
                    ttl: None,
                    flow_label: Some(0x12345),
                    src_port: None,
                    translated: true,
                    label: "x".into(),
                    rtp_clock_hz: None,
                    interval_ns: None,
                    cdf: false,
                    bulk: true,
                    unpaced: true,
                    window_bytes: Some(1 << 20),
                    omit_ns: Some(1_000_000_000),
                    reserve: Some(ReserveRequest {
                        service: ReserveService::Guaranteed,
                    }),
                }],
            },
            Msg::Attach { flow: 3, token: 99 },
        ];
        let mut d = FrameDecoder::new(MAX_MSG_LEN);
        for m in &msgs {
            d.handle_bytes(&encode(m));
        }
        for m in &msgs {
            let body = d.poll_frame().unwrap().unwrap();
            assert_eq!(&parse(body).unwrap(), m);
        }
    }

    #[test]
    fn reservation_fields_are_absent_unless_asked_and_old_peers_read() {
        // A sender that predates `reserve`, and a receiver that predates `reservation`.
        let old = br#"{"type":"register","flows":[{"index":0,"protocol":"udp","meter":"owd","size_bytes":64,"tos":null,"ttl":null,"flow_label":null,"src_port":5000}]}"#;
        let Msg::Register { flows } = parse(old).unwrap() else {
            panic!("not a register");
        };
        assert_eq!(flows[0].reserve, None);
        let body = &encode(&Msg::Register { flows })[4..];
        assert!(!std::str::from_utf8(body).unwrap().contains("reserve"));
        let old =
            br#"{"type":"results","flows":[{"id":1,"summary":{},"rtp":null,"intervals":null}]}"#;
        let Msg::Results { flows, .. } = parse(old).unwrap() else {
            panic!("not results");
        };
        assert_eq!(flows[0].reservation, None);
        // Asked for, and answered: both round trip.
        let new = br#"{"type":"results","flows":[{"id":1,"summary":{},"rtp":null,"intervals":null,"reservation":{"resv_sent":2,"confirmed":true,"refused":null}}]}"#;
        let Msg::Results { flows, .. } = parse(new).unwrap() else {
            panic!("not results");
        };
        let seen = flows[0].reservation.clone().unwrap();
        assert_eq!((seen.resv_sent, seen.confirmed), (2, true));
        let back = parse(&encode(&Msg::Results { flows, more: false })[4..]).unwrap();
        assert_eq!(back, parse(new).unwrap());
    }

    #[test]
    fn wire_format_is_tagged_json() {
        let body = &encode(&Msg::Attach { flow: 1, token: 2 })[4..];
        assert_eq!(body, br#"{"type":"attach","flow":1,"token":2}"#);
        assert!(parse(br#"{"type":"nope"}"#).is_err());
        assert!(parse(b"\xff\xfe").is_err());
        assert!(matches!(
            parse(&vec![b' '; MAX_SESSION_MSG_LEN + 1]),
            Err(ControlError::TooLong(_))
        ));
    }

    fn result(id: u16, pad: usize) -> FlowResult {
        FlowResult {
            id,
            summary: serde_json::json!({ "pad": "x".repeat(pad) }),
            malformed: 0,
            rtp: None,
            intervals: None,
            intervals_error: None,
            delay_cdf_ns: None,
            omitted: None,
            reservation: None,
        }
    }

    #[test]
    fn results_that_fit_one_message_read_as_before_more_existed() {
        let msgs = results_messages(vec![result(1, 10), result(2, 10)], MAX_SESSION_MSG_LEN);
        assert_eq!(msgs.len(), 1);
        let body = &msgs[0].encode()[4..];
        let text = std::str::from_utf8(body).unwrap();
        assert!(!text.contains("more"), "{text}");
        // An older receiver's message (no `more`) is the last part.
        let old = br#"{"type":"results","flows":[]}"#;
        assert_eq!(
            parse(old).unwrap(),
            Msg::Results {
                flows: Vec::new(),
                more: false
            }
        );
        assert_eq!(
            results_messages::<Value, Value, Value>(Vec::new(), MAX_SESSION_MSG_LEN),
            [ResultsPart::new(Vec::new(), false)]
        );
    }

    #[test]
    fn results_split_into_parts_under_the_limit_in_order() {
        let flows: Vec<FlowResult> = (0..100).map(|i| result(i, 900 + usize::from(i))).collect();
        let max = 10_000;
        let msgs = results_messages(flows.clone(), max);
        assert!(msgs.len() > 5, "{} parts", msgs.len());
        let mut again = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            let body = &m.encode()[4..];
            assert!(body.len() <= max, "part {i}: {} bytes", body.len());
            let Msg::Results { flows, more } = parse(body).unwrap() else {
                panic!("part {i} is not results");
            };
            assert_eq!(more, i + 1 < msgs.len(), "part {i}");
            assert!(!flows.is_empty());
            again.extend(flows);
        }
        assert_eq!(again, flows);
        // A result larger than the limit travels alone.
        let msgs = results_messages(vec![result(1, 10), result(2, 50_000), result(3, 10)], max);
        let sizes: Vec<usize> = msgs.iter().map(|m| m.flows.len()).collect();
        assert_eq!(sizes, [1, 1, 1]);
    }

    /// Figures of a known shape, as an end that knows their types holds them.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Typed {
        packets: u64,
        pad: String,
    }

    #[test]
    fn typed_results_are_the_bytes_of_the_message_and_read_back_either_way() {
        let typed: Vec<FlowResult<Typed, u32, Vec<u64>>> = (0..3)
            .map(|i| FlowResult {
                id: i,
                summary: Typed {
                    packets: u64::from(i) * 10,
                    pad: "x".repeat(usize::from(i)),
                },
                malformed: 1,
                rtp: (i == 1).then_some(7),
                intervals: (i == 2).then(|| vec![1, 2]),
                intervals_error: None,
                delay_cdf_ns: None,
                omitted: None,
                reservation: None,
            })
            .collect();
        let values: Vec<FlowResult> = typed
            .iter()
            .map(|f| FlowResult {
                id: f.id,
                summary: serde_json::to_value(&f.summary).unwrap(),
                malformed: f.malformed,
                rtp: f.rtp.map(|r| serde_json::to_value(r).unwrap()),
                intervals: f
                    .intervals
                    .as_ref()
                    .map(|i| serde_json::to_value(i).unwrap()),
                intervals_error: None,
                delay_cdf_ns: None,
                omitted: None,
                reservation: None,
            })
            .collect();
        for more in [false, true] {
            let part = ResultsPart::new(typed.clone(), more);
            let msg = Msg::Results {
                flows: values.clone(),
                more,
            };
            assert_eq!(part.encode(), encode(&msg), "more: {more}");
            let body = &part.encode()[4..];
            assert_eq!(parse(body).unwrap(), msg);
            assert_eq!(parse_results::<Typed, u32, Vec<u64>>(body).unwrap(), part);
        }
        // The tag is checked wherever it stands; other messages and other figures fail.
        let moved = br#"{"flows":[],"type":"results"}"#;
        assert!(parse_results::<Typed, u32, Vec<u64>>(moved)
            .unwrap()
            .flows
            .is_empty());
        let finish = &encode(&Msg::Finish { flows: Vec::new() })[4..];
        assert!(parse_results::<Typed, u32, Vec<u64>>(finish).is_err());
        let wrong = br#"{"type":"results","flows":[{"id":1,"summary":{"packets":"many"}}]}"#;
        assert!(parse(wrong).is_ok());
        assert!(parse_results::<Typed, u32, Vec<u64>>(wrong).is_err());
        assert!(matches!(
            parse_results::<Typed, u32, Vec<u64>>(&vec![b' '; MAX_SESSION_MSG_LEN + 1]),
            Err(ControlError::TooLong(_))
        ));
    }

    #[test]
    fn a_body_where_results_are_due_is_a_part_another_message_or_an_error() {
        type Read = Results<Typed, u32, Vec<u64>>;
        let read = |msg: &Msg| parse_results_or_other::<Typed, u32, Vec<u64>>(&encode(msg)[4..]);
        let part = Msg::Results {
            flows: vec![result(3, 0)],
            more: true,
        };
        // `result` pads a summary of no packets: not a `Typed`, so not this version's.
        let err = read(&part).unwrap_err();
        assert!(matches!(
            err,
            ResultsError::NotThisVersion(ControlError::Malformed(_))
        ));
        assert_eq!(
            err.to_string(),
            "the receiver's results do not read as this version's"
        );
        let typed = ResultsPart::<Typed, u32, Vec<u64>>::new(
            vec![FlowResult {
                id: 3,
                summary: Typed {
                    packets: 9,
                    pad: String::new(),
                },
                malformed: 0,
                rtp: None,
                intervals: None,
                intervals_error: None,
                delay_cdf_ns: None,
                omitted: None,
                reservation: None,
            }],
            true,
        );
        let Ok(Read::Flows(flows, true)) = parse_results_or_other(&typed.encode()[4..]) else {
            panic!("a typed part does not read as one");
        };
        assert_eq!(
            (flows.len(), flows[0].id, flows[0].summary.packets),
            (1, 3, 9)
        );
        let refused = Msg::Error {
            message: "busy".into(),
        };
        assert!(matches!(read(&refused), Ok(Read::Other(m)) if m == refused));
        let err = parse_results_or_other::<Typed, u32, Vec<u64>>(b"{").unwrap_err();
        assert!(matches!(
            err,
            ResultsError::Control(ControlError::Malformed(_))
        ));
        assert!(
            err.to_string().starts_with("malformed control message: "),
            "{err}"
        );
    }

    #[test]
    fn results_gather_their_parts_up_to_the_last() {
        let flows = |ids: std::ops::Range<u16>| ids.map(|id| result(id, 0)).collect::<Vec<_>>();
        let ids = |r: Option<Results<_, _, _>>| match r {
            Some(Results::Flows(flows, more)) => (
                flows.iter().map(|f: &FlowResult| f.id).collect::<Vec<_>>(),
                more,
            ),
            other => panic!("not whole results: {other:?}"),
        };
        let mut gather = ResultsGather::new();
        assert!(gather.is_empty());
        assert!(gather
            .handle_read(Results::Flows(flows(0..2), true))
            .unwrap()
            .is_none());
        assert!(!gather.is_empty());
        assert!(gather
            .handle_read(Results::Flows(flows(2..3), true))
            .unwrap()
            .is_none());
        let whole = gather
            .handle_read(Results::Flows(flows(3..4), false))
            .unwrap();
        assert_eq!(ids(whole), (vec![0, 1, 2, 3], false));
        // One message of no flows is whole results; another message first is given back.
        let mut gather = ResultsGather::new();
        let none = gather
            .handle_read(Results::Flows(Vec::new(), false))
            .unwrap();
        assert_eq!(ids(none), (vec![], false));
        let refused = Msg::Error {
            message: "busy".into(),
        };
        let mut gather = ResultsGather::<Value, Value, Value>::new();
        assert!(matches!(
            gather.handle_read(Results::Other(refused.clone())),
            Ok(Some(Results::Other(m))) if m == refused
        ));
    }

    #[test]
    fn results_cut_short_empty_or_too_many_are_errors() {
        let mut gather = ResultsGather::new();
        gather
            .handle_read(Results::Flows(vec![result(0, 0)], true))
            .unwrap();
        let err = gather
            .handle_read(Results::Other(Msg::HostQuery {}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the receiver's results were cut short by HostQuery"
        );
        let mut gather = ResultsGather::<Value, Value, Value>::new();
        let err = gather
            .handle_read(Results::Flows(Vec::new(), true))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the receiver sent an empty part of its results"
        );
        // 65,535 flows fit the ids; one more does not.
        let mut gather = ResultsGather::new();
        let many = (0..=u16::MAX).map(|id| result(id, 0)).collect::<Vec<_>>();
        gather
            .handle_read(Results::Flows(many[..65_000].to_vec(), true))
            .unwrap();
        let err = gather
            .handle_read(Results::Flows(many[65_000..].to_vec(), false))
            .unwrap_err();
        assert!(matches!(err, ResultsError::TooManyFlows));
        assert_eq!(
            err.to_string(),
            "the receiver sent results of more flows than flow ids exist"
        );
        let mut gather = ResultsGather::new();
        let whole = gather.handle_read(Results::Flows(many[1..].to_vec(), false));
        assert!(matches!(whole, Ok(Some(Results::Flows(f, false))) if f.len() == 65_535));
    }

    #[test]
    fn old_control_json_without_new_keys_reads() {
        assert_eq!(
            parse(br#"{"type":"welcome","receiver":"dualperf 0.1.0"}"#).unwrap(),
            Msg::Welcome {
                receiver: "dualperf 0.1.0".into(),
                features: Vec::new(),
                peer: None,
            }
        );
        let old = br#"{"type":"send_request","dest":null,"port":5201,"flows":[]}"#;
        let Msg::SendRequest {
            callback,
            hold,
            port,
            ..
        } = parse(old).unwrap()
        else {
            panic!("not a send request");
        };
        assert_eq!((callback, hold, port), (false, false, 5201));
    }

    #[test]
    fn new_keys_are_skipped_when_default() {
        let welcome = |features: Vec<String>, peer| Msg::Welcome {
            receiver: "dualperf 1".into(),
            features,
            peer,
        };
        let body = |m: &Msg| String::from_utf8(encode(m)[4..].to_vec()).unwrap();
        assert_eq!(
            body(&welcome(Vec::new(), None)),
            r#"{"type":"welcome","receiver":"dualperf 1"}"#
        );
        let full = welcome(
            vec![FEATURE_CALLBACK.into()],
            Some("198.18.2.1:40000".parse().unwrap()),
        );
        assert_eq!(
            body(&full),
            r#"{"type":"welcome","receiver":"dualperf 1","features":["callback"],"peer":"198.18.2.1:40000"}"#
        );
        assert_eq!(parse(&encode(&full)[4..]).unwrap(), full);
        let request = |callback| Msg::SendRequest {
            dest: None,
            port: 7,
            flows: serde_json::json!([]),
            interval_ns: None,
            threads: None,
            connect_timeout_ns: None,
            cdf: false,
            hold: false,
            callback,
        };
        assert!(!body(&request(false)).contains("callback"));
        assert!(body(&request(true)).ends_with(r#","callback":true}"#));
        assert_eq!(parse(&encode(&request(true))[4..]).unwrap(), request(true));
        for m in [Msg::Dial { ticket: u64::MAX }, Msg::Callback { ticket: 1 }] {
            assert_eq!(parse(&encode(&m)[4..]).unwrap(), m);
        }
        assert_eq!(
            body(&Msg::Dial { ticket: 5 }),
            r#"{"type":"dial","ticket":5}"#
        );
        assert_eq!(
            body(&Msg::Callback { ticket: 5 }),
            r#"{"type":"callback","ticket":5}"#
        );
    }

    #[test]
    fn mac_verifies_only_with_the_right_key() {
        // RFC 4231 test case 2 checks the primitive: HMAC-SHA256("Jefe", "what do ya want for nothing?").
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&m.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let mac = auth_mac(b"secret", "00ff");
        assert!(verify_mac(b"secret", "00ff", &mac));
        assert!(!verify_mac(b"wrong", "00ff", &mac));
        assert!(!verify_mac(b"secret", "00fe", &mac));
        assert!(!verify_mac(b"secret", "00ff", "zz"));
        assert!(!verify_mac(b"secret", "00ff", "é"));
    }
}
