//! Arbitrary bytes as a received RFC 2544 test frame: parsing never panics, and whatever
//! parses is consistent: a template built from the parsed addresses, ports and stream at
//! the same size, rewritten the way the XDP generator rewrites it (seq, tx_ns and the
//! checksum-adjust word), parses back to the same tag with a valid UDP checksum.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::testframe::{self, FrameSpec, Tag};

fuzz_target!(|data: &[u8]| {
    let Ok(got) = testframe::parse(data) else {
        return;
    };
    assert_eq!(got.frame_len, data.len());
    assert_eq!(got.v6, got.src.is_ipv6());
    assert_eq!(got.v6, got.dst.is_ipv6());
    let size = data.len() + testframe::FCS_LEN;
    assert!(size >= testframe::min_frame_size(got.v6));
    let mac = |at: usize| {
        let mut m = [0u8; 6];
        m.copy_from_slice(&data[at..at + 6]);
        m
    };
    let spec = FrameSpec {
        src_mac: mac(6),
        dst_mac: mac(0),
        src: got.src,
        dst: got.dst,
        src_port: got.src_port,
        dst_port: got.dst_port,
        frame_size: size,
        stream: got.tag.stream,
        dscp: 0,
        hop_limit: 64,
    };
    let Ok(t) = testframe::build(&spec) else {
        assert!(size > testframe::MAX_FRAME_SIZE);
        return;
    };
    let mut f = t.bytes.clone();
    let mut tag = Tag::new_unchecked(&mut f[t.tag_offset..]);
    tag.set_seq(got.tag.seq);
    tag.set_tx_ns(got.tag.tx_ns);
    let ports = (got.src_port, got.dst_port);
    tag.set_adjust(testframe::adjust_for(
        got.tag.seq,
        got.tag.tx_ns,
        None,
        ports,
    ));
    let again = testframe::parse(&f).expect("a built frame parses");
    assert!(again.udp_checksum_ok);
    assert_eq!(again.tag, got.tag);
    assert_eq!((again.src, again.dst, again.v6), (got.src, got.dst, got.v6));
    assert_eq!((again.src_port, again.dst_port), ports);
});
