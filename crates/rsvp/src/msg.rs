//! Building the messages a node sends (RFC 2205 §3.1: which objects each type carries).

use std::net::IpAddr;

use wire::rsvp::{ErrorSpec, FlowDescriptor, Hop, Message, MsgType, Session, Style};

use crate::{ErrorSpecCode, Transmit, DEFAULT_TTL};

/// A message of `kind` for `session` with no other object yet.
pub(crate) fn blank(kind: MsgType, session: Session) -> Message {
    Message {
        kind,
        send_ttl: DEFAULT_TTL,
        session,
        hop: None,
        time_values_ms: None,
        error: None,
        style: None,
        confirm: None,
        sender: None,
        flows: Vec::new(),
        forward: Vec::new(),
    }
}

/// A Resv (or ResvTear without `refresh_ms`) for `flows`, from `hop`.
pub(crate) fn resv(
    kind: MsgType,
    session: Session,
    hop: Hop,
    refresh_ms: Option<u32>,
    style: Style,
    flows: Vec<FlowDescriptor>,
    confirm: Option<IpAddr>,
) -> Message {
    let mut m = blank(kind, session);
    m.hop = Some(hop);
    m.time_values_ms = refresh_ms;
    m.style = Some(style);
    m.flows = flows;
    m.confirm = confirm;
    m
}

/// An ERROR_SPEC from `node` with `code`.
pub(crate) fn error_spec(node: IpAddr, (code, value): ErrorSpecCode) -> ErrorSpec {
    ErrorSpec {
        node,
        flags: 0,
        code,
        value,
    }
}

/// A unicast message without Router Alert (Resv, errors, tears upstream, ResvConf).
pub(crate) fn unicast(
    iface: Option<usize>,
    src: IpAddr,
    dst: IpAddr,
    message: Message,
) -> Transmit {
    Transmit {
        iface,
        src,
        dst,
        router_alert: false,
        ttl: DEFAULT_TTL,
        message,
    }
}

/// A message toward the session with Router Alert (Path, PathTear), IP TTL = Send_TTL.
pub(crate) fn downstream(iface: Option<usize>, src: IpAddr, message: Message) -> Transmit {
    Transmit {
        iface,
        src,
        dst: message.session.dst,
        router_alert: true,
        ttl: message.send_ttl,
        message,
    }
}
