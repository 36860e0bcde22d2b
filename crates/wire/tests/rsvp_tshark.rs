//! tshark decodes every RSVP message `wire::rsvp` writes as we mean it: each sample of
//! `src/rsvp/testdata/` (every message type over IPv4 and IPv6, FF/SE/WF, Controlled-Load
//! and Guaranteed, FILTER_SPEC C-Types 1, 2 and 3) goes into a raw-IP pcap (linktype
//! 101; Path and PathTear with the Router Alert option, as they are sent), and tshark's
//! fields must equal ours, with no malformed packet and no expert warning.
//!
//! Without tshark the test is skipped with a message, except under CI=true.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

mod support;

use support::{pcap, run_tshark, tshark_available, TempDir, LINKTYPE_RAW};
use wire::rsvp::{FilterSpec, FlowSpec, Message, MsgType, Service, Style};

/// The committed samples, by file name.
fn samples() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rsvp/testdata");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    assert!(v.len() >= 14, "samples in {}", dir.display());
    v
}

/// The IP source and destination a message travels between (the hop that sends it,
/// the session or the confirmation address).
fn ip_ends(m: &Message) -> (IpAddr, IpAddr) {
    let src = m
        .hop
        .map(|h| h.addr)
        .or(m.error.map(|e| e.node))
        .unwrap_or(m.session.dst);
    let dst = match m.kind {
        MsgType::ResvConf => m.confirm.unwrap(),
        _ => m.session.dst,
    };
    (src, dst)
}

fn with_router_alert(m: &Message) -> bool {
    matches!(m.kind, MsgType::Path | MsgType::PathTear)
}

/// The IP packet around an RSVP message: IPv4 with the Router Alert option (RFC 2113,
/// type 148, length 4, value 0) or IPv6 with a Hop-by-Hop header carrying Router Alert
/// value 1 = RSVP (RFC 2711).
fn ip_packet(m: &Message, rsvp: &[u8]) -> Vec<u8> {
    let alert = with_router_alert(m);
    match ip_ends(m) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => {
            let hlen = if alert { 24 } else { 20 };
            let total = (hlen + rsvp.len()) as u16;
            let mut p = vec![0x40 | (hlen / 4) as u8, 0];
            p.extend_from_slice(&total.to_be_bytes());
            p.extend_from_slice(&[0, 1, 0, 0, m.send_ttl, wire::rsvp::PROTOCOL, 0, 0]);
            p.extend_from_slice(&src.octets());
            p.extend_from_slice(&dst.octets());
            if alert {
                p.extend_from_slice(&[148, 4, 0, 0]);
            }
            let sum = wire::checksum::internet(&p);
            p[10..12].copy_from_slice(&sum.to_be_bytes());
            p.extend_from_slice(rsvp);
            p
        }
        (IpAddr::V6(src), IpAddr::V6(dst)) => {
            let hbh: &[u8] = if alert {
                &[wire::rsvp::PROTOCOL, 0, 5, 2, 0, 1, 1, 0]
            } else {
                &[]
            };
            let next = if alert { 0 } else { wire::rsvp::PROTOCOL };
            let mut p = vec![0x60, 0, 0, 0];
            p.extend_from_slice(&((hbh.len() + rsvp.len()) as u16).to_be_bytes());
            p.extend_from_slice(&[next, m.send_ttl]);
            p.extend_from_slice(&src.octets());
            p.extend_from_slice(&dst.octets());
            p.extend_from_slice(hbh);
            p.extend_from_slice(rsvp);
            p
        }
        ends => panic!("mixed families {ends:?}"),
    }
}

/// The tshark fields compared, in `-e` order.
const FIELDS: &[&str] = &[
    "rsvp.msg",
    "rsvp.sending_ttl",
    "rsvp.message_length",
    "rsvp.message_checksum",
    "rsvp.session.ip",
    "rsvp.session.destination_address",
    "rsvp.session.proto",
    "rsvp.session.protocol",
    "rsvp.session.port",
    "rsvp.session.destination_port",
    "rsvp.hop.neighbor_address_ipv4",
    "rsvp.neighbor_address_ipv6",
    "rsvp.hop.logical_interface",
    "rsvp.refresh_interval",
    "rsvp.style.style",
    "rsvp.sender.ip",
    "rsvp.sender.port",
    "rsvp.template_filter.source_address_ipv6",
    "rsvp.template_filter.source_port",
    "rsvp.template_filter.data",
    "rsvp.tspec.token_bucket_rate",
    "rsvp.tspec.token_bucket_size",
    "rsvp.tspec.peak_data_rate",
    "rsvp.flowspec.service_header",
    "rsvp.flowspec.token_bucket_rate",
    "rsvp.flowspec.token_bucket_size",
    "rsvp.flowspec.peak_data_rate",
    "rsvp.flowspec.rate",
    "rsvp.flowspec.slack_term",
    "rsvp.error.error_node_ipv4",
    "rsvp.error.error_node_ipv6",
    "rsvp.error.error_code",
    "rsvp.error_value",
    "rsvp.confirm.receiver_address_ipv4",
    "rsvp.confirm.receiver_address_ipv6",
    "rsvp.obj_unknown",
    "ip.opt.ra",
    "ipv6.opt.router_alert",
];

/// C-Type 3 has no named fields in tshark 4.0: `rsvp.template_filter.data` holds the
/// 20 octets (address, 12 zero bits, label) in hex. Stands in for the fields.
const LABEL_DATA: &str = "rsvp.template_filter.data";

/// What tshark should show for a message, field by field (several occurrences joined
/// by commas, in wire order).
fn expected(m: &Message, bytes: &[u8]) -> BTreeMap<&'static str, String> {
    let mut f: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut put = |k: &'static str, v: String| f.entry(k).or_default().push(v);
    let addr = |v4: &'static str, v6: &'static str, a: IpAddr| match a {
        IpAddr::V4(_) => (v4, a.to_string()),
        IpAddr::V6(_) => (v6, a.to_string()),
    };
    put("rsvp.msg", (m.kind as u8).to_string());
    put("rsvp.sending_ttl", m.send_ttl.to_string());
    put("rsvp.message_length", bytes.len().to_string());
    put(
        "rsvp.message_checksum",
        format!("0x{:02x}{:02x}", bytes[2], bytes[3]),
    );
    let (k, v) = addr(
        "rsvp.session.ip",
        "rsvp.session.destination_address",
        m.session.dst,
    );
    put(k, v);
    // tshark names SESSION C-Type 2's protocol and port apart from C-Type 1's
    let (proto, port) = match m.session.dst {
        IpAddr::V4(_) => ("rsvp.session.proto", "rsvp.session.port"),
        IpAddr::V6(_) => ("rsvp.session.protocol", "rsvp.session.destination_port"),
    };
    put(proto, m.session.protocol.to_string());
    put(port, m.session.dst_port.to_string());
    if let Some(h) = m.hop {
        let (k, v) = addr(
            "rsvp.hop.neighbor_address_ipv4",
            "rsvp.neighbor_address_ipv6",
            h.addr,
        );
        put(k, v);
        put("rsvp.hop.logical_interface", h.lih.to_string());
    }
    if let Some(r) = m.time_values_ms {
        put("rsvp.refresh_interval", r.to_string());
    }
    if let Some(e) = m.error {
        let (k, v) = addr(
            "rsvp.error.error_node_ipv4",
            "rsvp.error.error_node_ipv6",
            e.node,
        );
        put(k, v);
        put("rsvp.error.error_code", e.code.to_string());
        put("rsvp.error_value", e.value.to_string());
    }
    if let Some(a) = m.confirm {
        let (k, v) = addr(
            "rsvp.confirm.receiver_address_ipv4",
            "rsvp.confirm.receiver_address_ipv6",
            a,
        );
        put(k, v);
    }
    if let Some(s) = m.style {
        put("rsvp.style.style", format!("0x{:06x}", s.option_vector()));
    }
    let mut filters: Vec<FilterSpec> = Vec::new();
    let mut last: Option<FlowSpec> = None;
    for fd in &m.flows {
        // an FF descriptor whose flowspec equals the one before is sent without it
        let shared = m.style == Some(Style::Ff) && last == Some(fd.flowspec);
        if !shared {
            put(
                "rsvp.flowspec.service_header",
                fs_service(&fd.flowspec).to_string(),
            );
            put(
                "rsvp.flowspec.token_bucket_rate",
                fd.flowspec.tspec.rate_bytes_per_s.to_string(),
            );
            put(
                "rsvp.flowspec.token_bucket_size",
                fd.flowspec.tspec.depth_bytes.to_string(),
            );
            put(
                "rsvp.flowspec.peak_data_rate",
                fd.flowspec.tspec.peak_bytes_per_s.to_string(),
            );
            if let Service::Guaranteed {
                rate_bytes_per_s,
                slack_us,
            } = fd.flowspec.service
            {
                put("rsvp.flowspec.rate", rate_bytes_per_s.to_string());
                put("rsvp.flowspec.slack_term", slack_us.to_string());
            }
        }
        last = Some(fd.flowspec);
        filters.extend(&fd.filters);
    }
    if let Some(s) = &m.sender {
        filters.push(s.template);
        put(
            "rsvp.tspec.token_bucket_rate",
            s.tspec.rate_bytes_per_s.to_string(),
        );
        put(
            "rsvp.tspec.token_bucket_size",
            s.tspec.depth_bytes.to_string(),
        );
        put(
            "rsvp.tspec.peak_data_rate",
            s.tspec.peak_bytes_per_s.to_string(),
        );
    }
    for filter in filters {
        match filter {
            FilterSpec::V4 { src, src_port } => {
                put("rsvp.sender.ip", src.to_string());
                put("rsvp.sender.port", src_port.to_string());
            }
            FilterSpec::V6 { src, src_port } => {
                put("rsvp.template_filter.source_address_ipv6", src.to_string());
                put("rsvp.template_filter.source_port", src_port.to_string());
            }
            FilterSpec::FlowLabel { src, flow_label } => {
                put(LABEL_DATA, format!("{src} label {flow_label}"))
            }
        }
    }
    if with_router_alert(m) {
        match m.session.dst {
            IpAddr::V4(_) => put("ip.opt.ra", "0".into()),
            IpAddr::V6(_) => put("ipv6.opt.router_alert", "1".into()),
        }
    }
    FIELDS
        .iter()
        .map(|k| (*k, f.remove(k).unwrap_or_default().join(",")))
        .collect()
}

fn fs_service(f: &FlowSpec) -> u8 {
    match f.service {
        Service::ControlledLoad => 5,
        Service::Guaranteed { .. } => 2,
    }
}

/// tshark's `rsvp.template_filter.data` of C-Type 3 filters read back as "ADDR label N":
/// 16 octets of address, then 12 bits that must be zero and the 20-bit flow label.
fn decode_label_data(field: &str) -> String {
    let one = |hex: &str| -> String {
        assert_eq!(hex.len(), 40, "C-Type 3 data is 20 octets: {hex}");
        let octets: Vec<u8> = (0..20)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let mut a = [0u8; 16];
        a.copy_from_slice(&octets[..16]);
        let word = u32::from_be_bytes([octets[16], octets[17], octets[18], octets[19]]);
        assert_eq!(word >> 20, 0, "reserved bits before the flow label: {hex}");
        format!("{} label {}", std::net::Ipv6Addr::from(a), word)
    };
    field
        .split(',')
        .filter(|s| !s.is_empty())
        .map(one)
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn tshark_decodes_every_message_as_we_mean_it() {
    if !tshark_available() {
        return;
    }
    let dir = TempDir::new("wire-rsvp-tshark");
    let all: Vec<(String, Vec<u8>, Message)> = samples()
        .into_iter()
        .map(|(name, b)| {
            let m = Message::parse(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, b, m)
        })
        .collect();
    let packets: Vec<Vec<u8>> = all.iter().map(|(_, b, m)| ip_packet(m, b)).collect();
    let file = dir.0.join("rsvp.pcap");
    std::fs::write(&file, pcap(LINKTYPE_RAW, &packets)).unwrap();

    let bad = run_tshark(
        &file,
        &["-Y", "_ws.malformed || _ws.expert.severity >= warning"],
    );
    assert_eq!(bad, "", "tshark finds malformed packets or warnings");

    // tshark checks the RSVP checksum itself and says so only in its detail view
    let detail = run_tshark(&file, &["-V"]);
    let checksums: Vec<&str> = detail
        .lines()
        .filter(|l| l.contains("Message Checksum:"))
        .collect();
    assert_eq!(checksums.len(), all.len(), "{detail}");
    for line in checksums {
        assert!(line.trim_end().ends_with("[correct]"), "{line}");
    }

    let mut args = vec![
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ];
    for f in FIELDS {
        args.extend(["-e", f]);
    }
    let out = run_tshark(&file, &args);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), all.len(), "one line per packet:\n{out}");
    for ((name, bytes, m), line) in all.iter().zip(lines) {
        let values: Vec<&str> = line.split('|').collect();
        assert_eq!(values.len(), FIELDS.len(), "{name}: {line}");
        let mut got: BTreeMap<&str, String> = FIELDS
            .iter()
            .copied()
            .zip(values.iter().map(|v| v.to_string()))
            .collect();
        let data = got[LABEL_DATA].clone();
        got.insert(LABEL_DATA, decode_label_data(&data));
        let want = expected(m, bytes);
        for k in FIELDS {
            assert_eq!(got[k], want[k], "{name}: field {k}");
        }
    }
    // every message type, both families and every FILTER_SPEC C-Type were shown
    let kinds: std::collections::BTreeSet<u8> = all.iter().map(|(_, _, m)| m.kind as u8).collect();
    assert_eq!(kinds.len(), 7);
    let ctypes: std::collections::BTreeSet<u8> = all
        .iter()
        .flat_map(|(_, _, m)| {
            m.flows
                .iter()
                .flat_map(|f| f.filters.iter())
                .chain(m.sender.as_ref().map(|s| &s.template))
        })
        .map(FilterSpec::ctype)
        .collect();
    assert_eq!(ctypes.into_iter().collect::<Vec<_>>(), vec![1, 2, 3]);
    for style in [Style::Ff, Style::Se, Style::Wf] {
        assert!(
            all.iter().any(|(_, _, m)| m.style == Some(style)),
            "{style:?}"
        );
    }
}
