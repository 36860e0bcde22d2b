//! What the network delivered in the IP header: DS field (DSCP/ECN), hop
//! limit and flow label, counted per value so a caller can check that every
//! packet carried the marking it was sent with, and spot re-marking,
//! bleaching or ECN CE marks along the path.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::RxRecord;

/// Histograms (value → packets) of the received header fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Marking {
    /// Received DS field byte (`DSCP << 2 | ECN`) → packets.
    pub tos_seen: BTreeMap<u8, u64>,
    /// Received DSCP (RFC 2474) → packets; derived from `tos_seen`.
    pub dscp_seen: BTreeMap<u8, u64>,
    /// Received ECN codepoint (RFC 3168: 0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE)
    /// → packets; derived from `tos_seen`.
    pub ecn_seen: BTreeMap<u8, u64>,
    /// Packets whose DS field was not known.
    pub tos_unknown: u64,
    /// Received TTL / hop limit → packets.
    pub hop_limit_seen: BTreeMap<u8, u64>,
    /// Packets whose hop limit was not known.
    pub hop_limit_unknown: u64,
    /// Received IPv6 flow label → packets.
    pub flow_label_seen: BTreeMap<u32, u64>,
    /// Packets whose flow label was not known (always so for IPv4).
    pub flow_label_unknown: u64,
}

impl Marking {
    /// Counts the header fields of `records`.
    pub fn from_records(records: &[RxRecord]) -> Self {
        let mut m = MarkingCounter::default();
        for r in records {
            m.handle_record(r);
        }
        m.marking()
    }

    /// Counts `n` packets that carried these fields.
    fn add_n(&mut self, (tos, hop_limit, flow_label): Fields, n: u64) {
        count(&mut self.tos_seen, &mut self.tos_unknown, tos, n);
        if let Some(tos) = tos {
            *self.dscp_seen.entry(tos >> 2).or_insert(0) += n;
            *self.ecn_seen.entry(tos & 0b11).or_insert(0) += n;
        }
        count(
            &mut self.hop_limit_seen,
            &mut self.hop_limit_unknown,
            hop_limit,
            n,
        );
        count(
            &mut self.flow_label_seen,
            &mut self.flow_label_unknown,
            flow_label,
            n,
        );
    }

    /// The DS field byte every packet carried, if they all carried the same
    /// known one.
    pub fn uniform_tos(&self) -> Option<u8> {
        uniform(&self.tos_seen, self.tos_unknown)
    }

    /// The hop limit every packet carried, if they all carried the same known
    /// one.
    pub fn uniform_hop_limit(&self) -> Option<u8> {
        uniform(&self.hop_limit_seen, self.hop_limit_unknown)
    }

    /// The flow label every packet carried, if they all carried the same known
    /// one.
    pub fn uniform_flow_label(&self) -> Option<u32> {
        uniform(&self.flow_label_seen, self.flow_label_unknown)
    }

    /// Packets that arrived with ECN CE (congestion experienced, codepoint 3).
    pub fn ecn_ce_packets(&self) -> u64 {
        self.ecn_seen.get(&0b11).copied().unwrap_or(0)
    }

    /// Adds another histogram's counts to this one.
    pub fn merge(&mut self, other: &Self) {
        merge_counts(&mut self.tos_seen, &other.tos_seen);
        merge_counts(&mut self.dscp_seen, &other.dscp_seen);
        merge_counts(&mut self.ecn_seen, &other.ecn_seen);
        merge_counts(&mut self.hop_limit_seen, &other.hop_limit_seen);
        merge_counts(&mut self.flow_label_seen, &other.flow_label_seen);
        self.tos_unknown += other.tos_unknown;
        self.hop_limit_unknown += other.hop_limit_unknown;
        self.flow_label_unknown += other.flow_label_unknown;
    }
}

/// The received header fields of one packet: DS field, hop limit, flow label.
type Fields = (Option<u8>, Option<u8>, Option<u32>);

/// [`Marking`] counted as packets arrive. Consecutive packets almost always carry the
/// same fields, so a run of equal fields is counted once when it ends, not per packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkingCounter {
    counted: Marking,
    run: Option<(Fields, u64)>,
}

impl MarkingCounter {
    /// Counts one packet's fields.
    pub fn handle_record(&mut self, r: &RxRecord) {
        self.handle_records(r, 1);
    }

    /// Counts `n` packets that carried `r`'s fields.
    pub fn handle_records(&mut self, r: &RxRecord, n: u64) {
        let fields = (r.tos, r.hop_limit, r.flow_label);
        match &mut self.run {
            Some((f, count)) if *f == fields => *count += n,
            run => {
                if let Some((f, count)) = run.replace((fields, n)) {
                    self.counted.add_n(f, count);
                }
            }
        }
    }

    /// The counts so far.
    pub fn marking(&self) -> Marking {
        let mut m = self.counted.clone();
        if let Some((f, n)) = self.run {
            m.add_n(f, n);
        }
        m
    }
}

fn count<T: Ord>(seen: &mut BTreeMap<T, u64>, unknown: &mut u64, value: Option<T>, n: u64) {
    match value {
        Some(v) => *seen.entry(v).or_insert(0) += n,
        None => *unknown += n,
    }
}

fn uniform<T: Copy>(seen: &BTreeMap<T, u64>, unknown: u64) -> Option<T> {
    match (seen.len(), unknown) {
        (1, 0) => seen.keys().next().copied(),
        _ => None,
    }
}

fn merge_counts<T: Ord + Copy>(into: &mut BTreeMap<T, u64>, from: &BTreeMap<T, u64>) {
    for (&k, &v) in from {
        *into.entry(k).or_insert(0) += v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(tos: Option<u8>, hop_limit: Option<u8>, flow_label: Option<u32>) -> RxRecord {
        RxRecord {
            tos,
            hop_limit,
            flow_label,
            ..RxRecord::default()
        }
    }

    #[test]
    fn counts_every_field_and_unknowns() {
        // EF+ECT(0) twice, EF+CE once (0xbb), one unknown.
        let records = [
            rx(Some(0xba), Some(64), Some(0x12345)),
            rx(Some(0xba), Some(64), Some(0x12345)),
            rx(Some(0xbb), Some(63), Some(0x12345)),
            rx(None, None, None),
        ];
        let m = Marking::from_records(&records);
        assert_eq!(m.tos_seen, BTreeMap::from([(0xba, 2), (0xbb, 1)]));
        assert_eq!(m.dscp_seen, BTreeMap::from([(46, 3)]));
        assert_eq!(m.ecn_seen, BTreeMap::from([(2, 2), (3, 1)]));
        assert_eq!(m.tos_unknown, 1);
        assert_eq!(m.hop_limit_seen, BTreeMap::from([(63, 1), (64, 2)]));
        assert_eq!(m.hop_limit_unknown, 1);
        assert_eq!(m.flow_label_seen, BTreeMap::from([(0x12345, 3)]));
        assert_eq!(m.flow_label_unknown, 1);
        assert_eq!(m.ecn_ce_packets(), 1);
        // An unknown value means we cannot vouch for uniform marking.
        assert_eq!(m.uniform_flow_label(), None);
    }

    #[test]
    fn uniform_marking_is_detected() {
        let records = [rx(Some(0xb8), Some(64), None); 3];
        let m = Marking::from_records(&records);
        assert_eq!(m.uniform_tos(), Some(0xb8));
        assert_eq!(m.uniform_hop_limit(), Some(64));
        assert_eq!(m.uniform_flow_label(), None);
        assert_eq!(m.ecn_ce_packets(), 0);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = Marking::from_records(&[rx(Some(0), Some(64), None)]);
        let b = Marking::from_records(&[rx(Some(0), Some(255), Some(7))]);
        a.merge(&b);
        assert_eq!(a.tos_seen, BTreeMap::from([(0, 2)]));
        assert_eq!(a.hop_limit_seen, BTreeMap::from([(64, 1), (255, 1)]));
        assert_eq!(a.flow_label_seen, BTreeMap::from([(7, 1)]));
        assert_eq!(a.flow_label_unknown, 1);
        assert_eq!(
            a,
            Marking::from_records(&[rx(Some(0), Some(64), None), rx(Some(0), Some(255), Some(7))])
        );
    }
}
