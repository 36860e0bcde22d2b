//! The RFC 3550 interarrival jitter of an RTP stream, computed against the RTP
//! timestamps (the sender's media clock) as RTP tools and Wireshark do, rather than
//! against the probe's wall-clock send stamp.
//!
//! RFC 3550 §6.4.1: with `S_i` the RTP timestamp and `R_i` the arrival time of packet
//! `i`, both in the same units, `D(i−1,i) = (R_i − R_{i−1}) − (S_i − S_{i−1})` and
//! `J_i = J_{i−1} + (|D(i−1,i)| − J_{i−1})/16`, over packets in arrival order. Here both
//! are nanoseconds: the 32-bit timestamps are extended past their wrap and scaled by the
//! media clock rate.

use serde::{Deserialize, Serialize};

use crate::jitter::Rfc3550Jitter;

/// A running estimator fed each packet's arrival time and RTP timestamp.
#[derive(Clone, Debug)]
pub struct RtpJitter {
    clock_hz: u32,
    highest_ts: Option<u64>,
    jitter: Rfc3550Jitter,
    packets: u64,
    sum_ns: f64,
    max_ns: f64,
}

/// What [`RtpJitter`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RtpJitterSummary {
    /// Packets fed.
    pub packets: u64,
    /// J after the last packet.
    pub last_ns: f64,
    /// Mean of J over every packet after the first.
    pub mean_ns: f64,
    /// Largest J.
    pub max_ns: f64,
}

impl RtpJitter {
    /// An estimator for a stream whose timestamps tick at `clock_hz`.
    pub fn new(clock_hz: u32) -> Self {
        Self {
            clock_hz: clock_hz.max(1),
            highest_ts: None,
            jitter: Rfc3550Jitter::new(),
            packets: 0,
            sum_ns: 0.0,
            max_ns: 0.0,
        }
    }

    /// Feed one packet: its arrival time (ns) and its 32-bit RTP timestamp.
    pub fn update(&mut self, rx_ns: u64, rtp_ts: u32) {
        let ts = self.extend(rtp_ts);
        // Media time in ns since timestamp 0 of the extended clock.
        let media_ns = (u128::from(ts) * 1_000_000_000 / u128::from(self.clock_hz)) as i128;
        let transit = i128::from(rx_ns) - media_ns;
        let transit =
            i64::try_from(transit).unwrap_or(if transit < 0 { i64::MIN } else { i64::MAX });
        self.jitter.update(transit);
        self.packets += 1;
        if self.packets > 1 {
            let j = self.jitter.value_ns().unwrap_or(0.0);
            self.sum_ns += j;
            self.max_ns = self.max_ns.max(j);
        }
    }

    /// Extend a 32-bit timestamp to 64 bits: the candidate closest to the highest seen.
    fn extend(&mut self, ts: u32) -> u64 {
        let Some(highest) = self.highest_ts else {
            // Start one wrap up, so a late packet from just before the first stays positive.
            let v = (1u64 << 32) | u64::from(ts);
            self.highest_ts = Some(v);
            return v;
        };
        let base = (highest & !0xffff_ffff) | u64::from(ts);
        let value = [
            base.checked_sub(1 << 32),
            Some(base),
            base.checked_add(1 << 32),
        ]
        .into_iter()
        .flatten()
        .min_by_key(|c| c.abs_diff(highest))
        .unwrap_or(base);
        if value > highest {
            self.highest_ts = Some(value);
        }
        value
    }

    /// What was measured; `None` before two packets.
    pub fn summary(&self) -> Option<RtpJitterSummary> {
        (self.packets >= 2).then(|| RtpJitterSummary {
            packets: self.packets,
            last_ns: self.jitter.value_ns().unwrap_or(0.0),
            mean_ns: self.sum_ns / (self.packets - 1) as f64,
            max_ns: self.max_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfectly_paced_stream_has_no_jitter_even_across_the_wrap() {
        // G.711 at 20 ms: 160 ticks of 8 kHz per packet, arriving exactly 20 ms apart.
        let mut j = RtpJitter::new(8000);
        let mut ts = u32::MAX - 480;
        for i in 0..10u64 {
            j.update(1_000_000_000 + i * 20_000_000, ts);
            ts = ts.wrapping_add(160);
        }
        let s = j.summary().unwrap();
        assert_eq!(s.packets, 10);
        assert_eq!((s.last_ns, s.mean_ns, s.max_ns), (0.0, 0.0, 0.0));
    }

    #[test]
    fn alternating_transit_follows_the_rfc_recurrence() {
        // Transit alternates by 10 ms: |D| = 10 ms each time, J = 10·(1 − (15/16)^n) ms
        // (reference/qos.md §6.8): n = 1 → 0.625 ms.
        let mut j = RtpJitter::new(8000);
        j.update(0, 0);
        j.update(20_000_000 + 10_000_000, 160);
        let s = j.summary().unwrap();
        assert_eq!(s.last_ns, 625_000.0);
        assert_eq!(s.mean_ns, 625_000.0);
        j.update(40_000_000, 320);
        let s = j.summary().unwrap();
        assert_eq!(s.last_ns, 625_000.0 + (10_000_000.0 - 625_000.0) / 16.0);
        assert_eq!(s.max_ns, s.last_ns);
        assert!(RtpJitter::new(8000).summary().is_none());
    }
}
