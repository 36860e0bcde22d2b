//! Arbitrary text as a QoS file (class maps, policy maps, service policies), and arbitrary
//! frames through the policies it defines: parsing never panics; a policy that resolves
//! against a link is one the router can build; and through it every frame is sent,
//! dropped with a reason, or still queued, class by class.
#![no_main]
use libfuzzer_sys::fuzz_target;
use qos::link::{Link, LinkParams};
use qos::policy::Policy;
use wire::time::Instant;

fuzz_target!(|data: &[u8]| {
    // Text up to the first NUL is the file; the bytes after it are frames.
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let Ok(text) = std::str::from_utf8(&data[..split]) else {
        return;
    };
    let Ok(cfg) = router::qosconf::QosConfig::parse(text) else {
        return;
    };
    let frames = data.get(split + 1..).unwrap_or_default();
    for (iface, _, _) in &cfg.service {
        for rate_bps in [10_000_000, 0] {
            let Ok(Some(params)) = cfg.params_for(iface, rate_bps) else {
                continue;
            };
            let tx_ring = cfg.policy_of(iface).map_or(2, |p| p.tx_ring);
            let link = Link::new(
                LinkParams {
                    rate_bps,
                    limit_packets: Some(tx_ring),
                    ..LinkParams::default()
                },
                1,
            )
            .expect("valid link");
            let mut p = Policy::new(params, link, 1, Instant::ZERO)
                .expect("a policy that resolves builds");
            let mut now = 0u64;
            for chunk in frames.chunks(97) {
                now += u64::from(chunk[0]) * 10_000;
                let mut f = vec![0u8; 14];
                f[12..14].copy_from_slice(if chunk[0] & 1 == 0 { &[8, 0] } else { &[0x86, 0xdd] });
                f.extend_from_slice(chunk);
                p.enqueue(f, Instant::from_nanos(now));
                while p.dequeue(Instant::from_nanos(now)).is_some() {}
            }
            for c in p.stats() {
                assert_eq!(
                    c.offered_packets,
                    c.sent_packets + c.dropped.total() + c.queued_packets,
                    "{}",
                    c.name
                );
            }
        }
    }
});
