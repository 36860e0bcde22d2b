//! The RSVP message Repr: which objects each message type carries (RFC 2205 §3.1.2 –
//! §3.1.8), parse and emit.

use std::net::IpAddr;

use super::object::{self, class, disposition, Disposition, Object, Opaque, Writer};
use super::objects::{
    addr_ctype, confirm, time_values, ErrorSpec, FilterSpec, Hop, Session, Style,
};
use super::{intserv, FlowSpec, MsgType, Packet, ParseError, TokenBucket, HEADER_LEN};

/// Path's sender descriptor: SENDER_TEMPLATE, SENDER_TSPEC (class 12, C-Type 2, service
/// header 1), [ADSPEC].
#[derive(Debug, Clone, PartialEq)]
pub struct SenderDescriptor {
    /// Who sends: SENDER_TEMPLATE.
    pub template: FilterSpec,
    /// What it sends: SENDER_TSPEC.
    pub tspec: TokenBucket,
    /// ADSPEC, kept as bytes.
    pub adspec: Option<Opaque>,
}

/// Resv flow descriptor. FF: one filter per descriptor; SE: one descriptor, several
/// filters; WF: one, none.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowDescriptor {
    /// The reservation asked for.
    pub flowspec: FlowSpec,
    /// The senders it is for.
    pub filters: Vec<FilterSpec>,
}

/// One RSVP message (the Repr). Which fields are required per type is RFC 2205 §3.1;
/// parse checks it, emit writes objects in the RFC's order; parse accepts any order.
///
/// Emit order: SESSION, RSVP_HOP, TIME_VALUES, ERROR_SPEC, RESV_CONFIRM, the `forward`
/// objects (where POLICY_DATA goes), STYLE, the flow descriptors, the sender descriptor.
/// An FF flow descriptor whose flowspec equals the previous one's is written without its
/// FLOWSPEC (RFC 2205 §3.1.4 `[<FLOWSPEC>] <FILTER_SPEC>`), and so is a ResvTear's
/// [`FlowSpec::placeholder`].
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The message type.
    pub kind: MsgType,
    /// Send_TTL of the common header: the IP TTL the message is sent with.
    pub send_ttl: u8,
    /// SESSION (every message).
    pub session: Session,
    /// RSVP_HOP: Path, Resv, PathTear, ResvTear, ResvErr.
    pub hop: Option<Hop>,
    /// TIME_VALUES (class 5): refresh period R in ms; Path, Resv.
    pub time_values_ms: Option<u32>,
    /// ERROR_SPEC: PathErr, ResvErr, ResvConf.
    pub error: Option<ErrorSpec>,
    /// STYLE: Resv, ResvErr, ResvTear, ResvConf.
    pub style: Option<Style>,
    /// RESV_CONFIRM (class 15): Resv (request), ResvConf.
    pub confirm: Option<IpAddr>,
    /// Sender descriptor: Path (required), PathTear, PathErr.
    pub sender: Option<SenderDescriptor>,
    /// Flow descriptors: Resv, ResvErr, ResvTear, ResvConf.
    pub flows: Vec<FlowDescriptor>,
    /// POLICY_DATA and unknown class `0b11xxxxxx` objects, forwarded unchanged.
    pub forward: Vec<Opaque>,
}

enum FlowItem {
    Spec(FlowSpec),
    Filter(FilterSpec),
}

#[derive(Default)]
struct Collect {
    session: Option<Session>,
    hop: Option<Hop>,
    time: Option<u32>,
    error: Option<ErrorSpec>,
    style: Option<Style>,
    confirm: Option<IpAddr>,
    template: Option<FilterSpec>,
    tspec: Option<TokenBucket>,
    adspec: Option<Opaque>,
    items: Vec<FlowItem>,
    forward: Vec<Opaque>,
}

fn once<T>(
    slot: &mut Option<T>,
    class: u8,
    value: Result<T, ParseError>,
) -> Result<(), ParseError> {
    if slot.is_some() {
        return Err(ParseError::Duplicate(class));
    }
    *slot = Some(value?);
    Ok(())
}

impl Collect {
    fn add(&mut self, o: Object<'_>) -> Result<(), ParseError> {
        let (c, t, b) = (o.class, o.ctype, o.body);
        match disposition(c) {
            Disposition::Skip | Disposition::Ignore => return Ok(()),
            Disposition::Reject => return Err(ParseError::UnknownClass { class: c, ctype: t }),
            Disposition::Forward => {
                self.forward.push(o.to_opaque());
                return Ok(());
            }
            Disposition::Known => {}
        }
        match c {
            class::SESSION => once(&mut self.session, c, Session::parse_body(t, b)),
            class::RSVP_HOP => once(&mut self.hop, c, Hop::parse_body(t, b)),
            class::TIME_VALUES => once(&mut self.time, c, time_values::parse_body(t, b)),
            class::ERROR_SPEC => once(&mut self.error, c, ErrorSpec::parse_body(t, b)),
            class::STYLE => once(&mut self.style, c, Style::parse_body(t, b)),
            class::RESV_CONFIRM => once(&mut self.confirm, c, confirm::parse_body(t, b)),
            class::SENDER_TEMPLATE => once(&mut self.template, c, FilterSpec::parse_body(c, t, b)),
            class::SENDER_TSPEC => once(&mut self.tspec, c, TokenBucket::parse_tspec_body(t, b)),
            class::ADSPEC => once(&mut self.adspec, c, Ok(o.to_opaque())),
            class::POLICY_DATA => {
                self.forward.push(o.to_opaque());
                Ok(())
            }
            class::FLOWSPEC => {
                self.items.push(FlowItem::Spec(FlowSpec::parse_body(t, b)?));
                Ok(())
            }
            class::FILTER_SPEC => {
                self.items
                    .push(FlowItem::Filter(FilterSpec::parse_body(c, t, b)?));
                Ok(())
            }
            _ => Err(ParseError::UnknownClass { class: c, ctype: t }),
        }
    }

    /// The flow descriptor list from the FLOWSPECs and FILTER_SPECs in their order.
    fn flows(&mut self, kind: MsgType) -> Result<Vec<FlowDescriptor>, ParseError> {
        let ff = self.style == Some(Style::Ff);
        let mut flows: Vec<FlowDescriptor> = Vec::new();
        for item in self.items.drain(..) {
            match item {
                FlowItem::Spec(flowspec) => flows.push(FlowDescriptor {
                    flowspec,
                    filters: vec![],
                }),
                FlowItem::Filter(f) => match flows.last_mut() {
                    None if kind == MsgType::ResvTear => flows.push(FlowDescriptor {
                        flowspec: FlowSpec::placeholder(),
                        filters: vec![f],
                    }),
                    None => return Err(ParseError::Missing(class::FLOWSPEC)),
                    Some(last) if ff && !last.filters.is_empty() => {
                        let flowspec = last.flowspec;
                        flows.push(FlowDescriptor {
                            flowspec,
                            filters: vec![f],
                        });
                    }
                    Some(last) => last.filters.push(f),
                },
            }
        }
        Ok(flows)
    }
}

impl Message {
    /// Parse a message: version 1, RSVP Length within `bytes` (octets after it are
    /// ignored), checksum (0 = none sent), every object's length, the objects the
    /// message type requires, and unknown classes by RFC 2205 §3.10.
    pub fn parse(bytes: &[u8]) -> Result<Message, ParseError> {
        let packet = Packet::new_checked(bytes)?;
        let kind = MsgType::from_u8(packet.msg_type())
            .ok_or(ParseError::UnknownMsgType(packet.msg_type()))?;
        let mut c = Collect::default();
        for o in object::objects(packet.objects()) {
            c.add(o?)?;
        }
        let flows = c.flows(kind)?;
        let sender = match (c.template, c.tspec) {
            (Some(template), Some(tspec)) => Some(SenderDescriptor {
                template,
                tspec,
                adspec: c.adspec,
            }),
            (None, None) => None,
            (Some(_), None) => return Err(ParseError::Missing(class::SENDER_TSPEC)),
            (None, Some(_)) => return Err(ParseError::Missing(class::SENDER_TEMPLATE)),
        };
        let m = Message {
            kind,
            send_ttl: packet.send_ttl(),
            session: c.session.ok_or(ParseError::Missing(class::SESSION))?,
            hop: c.hop,
            time_values_ms: c.time,
            error: c.error,
            style: c.style,
            confirm: c.confirm,
            sender,
            flows,
            forward: c.forward,
        };
        m.check_required()?;
        Ok(m)
    }

    /// RFC 2205 §3.1.2–§3.1.8: the objects each message type must carry.
    fn check_required(&self) -> Result<(), ParseError> {
        use MsgType::*;
        let need = |present: bool, class: u8| {
            if present {
                Ok(())
            } else {
                Err(ParseError::Missing(class))
            }
        };
        let k = self.kind;
        need(
            self.hop.is_some() || matches!(k, PathErr | ResvConf),
            class::RSVP_HOP,
        )?;
        need(
            self.time_values_ms.is_some() || !matches!(k, Path | Resv),
            class::TIME_VALUES,
        )?;
        need(
            self.error.is_some() || !matches!(k, PathErr | ResvErr | ResvConf),
            class::ERROR_SPEC,
        )?;
        need(
            self.style.is_some() || !matches!(k, Resv | ResvErr | ResvTear | ResvConf),
            class::STYLE,
        )?;
        need(self.confirm.is_some() || k != ResvConf, class::RESV_CONFIRM)?;
        need(self.sender.is_some() || k != Path, class::SENDER_TEMPLATE)?;
        need(
            !self.flows.is_empty() || !matches!(k, Resv | ResvConf),
            class::FLOWSPEC,
        )?;
        Ok(())
    }

    /// Whether flow descriptor `i` is written without its FLOWSPEC.
    fn omit_flowspec(&self, i: usize) -> bool {
        let fd = &self.flows[i];
        if self.kind == MsgType::ResvTear
            && fd.flowspec == FlowSpec::placeholder()
            && !fd.filters.is_empty()
        {
            return true;
        }
        self.style == Some(Style::Ff)
            && i > 0
            && !fd.filters.is_empty()
            && !self.flows[i - 1].filters.is_empty()
            && self.flows[i - 1].flowspec == fd.flowspec
    }

    /// The length of the emitted message.
    pub fn buffer_len(&self) -> usize {
        const H: usize = object::OBJECT_HEADER_LEN;
        let mut n = HEADER_LEN + H + self.session.body_len();
        n += self.hop.map_or(0, |h| H + h.body_len());
        n += self.time_values_ms.map_or(0, |_| H + time_values::BODY_LEN);
        n += self.error.map_or(0, |e| H + e.body_len());
        n += self.confirm.map_or(0, |a| H + confirm::body_len(a));
        n += self.forward.iter().map(Opaque::buffer_len).sum::<usize>();
        n += self.style.map_or(0, |_| H + Style::BODY_LEN);
        for (i, fd) in self.flows.iter().enumerate() {
            if !self.omit_flowspec(i) {
                n += H + fd.flowspec.body_len();
            }
            n += fd.filters.iter().map(|f| H + f.body_len()).sum::<usize>();
        }
        if let Some(s) = &self.sender {
            n += H + s.template.body_len() + H + TokenBucket::TSPEC_BODY_LEN;
            n += s.adspec.as_ref().map_or(0, Opaque::buffer_len);
        }
        n
    }

    /// Write the message, checksum included, into the first [`Message::buffer_len`]
    /// octets of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`Message::buffer_len`] or that is over 65,535.
    pub fn emit(&self, buf: &mut [u8]) {
        let len = self.buffer_len();
        let len16 = u16::try_from(len).expect("RSVP message longer than 65535 octets");
        let buf = &mut buf[..len];
        let mut w = Writer::new(&mut buf[HEADER_LEN..]);
        let s = &self.session;
        s.emit_body(w.object(class::SESSION, s.ctype(), s.body_len()));
        if let Some(h) = &self.hop {
            h.emit_body(w.object(class::RSVP_HOP, h.ctype(), h.body_len()));
        }
        if let Some(r) = self.time_values_ms {
            w.object(class::TIME_VALUES, time_values::CTYPE, 4)
                .copy_from_slice(&r.to_be_bytes());
        }
        if let Some(e) = &self.error {
            e.emit_body(w.object(class::ERROR_SPEC, e.ctype(), e.body_len()));
        }
        if let Some(a) = self.confirm {
            confirm::emit_body(
                a,
                w.object(class::RESV_CONFIRM, addr_ctype(a), confirm::body_len(a)),
            );
        }
        for o in &self.forward {
            w.opaque(o);
        }
        if let Some(st) = &self.style {
            st.emit_body(w.object(class::STYLE, Style::CTYPE, Style::BODY_LEN));
        }
        for (i, fd) in self.flows.iter().enumerate() {
            if !self.omit_flowspec(i) {
                let f = &fd.flowspec;
                f.emit_body(w.object(class::FLOWSPEC, intserv::CTYPE, f.body_len()));
            }
            for f in &fd.filters {
                f.emit_body(w.object(class::FILTER_SPEC, f.ctype(), f.body_len()));
            }
        }
        if let Some(sd) = &self.sender {
            let t = &sd.template;
            t.emit_body(w.object(class::SENDER_TEMPLATE, t.ctype(), t.body_len()));
            let body = w.object(
                class::SENDER_TSPEC,
                intserv::CTYPE,
                TokenBucket::TSPEC_BODY_LEN,
            );
            sd.tspec.emit_tspec_body(body);
            if let Some(a) = &sd.adspec {
                w.opaque(a);
            }
        }
        debug_assert_eq!(w.len() + HEADER_LEN, len);
        let mut p = Packet::new_unchecked(buf);
        p.set_header(self.kind, self.send_ttl, len16);
        p.fill_checksum();
    }

    /// The emitted message in a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.buffer_len()];
        self.emit(&mut v);
        v
    }
}
