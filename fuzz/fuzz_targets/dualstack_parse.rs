//! Arbitrary text through the dual-stack parsers (host:port, URLs, gai.conf), and
//! arbitrary event sequences through Happy Eyeballs: nothing panics, a parsed host:port
//! prints back to itself, and once an outcome is set it never changes.
#![no_main]
use std::net::SocketAddr;

use dualstack::eyeballs::{HappyEyeballs, Params};
use dualstack::hostport::{naive_split, parse_host_port, parse_url};
use dualstack::select::{parse_gai_conf, PolicyTable};
use libfuzzer_sys::fuzz_target;
use wire::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(hp) = parse_host_port(&text) {
        if hp.port.is_some() {
            let again = parse_host_port(&hp.to_string());
            assert_eq!(again.as_ref().ok(), Some(&hp), "{hp:?} printed as {hp}");
        }
    }
    let _ = parse_url(&text);
    let _ = naive_split(&text);
    let _ = parse_gai_conf(&text, &PolicyTable::glibc_default());

    // Happy Eyeballs: up to 8 addresses from the first bytes, then operations.
    let Some((&n, rest)) = data.split_first() else { return };
    let n = usize::from(n % 8) + 1;
    let addrs: Vec<SocketAddr> = (0..n)
        .map(|i| {
            if rest.get(i).is_some_and(|b| b & 1 == 1) {
                SocketAddr::from(([127, 0, 0, i as u8 + 1], 80))
            } else {
                SocketAddr::from((std::net::Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, i as u16 + 1), 80))
            }
        })
        .collect();
    let delay = Duration::from_millis(u64::from(rest.first().copied().unwrap_or(0)) * 10);
    let mut now = Instant::from_nanos(0);
    let mut he = HappyEyeballs::new(&addrs, Params { attempt_delay: delay, first_family_count: usize::from(rest.get(1).copied().unwrap_or(1) % 4) }, now);
    let mut settled = None;
    for op in rest.chunks(2).skip(1) {
        let (kind, arg) = (op[0], op.get(1).copied().unwrap_or(0));
        now = now + Duration::from_millis(u64::from(arg));
        match kind % 5 {
            0 => {
                let _ = he.poll_attempt(now);
            }
            1 => he.handle_connected(usize::from(arg % 10), now),
            2 => he.handle_failed(usize::from(arg % 10), now),
            3 => {
                let _ = he.poll_cancel();
            }
            _ => {
                if let Some(t) = he.poll_timeout() {
                    now = now.max(t);
                }
            }
        }
        if let Some(o) = he.outcome() {
            if let Some(s) = &settled {
                assert_eq!(s, &o);
            }
            settled = Some(o);
        }
    }
});
