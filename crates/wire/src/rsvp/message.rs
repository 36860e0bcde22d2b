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
/// [`FlowSpec::placeholder`] in its first flow descriptor (where parse puts it).
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
            && i == 0
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

#[cfg(test)]
mod tests {
    use super::super::samples::*;
    use super::super::{code, Service};
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// A raw message from (class, C-Type, body) objects, with length and checksum.
    fn build(kind: u8, objects: &[(u8, u8, Vec<u8>)]) -> Vec<u8> {
        let mut v = vec![0x10, kind, 0, 0, 64, 0, 0, 0];
        for (c, t, body) in objects {
            v.extend_from_slice(&((body.len() + 4) as u16).to_be_bytes());
            v.extend_from_slice(&[*c, *t]);
            v.extend_from_slice(body);
        }
        let len = v.len() as u16;
        v[6..8].copy_from_slice(&len.to_be_bytes());
        Packet::new_unchecked(&mut v[..]).fill_checksum();
        v
    }

    /// The objects of a valid message, to rebuild it with changes.
    fn objects_of(bytes: &[u8]) -> Vec<(u8, u8, Vec<u8>)> {
        object::objects(&bytes[HEADER_LEN..])
            .map(|o| {
                let o = o.unwrap();
                (o.class, o.ctype, o.body.to_vec())
            })
            .collect()
    }

    const TB: [u8; 20] = [
        0x47, 0xf4, 0x24, 0, 0x44, 0xbb, 0x80, 0, 0x7f, 0x80, 0, 0, 0, 0, 0, 64, 0, 0, 5, 0xdc,
    ];

    #[test]
    fn path_golden_bytes() {
        #[rustfmt::skip]
        let mut want = vec![
            0x10, 1, 0x57, 0x58, 64, 0, 0, 88,                  // v1, Path, checksum, TTL, length
            0, 12, 1, 1, 198, 18, 4, 2, 17, 0, 0x13, 0x89,      // SESSION: dst, UDP, flags, 5001
            0, 12, 3, 1, 198, 18, 1, 2, 0, 0, 0, 1,             // RSVP_HOP: PHOP, LIH 1
            0, 8, 5, 1, 0, 0, 0x75, 0x30,                       // TIME_VALUES: 30000 ms
            0, 12, 11, 1, 198, 18, 1, 2, 0, 0, 0x0f, 0xa0,      // SENDER_TEMPLATE: src, 4000
            0, 36, 12, 2, 0, 0, 0, 7, 1, 0, 0, 6, 127, 0, 0, 5, // SENDER_TSPEC headers
        ];
        want.extend_from_slice(&TB);
        let m = path(v4_filter(), RX4.into(), S4.into());
        assert_eq!(m.to_bytes(), want);
        assert_eq!(Message::parse(&want), Ok(m));
    }

    #[test]
    fn resv_golden_bytes() {
        #[rustfmt::skip]
        let mut want = vec![
            0x10, 2, 0x76, 0x16, 64, 0, 0, 104,
            0, 12, 1, 1, 198, 18, 4, 2, 17, 0, 0x13, 0x89,      // SESSION
            0, 12, 3, 1, 198, 18, 1, 1, 0, 0, 0, 2,             // RSVP_HOP: NHOP r1, LIH 2
            0, 8, 5, 1, 0, 0, 0x75, 0x30,                       // TIME_VALUES
            0, 8, 15, 1, 198, 18, 4, 2,                         // RESV_CONFIRM: receiver
            0, 8, 8, 1, 0, 0, 0, 0x0a,                          // STYLE: FF
            0, 36, 9, 2, 0, 0, 0, 7, 5, 0, 0, 6, 127, 0, 0, 5,  // FLOWSPEC: Controlled-Load
        ];
        want.extend_from_slice(&TB);
        want.extend_from_slice(&[0, 12, 10, 1, 198, 18, 1, 2, 0, 0, 0x0f, 0xa0]); // FILTER_SPEC
        let m = samples()
            .into_iter()
            .find(|(n, _)| *n == "resv-v4-ff-cl")
            .unwrap()
            .1;
        assert_eq!(m.to_bytes(), want);
        assert_eq!(Message::parse(&want), Ok(m));
    }

    #[test]
    fn every_object_ctype_round_trips() {
        let adspec = Opaque {
            class: class::ADSPEC,
            ctype: 2,
            body: vec![0, 0, 0, 1, 1, 0, 0, 0],
        };
        let policy = Opaque {
            class: class::POLICY_DATA,
            ctype: 1,
            body: vec![1, 2, 3, 4],
        };
        let unknown = Opaque {
            class: 0xc5,
            ctype: 3,
            body: vec![],
        };
        for template in [
            v4_filter(),
            v6_filter(),
            label_filter(0),
            label_filter(0xf_ffff),
        ] {
            let dst: IpAddr = match template {
                FilterSpec::V4 { .. } => RX4.into(),
                _ => RX6.into(),
            };
            let mut m = path(template, dst, template.src());
            m.sender.as_mut().unwrap().adspec = Some(adspec.clone());
            m.forward = vec![policy.clone(), unknown.clone()];
            assert_eq!(Message::parse(&m.to_bytes()), Ok(m.clone()));
            for flowspec in [cl(1.0), gs(1e6, 2e6, 0), gs(0.0, f32::INFINITY, u32::MAX)] {
                for style in [Style::Ff, Style::Se, Style::Wf] {
                    let filters = if style == Style::Wf {
                        vec![]
                    } else {
                        vec![template]
                    };
                    let mut r = resv(style, vec![FlowDescriptor { flowspec, filters }], dst, dst);
                    r.confirm = Some(dst);
                    assert_eq!(Message::parse(&r.to_bytes()), Ok(r));
                }
            }
        }
    }

    #[test]
    fn every_sample_type_round_trips() {
        for (name, m) in samples() {
            let b = m.to_bytes();
            assert_eq!(Message::parse(&b).as_ref(), Ok(&m), "{name}");
            // octets after the RSVP Length are ignored
            let mut longer = b.clone();
            longer.extend_from_slice(&[0xee; 5]);
            assert_eq!(Message::parse(&longer).as_ref(), Ok(&m), "{name}");
        }
    }

    #[test]
    fn checksum_checked_and_zero_means_none() {
        for (name, m) in samples() {
            let b = m.to_bytes();
            assert_eq!(crate::checksum::internet(&b), 0, "{name}");
            for i in [2, 5, 9, b.len() - 1] {
                let mut bad = b.clone();
                bad[i] ^= 0x01;
                assert_eq!(
                    Message::parse(&bad),
                    Err(ParseError::BadChecksum),
                    "{name} octet {i}"
                );
            }
            let mut none = b.clone();
            none[2..4].fill(0);
            assert_eq!(Message::parse(&none).as_ref(), Ok(&m), "{name}");
        }
    }

    #[test]
    fn every_truncation_is_refused() {
        for (name, m) in samples() {
            let b = m.to_bytes();
            let mut boundaries = vec![HEADER_LEN];
            for o in objects_of(&b) {
                boundaries.push(boundaries.last().unwrap() + 4 + o.2.len());
            }
            for n in 0..b.len() {
                assert!(Message::parse(&b[..n]).is_err(), "{name}: prefix {n}");
                // the same cut with a length field that agrees and no checksum: refused
                // inside an object, and no panic at a boundary (the rest may be whole)
                if n >= HEADER_LEN && n % 4 == 0 {
                    let mut cut = b[..n].to_vec();
                    cut[6..8].copy_from_slice(&(n as u16).to_be_bytes());
                    cut[2..4].fill(0);
                    let got = Message::parse(&cut);
                    assert!(
                        boundaries.contains(&n) || got.is_err(),
                        "{name}: cut at {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn bad_header_fields_refused() {
        let b = samples()[0].1.to_bytes();
        let mut v = b.clone();
        v[1] = 8;
        Packet::new_unchecked(&mut v[..]).fill_checksum();
        assert_eq!(Message::parse(&v), Err(ParseError::UnknownMsgType(8)));
        let mut v = b.clone();
        v[0] = 0x20;
        assert_eq!(Message::parse(&v), Err(ParseError::BadVersion(2)));
        // an object length of 6 inside an otherwise sound message
        let mut o = objects_of(&b);
        o[2].2.extend_from_slice(&[0, 0, 0, 0]);
        let mut v = build(1, &o);
        v[HEADER_LEN + 24 + 1] = 6;
        v[2..4].fill(0);
        assert_eq!(
            Message::parse(&v),
            Err(ParseError::BadObjectLength { class: 5, len: 6 })
        );
        let mut v = build(1, &o);
        v[HEADER_LEN + 24 + 1] = 2;
        v[2..4].fill(0);
        assert_eq!(
            Message::parse(&v),
            Err(ParseError::BadObjectLength { class: 5, len: 2 })
        );
    }

    #[test]
    fn unknown_classes_by_top_bits() {
        let m = samples()[0].1.clone();
        let base = objects_of(&m.to_bytes());
        let with = |class: u8| {
            let mut o = base.clone();
            o.insert(2, (class, 7, vec![1, 2, 3, 4]));
            build(1, &o)
        };
        // 0b0xxxxxxx: refused, answered with code 13 naming class and C-Type
        for class in [2u8, 16, 0x42, 0x7f] {
            let e = Message::parse(&with(class)).unwrap_err();
            assert_eq!(e, ParseError::UnknownClass { class, ctype: 7 });
            assert_eq!(
                e.error_code(),
                Some((code::UNKNOWN_CLASS, u16::from(class) << 8 | 7))
            );
        }
        // 0b10xxxxxx: ignored, not forwarded
        for class in [0x80u8, 0x9a, 0xbf] {
            assert_eq!(Message::parse(&with(class)).as_ref(), Ok(&m));
        }
        // 0b11xxxxxx: kept and re-emitted unchanged
        for class in [0xc0u8, 0xe3, 0xff] {
            let got = Message::parse(&with(class)).unwrap();
            let kept = Opaque {
                class,
                ctype: 7,
                body: vec![1, 2, 3, 4],
            };
            assert_eq!(got.forward, vec![kept.clone()]);
            assert_eq!(
                Message {
                    forward: vec![],
                    ..got.clone()
                },
                m
            );
            let again = got.to_bytes();
            assert_eq!(
                objects_of(&again).iter().filter(|o| o.0 == class).count(),
                1
            );
            assert!(again.windows(8).any(|w| w == [0, 8, class, 7, 1, 2, 3, 4]));
            assert_eq!(Message::parse(&again), Ok(got));
        }
        // skipped known classes: NULL, INTEGRITY, SCOPE
        for class in [0u8, 4, 7] {
            assert_eq!(
                Message::parse(&with(class)).as_ref(),
                Ok(&m),
                "class {class}"
            );
        }
        // a known class with an unknown C-Type: code 14
        let mut o = base.clone();
        o[0].1 = 9;
        let e = Message::parse(&build(1, &o)).unwrap_err();
        assert_eq!(e, ParseError::UnknownCType { class: 1, ctype: 9 });
        assert_eq!(e.error_code(), Some((code::UNKNOWN_CTYPE, 0x0109)));
    }

    #[test]
    fn required_objects_checked() {
        use class::*;
        let need: &[(&str, &[u8])] = &[
            (
                "path-v4",
                &[
                    SESSION,
                    RSVP_HOP,
                    TIME_VALUES,
                    SENDER_TEMPLATE,
                    SENDER_TSPEC,
                ],
            ),
            (
                "resv-v4-ff-cl",
                &[SESSION, RSVP_HOP, TIME_VALUES, STYLE, FLOWSPEC],
            ),
            (
                "patherr-v4",
                &[SESSION, ERROR_SPEC, SENDER_TEMPLATE, SENDER_TSPEC],
            ),
            (
                "resverr-v6",
                &[SESSION, RSVP_HOP, ERROR_SPEC, STYLE, FLOWSPEC],
            ),
            (
                "pathtear-v6-label",
                &[SESSION, RSVP_HOP, SENDER_TEMPLATE, SENDER_TSPEC],
            ),
            ("resvtear-v4", &[SESSION, RSVP_HOP, STYLE]),
            (
                "resvconf-v6",
                &[SESSION, ERROR_SPEC, RESV_CONFIRM, STYLE, FLOWSPEC],
            ),
        ];
        let all = samples();
        for (name, classes) in need {
            let m = &all.iter().find(|(n, _)| n == name).unwrap().1;
            let objects = objects_of(&m.to_bytes());
            for &c in *classes {
                let without: Vec<_> = objects.iter().filter(|o| o.0 != c).cloned().collect();
                let got = Message::parse(&build(m.kind as u8, &without));
                // a sender descriptor is optional outside Path; a FLOWSPEC missing before
                // a FILTER_SPEC is missing all the same (except in ResvTear)
                assert_eq!(got, Err(ParseError::Missing(c)), "{name} without {c}");
                if matches!(
                    (m.kind, c),
                    (MsgType::PathErr | MsgType::PathTear, SENDER_TSPEC)
                ) {
                    let neither: Vec<_> = without
                        .iter()
                        .filter(|o| o.0 != SENDER_TEMPLATE)
                        .cloned()
                        .collect();
                    let got = Message::parse(&build(m.kind as u8, &neither));
                    assert_eq!(
                        got.map(|m| m.sender),
                        Ok(None),
                        "{name}: sender is optional"
                    );
                }
            }
        }
    }

    #[test]
    fn duplicates_refused() {
        let b = samples()[0].1.to_bytes();
        for i in 0..5 {
            let mut o = objects_of(&b);
            let dup = o[i].clone();
            o.push(dup.clone());
            assert_eq!(
                Message::parse(&build(1, &o)),
                Err(ParseError::Duplicate(dup.0))
            );
        }
    }

    #[test]
    fn objects_accepted_in_any_order() {
        for (name, m) in samples() {
            let mut o = objects_of(&m.to_bytes());
            // reverse everything but the flow descriptor list, whose order means something
            let (mut flow, mut rest): (Vec<_>, Vec<_>) = o
                .drain(..)
                .partition(|x| x.0 == class::FLOWSPEC || x.0 == class::FILTER_SPEC);
            rest.reverse();
            rest.append(&mut flow);
            assert_eq!(
                Message::parse(&build(m.kind as u8, &rest)).as_ref(),
                Ok(&m),
                "{name}"
            );
        }
    }

    #[test]
    fn ff_descriptors_share_a_flowspec_on_the_wire() {
        let f1 = label_filter(1);
        let f2 = label_filter(2);
        let fs = cl(1000.0);
        let m = resv(
            Style::Ff,
            vec![
                FlowDescriptor {
                    flowspec: fs,
                    filters: vec![f1],
                },
                FlowDescriptor {
                    flowspec: fs,
                    filters: vec![f2],
                },
            ],
            RX6.into(),
            R1_6.into(),
        );
        let b = m.to_bytes();
        let classes: Vec<u8> = objects_of(&b).iter().map(|o| o.0).collect();
        assert_eq!(classes, vec![1, 3, 5, 8, 9, 10, 10]);
        assert_eq!(Message::parse(&b), Ok(m.clone()));
        // SE: the same objects are one descriptor with two filters
        let mut o = objects_of(&b);
        o[3].2 = vec![0, 0, 0, 0x12];
        let se = Message::parse(&build(2, &o)).unwrap();
        assert_eq!(
            se.flows,
            vec![FlowDescriptor {
                flowspec: fs,
                filters: vec![f1, f2]
            }]
        );
        // a Resv whose first FILTER_SPEC has no FLOWSPEC before it is refused
        let mut o = objects_of(&b);
        o.swap(4, 5);
        assert_eq!(
            Message::parse(&build(2, &o)),
            Err(ParseError::Missing(class::FLOWSPEC))
        );
    }

    #[test]
    fn resv_tear_may_omit_flowspecs() {
        let all = samples();
        let m = &all.iter().find(|(n, _)| *n == "resvtear-v4").unwrap().1;
        let o: Vec<_> = objects_of(&m.to_bytes())
            .into_iter()
            .filter(|o| o.0 != class::FLOWSPEC)
            .collect();
        let got = Message::parse(&build(6, &o)).unwrap();
        let fd = FlowDescriptor {
            flowspec: FlowSpec::placeholder(),
            filters: vec![v4_filter()],
        };
        assert_eq!(got.flows, vec![fd]);
        let again = got.to_bytes();
        assert_eq!(again, build(6, &o), "the placeholder is not written");
        assert_eq!(Message::parse(&again), Ok(got));
        // a placeholder after a real flowspec is written, else its filter would join
        // the descriptor before it
        for style in [Style::Ff, Style::Se] {
            let tear = Message {
                style: Some(style),
                flows: vec![
                    FlowDescriptor {
                        flowspec: cl(1000.0),
                        filters: vec![v4_filter()],
                    },
                    FlowDescriptor {
                        flowspec: FlowSpec::placeholder(),
                        filters: vec![v4_filter()],
                    },
                ],
                ..m.clone()
            };
            assert_eq!(Message::parse(&tear.to_bytes()), Ok(tear), "{style:?}");
        }
    }

    #[test]
    fn guaranteed_and_flow_label_values_survive() {
        let all = samples();
        let m = &all.iter().find(|(n, _)| *n == "resv-v6-se-gs").unwrap().1;
        let got = Message::parse(&m.to_bytes()).unwrap();
        let fd = &got.flows[0];
        assert_eq!(
            fd.flowspec.service,
            Service::Guaranteed {
                rate_bytes_per_s: 150_000.0,
                slack_us: 1000
            }
        );
        assert_eq!(
            fd.filters[1],
            FilterSpec::FlowLabel {
                src: S6,
                flow_label: 0x12345
            }
        );
        assert_eq!(got.session.dst, IpAddr::V6(RX6));
        let _ = (Ipv4Addr::UNSPECIFIED, Ipv6Addr::UNSPECIFIED);
    }
}
