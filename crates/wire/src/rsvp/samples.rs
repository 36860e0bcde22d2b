//! Sample messages for the tests: one of every message type over both families, every
//! style, both services and every FILTER_SPEC C-Type. Their bytes are committed in
//! `testdata/NAME.bin`: the fuzzer's seeds and what `tests/rsvp_tshark.rs` shows tshark.
//! `RSVP_WRITE_TESTDATA=1 cargo test -p wire --lib rsvp::samples` rewrites them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;

pub(crate) const S4: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 2);
pub(crate) const R1_4: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 1);
pub(crate) const RX4: Ipv4Addr = Ipv4Addr::new(198, 18, 4, 2);
pub(crate) const S6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, 0, 2);
pub(crate) const R1_6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, 0, 1);
pub(crate) const RX6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 4, 0, 0, 0, 2);

pub(crate) fn bucket(rate: f32) -> TokenBucket {
    TokenBucket {
        rate_bytes_per_s: rate,
        depth_bytes: 1500.0,
        peak_bytes_per_s: f32::INFINITY,
        min_policed_bytes: 64,
        max_packet_bytes: 1500,
    }
}

pub(crate) fn cl(rate: f32) -> FlowSpec {
    FlowSpec {
        service: Service::ControlledLoad,
        tspec: bucket(rate),
    }
}

pub(crate) fn gs(rate: f32, reserved: f32, slack_us: u32) -> FlowSpec {
    FlowSpec {
        service: Service::Guaranteed {
            rate_bytes_per_s: reserved,
            slack_us,
        },
        tspec: bucket(rate),
    }
}

fn session(dst: IpAddr) -> Session {
    Session {
        dst,
        protocol: 17,
        flags: 0,
        dst_port: 5001,
    }
}

fn base(kind: MsgType, dst: IpAddr) -> Message {
    Message {
        kind,
        send_ttl: 64,
        session: session(dst),
        hop: None,
        time_values_ms: None,
        error: None,
        style: None,
        confirm: None,
        sender: None,
        flows: vec![],
        forward: vec![],
    }
}

pub(crate) fn v4_filter() -> FilterSpec {
    FilterSpec::V4 {
        src: S4,
        src_port: 4000,
    }
}

pub(crate) fn v6_filter() -> FilterSpec {
    FilterSpec::V6 {
        src: S6,
        src_port: 4001,
    }
}

pub(crate) fn label_filter(flow_label: u32) -> FilterSpec {
    FilterSpec::FlowLabel {
        src: S6,
        flow_label,
    }
}

fn sender(template: FilterSpec) -> Option<SenderDescriptor> {
    Some(SenderDescriptor {
        template,
        tspec: bucket(125_000.0),
        adspec: None,
    })
}

/// A Path from the sender: hop = the sender itself.
pub(crate) fn path(template: FilterSpec, dst: IpAddr, phop: IpAddr) -> Message {
    Message {
        hop: Some(Hop { addr: phop, lih: 1 }),
        time_values_ms: Some(30_000),
        sender: sender(template),
        ..base(MsgType::Path, dst)
    }
}

/// A Resv from r1 to the sender.
pub(crate) fn resv(style: Style, flows: Vec<FlowDescriptor>, dst: IpAddr, nhop: IpAddr) -> Message {
    Message {
        hop: Some(Hop { addr: nhop, lih: 2 }),
        time_values_ms: Some(30_000),
        style: Some(style),
        flows,
        ..base(MsgType::Resv, dst)
    }
}

fn fd(flowspec: FlowSpec, filters: Vec<FilterSpec>) -> FlowDescriptor {
    FlowDescriptor { flowspec, filters }
}

/// Every sample, named as its testdata file.
pub(crate) fn samples() -> Vec<(&'static str, Message)> {
    let (rx4, rx6) = (IpAddr::V4(RX4), IpAddr::V6(RX6));
    let (r14, r16) = (IpAddr::V4(R1_4), IpAddr::V6(R1_6));
    let err = |node: IpAddr, code: u8, value: u16| {
        Some(ErrorSpec {
            node,
            flags: 0,
            code,
            value,
        })
    };
    let mut resv_ff4 = resv(
        Style::Ff,
        vec![fd(cl(125_000.0), vec![v4_filter()])],
        rx4,
        r14,
    );
    resv_ff4.confirm = Some(rx4);
    let resv_se6 = resv(
        Style::Se,
        vec![fd(
            gs(125_000.0, 150_000.0, 1000),
            vec![v6_filter(), label_filter(0x12345)],
        )],
        rx6,
        r16,
    );
    let resv_ff6 = resv(
        Style::Ff,
        vec![
            fd(cl(125_000.0), vec![label_filter(0xabcde)]),
            fd(gs(62_500.0, 62_500.0, 0), vec![label_filter(7)]),
        ],
        rx6,
        r16,
    );
    let resv_wf4 = resv(Style::Wf, vec![fd(cl(250_000.0), vec![])], rx4, r14);
    let path_err4 = Message {
        error: err(r14, code::TRAFFIC_CONTROL, code::TC_BAD_FLOWSPEC),
        sender: sender(v4_filter()),
        ..base(MsgType::PathErr, rx4)
    };
    let resv_err6 = Message {
        hop: Some(Hop { addr: r16, lih: 3 }),
        error: err(r16, code::ADMISSION, code::ADMISSION_BANDWIDTH),
        style: Some(Style::Ff),
        flows: vec![fd(cl(125_000.0), vec![label_filter(0xabcde)])],
        ..base(MsgType::ResvErr, rx6)
    };
    let resv_err4 = Message {
        hop: Some(Hop { addr: r14, lih: 3 }),
        error: err(r14, code::NO_PATH, 0),
        style: Some(Style::Se),
        flows: vec![fd(gs(125_000.0, 125_000.0, 10), vec![v4_filter()])],
        ..base(MsgType::ResvErr, rx4)
    };
    let path_tear6 = Message {
        hop: Some(Hop {
            addr: IpAddr::V6(S6),
            lih: 1,
        }),
        sender: sender(label_filter(0xabcde)),
        ..base(MsgType::PathTear, rx6)
    };
    let resv_tear4 = Message {
        hop: Some(Hop { addr: r14, lih: 2 }),
        style: Some(Style::Ff),
        flows: vec![fd(cl(125_000.0), vec![v4_filter()])],
        ..base(MsgType::ResvTear, rx4)
    };
    let resv_conf6 = Message {
        error: err(r16, code::CONFIRM, 0),
        confirm: Some(rx6),
        style: Some(Style::Ff),
        flows: vec![fd(cl(125_000.0), vec![v6_filter()])],
        ..base(MsgType::ResvConf, rx6)
    };
    let resv_conf4 = Message {
        error: err(r14, code::CONFIRM, 0),
        confirm: Some(rx4),
        style: Some(Style::Ff),
        flows: vec![fd(cl(125_000.0), vec![v4_filter()])],
        ..base(MsgType::ResvConf, rx4)
    };
    vec![
        ("path-v4", path(v4_filter(), rx4, IpAddr::V4(S4))),
        ("path-v6", path(v6_filter(), rx6, IpAddr::V6(S6))),
        (
            "path-v6-label",
            path(label_filter(0xabcde), rx6, IpAddr::V6(S6)),
        ),
        ("resv-v4-ff-cl", resv_ff4),
        ("resv-v6-se-gs", resv_se6),
        ("resv-v6-ff-label", resv_ff6),
        ("resv-v4-wf", resv_wf4),
        ("patherr-v4", path_err4),
        ("resverr-v6", resv_err6),
        ("resverr-v4", resv_err4),
        ("pathtear-v6-label", path_tear6),
        ("resvtear-v4", resv_tear4),
        ("resvconf-v6", resv_conf6),
        ("resvconf-v4", resv_conf4),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rsvp/testdata")
    }

    #[test]
    fn samples_round_trip_and_match_testdata() {
        let write = std::env::var_os("RSVP_WRITE_TESTDATA").is_some();
        let all = samples();
        let kinds: std::collections::BTreeSet<u8> = all.iter().map(|(_, m)| m.kind as u8).collect();
        assert_eq!(kinds.len(), 7, "every message type");
        for (name, m) in all {
            let bytes = m.to_bytes();
            assert_eq!(bytes.len(), m.buffer_len());
            assert_eq!(Message::parse(&bytes).as_ref(), Ok(&m), "{name}");
            let path = testdata().join(format!("{name}.bin"));
            if write {
                std::fs::create_dir_all(testdata()).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(stored, bytes, "{name}: testdata differs from the sample");
        }
        let files = std::fs::read_dir(testdata()).unwrap().count();
        assert_eq!(files, samples().len(), "a testdata file without a sample");
    }
}
