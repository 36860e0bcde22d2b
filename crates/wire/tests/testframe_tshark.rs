//! tshark reads the RFC 2544 test frames `wire::testframe` builds as we mean them: the
//! 64-byte IPv4 and 84-byte IPv6 templates and the same frames rewritten the way the
//! XDP generator rewrites them (seq, tx_ns, RFC 4814 ports and the checksum-adjust
//! word) go into an Ethernet pcap (linktype 1), and tshark, checking IPv4 header and
//! UDP checksums itself, must call every checksum good and show our addresses, ports
//! and lengths, with no malformed packet and no expert warning.
//!
//! Without tshark the test is skipped with a message, except under CI=true.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

mod support;

use support::{pcap, run_tshark, tshark_available, TempDir, LINKTYPE_ETHERNET};
use wire::testframe::{self, FrameSpec, Tag, TestFrame};

/// tshark with its own IPv4 header and UDP checksum checks on.
fn run_checking(file: &Path, args: &[&str]) -> String {
    let mut all = vec![
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
    ];
    all.extend_from_slice(args);
    run_tshark(file, &all)
}

fn spec(src: IpAddr, dst: IpAddr, frame_size: usize) -> FrameSpec {
    FrameSpec {
        src_mac: [0x02, 0, 0, 0, 0, 0x01],
        dst_mac: [0x02, 0, 0, 0, 0, 0x02],
        src,
        dst,
        src_port: 1024,
        dst_port: 1025,
        frame_size,
        stream: 7,
        dscp: 0,
        hop_limit: 64,
    }
}

/// The generator's rewrite: seq, tx_ns, pseudorandom ports and the adjust word.
fn rewrite(t: &TestFrame, seq: u32, tx_ns: u64, (r_src, r_dst): (u32, u32)) -> Vec<u8> {
    let mut f = t.bytes.clone();
    let l4 = t.l4_offset;
    let (src, dst) = testframe::rfc4814_ports(r_src, r_dst);
    f[l4..l4 + 2].copy_from_slice(&src.to_be_bytes());
    f[l4 + 2..l4 + 4].copy_from_slice(&dst.to_be_bytes());
    let mut tag = Tag::new_unchecked(&mut f[t.tag_offset..]);
    tag.set_seq(seq);
    tag.set_tx_ns(tx_ns);
    tag.set_adjust(testframe::adjust_for(
        seq,
        tx_ns,
        Some((src, dst)),
        (1024, 1025),
    ));
    f
}

#[test]
fn tshark_reads_test_frames_with_good_checksums() {
    if !tshark_available() {
        return;
    }
    let v4 = (
        IpAddr::V4(Ipv4Addr::new(198, 18, 0, 2)),
        IpAddr::V4(Ipv4Addr::new(198, 19, 0, 2)),
    );
    let v6 = (
        IpAddr::V6("2001:2::2".parse::<Ipv6Addr>().unwrap()),
        IpAddr::V6("2001:2:0:1::2".parse::<Ipv6Addr>().unwrap()),
    );
    let t4 = testframe::build(&spec(v4.0, v4.1, 64)).unwrap();
    let t6 = testframe::build(&spec(v6.0, v6.1, 84)).unwrap();
    let t4_big = testframe::build(&spec(v4.0, v4.1, 1518)).unwrap();
    let frames = vec![
        t4.bytes.clone(),
        t6.bytes.clone(),
        rewrite(
            &t4,
            0xdead_beef,
            0x0123_4567_89ab_cdef,
            (0x1234_5678, 0x9abc_def0),
        ),
        rewrite(&t6, 1, u64::MAX, (u32::MAX, u32::MAX)),
        rewrite(&t4_big, 65_535, 1_000_000_007, (0, 0)),
    ];
    let dir = TempDir::new("wire-testframe-tshark");
    let file = dir.0.join("testframe.pcap");
    std::fs::write(&file, pcap(LINKTYPE_ETHERNET, &frames)).unwrap();

    let bad = run_checking(
        &file,
        &["-Y", "_ws.malformed || _ws.expert.severity >= warning"],
    );
    assert_eq!(bad, "", "tshark finds malformed frames or warnings");

    let fields = [
        "frame.len",
        "ip.src",
        "ipv6.src",
        "ip.checksum.status",
        "udp.srcport",
        "udp.dstport",
        "udp.length",
        "udp.checksum.status",
    ];
    let mut args = vec!["-T", "fields", "-E", "separator=,"];
    for f in fields {
        args.extend(["-e", f]);
    }
    let out = run_checking(&file, &args);
    // Checksum status 1 is "Good" (0 bad, 2 unverified).
    let expected = [
        "60,198.18.0.2,,1,1024,1025,26,1",
        "80,,2001:2::2,,1024,1025,26,1",
        "60,198.18.0.2,,1,21112,11587,26,1",
        "80,,2001:2::2,,17407,5463,26,1",
        "1514,198.18.0.2,,1,1024,1,1480,1",
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    for f in &frames {
        assert!(testframe::parse(f).unwrap().udp_checksum_ok);
    }
}
