//! What a measurement agent lets a request do (`dualperf agent`): the destinations it may
//! send to (the asker's own address and the prefixes of `--allow`) and the caps on rate,
//! bytes and duration that a request's flows are checked against before they start. The
//! reason for a refusal is returned as text, which the agent sends back to the asker;
//! a running session's [`RunCaps`] say, as text too, why they halted it.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration as StdDuration;

use wire::control::Protocol;
use wire::prefix::{unmapped, Prefix};
use wire::time::Duration;

use crate::flow::FlowSpec;

/// What an agent lets a request do.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Where it may send beyond the asker's own address (`--allow`).
    pub allow: Vec<Prefix>,
    /// Most a request may send, all its flows together, in payload bits a second.
    pub max_rate_bps: u64,
    /// Most payload bytes a request may send.
    pub max_bytes: u64,
    /// Longest a request may send.
    pub max_duration: StdDuration,
}

/// Hard limits on one running session (an agent's `--max-bytes`, `--max-duration`): the
/// flows are halted, and the report says why, when they reach either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunCaps {
    /// Payload bytes handed to the kernel, all flows together.
    pub bytes: u64,
    /// From the flows' start.
    pub duration: StdDuration,
}

impl RunCaps {
    /// Why these caps halt the flows, once the `bytes` sent or the time they `ran`
    /// reach them.
    pub fn reached(&self, bytes: u64, ran: StdDuration) -> Option<String> {
        if bytes >= self.bytes {
            Some(format!(
                "halted at the agent's byte cap ({} bytes, --max-bytes)",
                self.bytes
            ))
        } else if ran >= self.duration {
            Some(format!(
                "halted at the agent's duration cap ({} s, --max-duration)",
                self.duration.as_secs_f64()
            ))
        } else {
            None
        }
    }
}

/// Most flows one request may ask for.
pub const MAX_FLOWS: usize = 10_000;

impl Policy {
    /// Check a request to send `flows` to `dest`, asked by `asker`: the reason it is
    /// refused, if it is.
    pub fn check(&self, asker: IpAddr, dest: SocketAddr, flows: &[FlowSpec]) -> Result<(), String> {
        let ip = unmapped(dest.ip());
        if ip.is_unspecified() || ip.is_multicast() || dest.port() == 0 {
            return Err(format!("{dest} is not a unicast destination"));
        }
        if let IpAddr::V4(v4) = ip {
            if v4.is_broadcast() {
                return Err(format!("{dest} is a broadcast address"));
            }
        }
        if ip != unmapped(asker) && !self.allow.iter().any(|p| p.contains(ip)) {
            let allowed = if self.allow.is_empty() {
                "only the asker's own address (no --allow given)".to_owned()
            } else {
                let list: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
                format!("the asker's own address and {}", list.join(", "))
            };
            return Err(format!(
                "destination {ip} is outside --allow: this agent may send to {allowed}"
            ));
        }
        if flows.is_empty() {
            return Err("the request names no flows".into());
        }
        if flows.len() > MAX_FLOWS {
            return Err(format!(
                "{} flows exceed the {MAX_FLOWS} a request may ask for",
                flows.len()
            ));
        }
        let mut rate_bps = 0.0;
        let mut bytes = 0.0;
        for (i, f) in flows.iter().enumerate() {
            if f.marking.flow_label.is_some() && ip.is_ipv4() {
                return Err(format!("flow {i}: a flow label needs an IPv6 destination"));
            }
            let window_limited = f.unpaced && f.protocol == Protocol::Tcp;
            let bps = match mean_bps(f) {
                Some(b) => b,
                None if window_limited => 0.0,
                None if f.unpaced => {
                    return Err(format!(
                        "flow {i}: an unpaced UDP bulk flow has no rate, so it cannot be held to --max-rate: give it a --rate"
                    ))
                }
                None => {
                    return Err(format!(
                        "flow {i}: its mean rate is unknown (a heavy-tailed --idt), so it cannot be held to --max-rate"
                    ))
                }
            };
            rate_bps += bps;
            if let Some(d) = planned_duration(f, bps) {
                let end = f.start_offset + d;
                if StdDuration::from(end) > self.max_duration {
                    return Err(format!(
                        "flow {i} would send until {end}, beyond this agent's --max-duration of {}",
                        Duration::from(self.max_duration)
                    ));
                }
                bytes += bps / 8.0 * d.as_secs_f64();
            }
            if let Some(b) = f.stop.bytes {
                bytes = bytes.max(b as f64);
            }
        }
        if rate_bps > self.max_rate_bps as f64 {
            return Err(format!(
                "the flows ask for {:.3} Mbit/s, above this agent's --max-rate of {:.3} Mbit/s",
                rate_bps / 1e6,
                self.max_rate_bps as f64 / 1e6
            ));
        }
        if bytes > self.max_bytes as f64 {
            return Err(format!(
                "the flows would send about {:.0} bytes, above this agent's --max-bytes of {}",
                bytes, self.max_bytes
            ));
        }
        Ok(())
    }
}

/// A flow's mean payload rate, bits a second: mean packets a second × mean payload;
/// `None` for a window-limited bulk flow or a rate without a mean.
fn mean_bps(f: &FlowSpec) -> Option<f64> {
    let size = match &f.size_dist {
        None => f64::from(f.size_bytes),
        Some(d) => d.mean()?.max(0.0),
    };
    Some(f.mean_pps()? * size * 8.0)
}

/// How long a flow sends: its duration, or its count or byte limit at its mean rate.
fn planned_duration(f: &FlowSpec, bps: f64) -> Option<Duration> {
    let by_count = f
        .stop
        .count
        .zip(f.mean_pps().filter(|p| *p > 0.0))
        .map(|(n, pps)| n as f64 / pps);
    let by_bytes = f
        .stop
        .bytes
        .filter(|_| bps > 0.0)
        .map(|b| b as f64 * 8.0 / bps);
    let mut secs = [by_count, by_bytes]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min);
    if let Some(d) = f.stop.duration {
        secs = secs.min(d.as_secs_f64());
    }
    secs.is_finite()
        .then(|| Duration::from_nanos((secs * 1e9).min(u64::MAX as f64) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn policy(allow: &[&str]) -> Policy {
        Policy {
            allow: allow.iter().map(|p| p.parse().unwrap()).collect(),
            max_rate_bps: 10_000_000,
            max_bytes: 100_000_000,
            max_duration: StdDuration::from_secs(60),
        }
    }

    fn udp(rate: Rate, size: u32, secs: u64) -> FlowSpec {
        FlowSpec {
            rate,
            size_bytes: size,
            stop: crate::flow::StopSpec::after(Duration::from_secs(secs)),
            ..FlowSpec::default()
        }
    }

    #[test]
    fn a_running_session_is_halted_at_the_first_cap_it_reaches() {
        let caps = RunCaps {
            bytes: 1_000_000,
            duration: StdDuration::from_millis(2_500),
        };
        assert_eq!(caps.reached(999_999, StdDuration::from_millis(2_499)), None);
        assert_eq!(
            caps.reached(1_000_000, StdDuration::ZERO).as_deref(),
            Some("halted at the agent's byte cap (1000000 bytes, --max-bytes)")
        );
        assert_eq!(
            caps.reached(0, StdDuration::from_millis(2_500)).as_deref(),
            Some("halted at the agent's duration cap (2.5 s, --max-duration)")
        );
        // Both reached: the bytes are said.
        assert_eq!(
            caps.reached(2_000_000, StdDuration::from_secs(3))
                .as_deref(),
            Some("halted at the agent's byte cap (1000000 bytes, --max-bytes)")
        );
    }

    const ASKER: &str = "198.18.9.2";

    fn dest(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_asker_is_always_allowed_and_others_only_inside_allow() {
        let flows = [udp(Rate::MilliPps(100_000), 100, 5)];
        let asker: IpAddr = ASKER.parse().unwrap();
        let none = policy(&[]);
        assert_eq!(none.check(asker, dest("198.18.9.2:4646"), &flows), Ok(()));
        let why = none
            .check(asker, dest("198.18.4.2:4646"), &flows)
            .unwrap_err();
        assert!(
            why.contains("outside --allow") && why.contains("no --allow"),
            "{why}"
        );
        let lab = policy(&["198.18.0.0/15"]);
        assert_eq!(lab.check(asker, dest("198.18.4.2:4646"), &flows), Ok(()));
        let why = lab
            .check(asker, dest("192.0.2.1:4646"), &flows)
            .unwrap_err();
        assert!(why.contains("198.18.0.0/15"), "{why}");
        for bad in [
            "224.0.0.1:4646",
            "255.255.255.255:4646",
            "198.18.9.2:0",
            "0.0.0.0:4646",
        ] {
            assert!(
                policy(&["0.0.0.0/0"])
                    .check(asker, dest(bad), &flows)
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn rate_bytes_and_duration_caps_refuse_with_their_figures() {
        let asker: IpAddr = ASKER.parse().unwrap();
        let to = dest("198.18.9.2:4646");
        let p = policy(&[]);
        // 8 Mbit/s for 10 s: 10 MB, within every cap.
        assert_eq!(
            p.check(asker, to, &[udp(Rate::Bps(8_000_000), 1000, 10)]),
            Ok(())
        );
        // Two of them: 16 Mbit/s.
        let two = [
            udp(Rate::Bps(8_000_000), 1000, 10),
            udp(Rate::Bps(8_000_000), 1000, 10),
        ];
        let why = p.check(asker, to, &two).unwrap_err();
        assert!(
            why.contains("16.000 Mbit/s") && why.contains("--max-rate"),
            "{why}"
        );
        // 61 s against a 60 s cap.
        let why = p
            .check(asker, to, &[udp(Rate::Bps(1_000), 100, 61)])
            .unwrap_err();
        assert!(why.contains("--max-duration"), "{why}");
        // A start offset counts: 30 s + 31 s.
        let mut late = udp(Rate::Bps(1_000), 100, 31);
        late.start_offset = Duration::from_secs(30);
        assert!(p
            .check(asker, to, &[late])
            .unwrap_err()
            .contains("--max-duration"));
        // 9 Mbit/s for 60 s: 67.5 MB; the cap is 100 MB. A 200 MB byte limit is over.
        let mut big = udp(Rate::Bps(9_000_000), 1000, 60);
        assert_eq!(p.check(asker, to, std::slice::from_ref(&big)), Ok(()));
        let mut tighter = p.clone();
        tighter.max_bytes = 50_000_000;
        let why = tighter
            .check(asker, to, std::slice::from_ref(&big))
            .unwrap_err();
        assert!(why.contains("--max-bytes"), "{why}");
        big.stop.bytes = Some(200_000_000);
        big.stop.duration = None;
        // By its byte limit at 9 Mbit/s it would send for 178 s: over the duration cap.
        assert!(p.check(asker, to, &[big]).is_err());
        // A window-limited TCP bulk flow passes the static checks (bounded at run time).
        let bulk = FlowSpec {
            protocol: Protocol::Tcp,
            unpaced: true,
            ..udp(Rate::Bps(0), 131_072, 10)
        };
        assert_eq!(p.check(asker, to, &[bulk]), Ok(()));
        assert!(p.check(asker, to, &[]).is_err());
    }

    #[test]
    fn a_flow_label_needs_ipv6() {
        let mut f = udp(Rate::MilliPps(1_000), 100, 1);
        f.marking.flow_label = Some(7);
        let asker: IpAddr = ASKER.parse().unwrap();
        assert!(policy(&[])
            .check(asker, dest("198.18.9.2:1"), &[f])
            .is_err());
    }
}
