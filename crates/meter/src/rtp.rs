//! The RFC 3550 interarrival jitter of an RTP stream, computed against the RTP
//! timestamps (the sender's media clock) as RTP tools and Wireshark do, rather than
//! against the probe's wall-clock send stamp.
//!
//! RFC 3550 §6.4.1: with `S_i` the RTP timestamp and `R_i` the arrival time of packet
//! `i`, both in the same units, `D(i−1,i) = (R_i − R_{i−1}) − (S_i − S_{i−1})` and
//! `J_i = J_{i−1} + (|D(i−1,i)| − J_{i−1})/16`, over packets in arrival order. Here both
//! are nanoseconds: the 32-bit timestamps are extended past their wrap and scaled by the
//! media clock rate.
//!
//! [`rtp_jitter`] and [`rtp_jitter_by_flow`] compute it from the per-packet records
//! ([`RxRecord::rtp_ts`] and `rx_ns`) after the receive loop, so the live receiver and
//! `dualperf decode` of its log report the same figures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::jitter::Rfc3550Jitter;
use crate::record::RxRecord;

/// A running estimator fed each packet's arrival time and RTP timestamp.
#[derive(Clone, Debug, PartialEq)]
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

/// The RFC 3550 §6.4.1 interarrival jitter of one flow's records, in the order given
/// (arrival order), for timestamps ticking at `clock_hz`. Records without an RTP
/// timestamp are skipped; `None` before two records with one.
pub fn rtp_jitter(records: &[RxRecord], clock_hz: u32) -> Option<RtpJitterSummary> {
    let mut jitter = RtpJitter::new(clock_hz);
    for r in records {
        if let Some(ts) = r.rtp_ts {
            jitter.update(r.rx_ns, ts);
        }
    }
    jitter.summary()
}

/// [`rtp_jitter`] per flow of records of several flows (in arrival order), for the flows
/// whose media clock `clock_hz` knows; flows without two RTP-stamped records are left
/// out.
pub fn rtp_jitter_by_flow(
    records: &[RxRecord],
    clock_hz: &BTreeMap<u32, u32>,
) -> BTreeMap<u32, RtpJitterSummary> {
    let mut running: BTreeMap<u32, RtpJitter> = BTreeMap::new();
    for r in records {
        let (Some(ts), Some(&hz)) = (r.rtp_ts, clock_hz.get(&r.flow)) else {
            continue;
        };
        running
            .entry(r.flow)
            .or_insert_with(|| RtpJitter::new(hz))
            .update(r.rx_ns, ts);
    }
    running
        .into_iter()
        .filter_map(|(flow, j)| Some((flow, j.summary()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtp(flow: u32, rx_ns: u64, rtp_ts: Option<u32>) -> RxRecord {
        RxRecord {
            flow,
            rx_ns,
            rtp_ts,
            ..RxRecord::default()
        }
    }

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

    #[test]
    fn records_give_the_running_estimator_figures_skipping_unstamped_ones() {
        // The alternating-transit stream above, as records in virtual time, with an
        // unstamped packet (no RTP header) in the middle that must not count.
        let records = [
            rtp(1, 0, Some(0)),
            rtp(1, 30_000_000, Some(160)),
            rtp(1, 35_000_000, None),
            rtp(1, 40_000_000, Some(320)),
        ];
        let s = rtp_jitter(&records, 8000).unwrap();
        // J1 = 10 ms / 16 = 625 µs; J2 = 625 + (10 000 − 625)/16 = 1 210.9375 µs.
        assert_eq!(s.packets, 3);
        assert_eq!(s.last_ns, 1_210_937.5);
        assert_eq!(s.max_ns, 1_210_937.5);
        assert_eq!(s.mean_ns, (625_000.0 + 1_210_937.5) / 2.0);
        assert!(rtp_jitter(&records[..2], 8000).is_some());
        assert!(rtp_jitter(&records[..1], 8000).is_none());
        assert!(rtp_jitter(&[rtp(1, 0, None), rtp(1, 1, None)], 8000).is_none());
    }

    #[test]
    fn by_flow_splits_interleaved_flows_and_needs_a_clock() {
        // Flow 1 at 8 kHz, 20 ms packets arriving 20 ms apart except the last (25 ms):
        // |D| = 5 ms once, J = 5 ms / 16 = 312.5 µs. Flow 2 at 48 kHz, 960 ticks per
        // 20 ms, perfectly paced: J = 0. Flow 3 has no clock, flow 4 one packet.
        let records = [
            rtp(1, 1_000_000_000, Some(1000)),
            rtp(2, 1_000_000_001, Some(7)),
            rtp(3, 1_000_000_002, Some(0)),
            rtp(1, 1_020_000_000, Some(1160)),
            rtp(2, 1_020_000_001, Some(967)),
            rtp(3, 1_020_000_002, Some(160)),
            rtp(4, 1_020_000_003, Some(160)),
            rtp(1, 1_045_000_000, Some(1320)),
        ];
        let clocks = BTreeMap::from([(1, 8000), (2, 48_000), (4, 8000)]);
        let by_flow = rtp_jitter_by_flow(&records, &clocks);
        assert_eq!(by_flow.keys().copied().collect::<Vec<_>>(), [1, 2]);
        let one = by_flow[&1];
        assert_eq!(one.packets, 3);
        assert_eq!(one.last_ns, 312_500.0);
        assert_eq!(one.mean_ns, 156_250.0);
        assert_eq!(one.max_ns, 312_500.0);
        let two = by_flow[&2];
        assert_eq!(two.packets, 2);
        assert_eq!((two.last_ns, two.mean_ns, two.max_ns), (0.0, 0.0, 0.0));
        let flow_one: Vec<RxRecord> = records.iter().filter(|r| r.flow == 1).copied().collect();
        assert_eq!(rtp_jitter(&flow_one, 8000), Some(one));
    }
}
