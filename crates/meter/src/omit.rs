//! `dualperf send -O/--omit` (iperf3's `-O`): which packets of a flow are left out of its figures, as
//! the sender ([`TxOmit`]) and the receiver ([`RxOmit`]) decide it.
//!
//! # The omitted span
//! A packet is omitted when its probe's transmit timestamp (`tx_ns`, the sender's wall
//! clock as the packet was handed to the kernel) is less than `omit_ns` after the
//! `tx_ns` of the flow's first packet. Both ends read the same stamps, so they agree
//! packet by packet: the sender as it sends, the receiver from the probes it gets. The
//! flow sends from its start; an omitted packet is counted apart (packets and payload
//! bytes), never in the summary, the interval series, the schedule error or the loss.
//!
//! # Where the ends may differ
//! - The receiver's reference is the first packet it *gets* of the flow: the flow's
//!   first packet, unless that was lost or overtaken (UDP), in which case its span ends
//!   a little later (by the stamps' difference), and it omits a few more packets.
//! - Loss is counted from the first counted packet to *arrive* on
//!   (`counted_from_seq`): the receiver's sequence numbers are renumbered from it, and
//!   the sender's count of the packets numbered from it on is what was expected. A
//!   counted packet lost right at the boundary, before any later one arrived, cannot be
//!   told from an omitted one and is in neither count; a packet numbered below the
//!   counted span's start that arrives after it (reordered across the boundary) is
//!   omitted, whatever its stamp.
//!
//! On TCP, in order and lossless, both ends always omit exactly the same messages.

use crate::RxRecord;

/// The receiver's side of `-O` for one flow.
#[derive(Clone, Debug)]
pub struct RxOmit {
    omit_ns: u64,
    /// `tx_ns` of the first packet received.
    first_tx_ns: Option<u64>,
    omitted_packets: u64,
    omitted_bytes: u64,
    counted_from_seq: Option<u64>,
}

impl RxOmit {
    /// Omits what is stamped within `omit_ns` of the first packet received.
    pub fn new(omit_ns: u64) -> Self {
        Self {
            omit_ns,
            first_tx_ns: None,
            omitted_packets: 0,
            omitted_bytes: 0,
            counted_from_seq: None,
        }
    }

    /// `record` (its sequence number unwrapped) as the flow's figures count it,
    /// renumbered from the counted span's start; `None` if it is omitted (and counted
    /// so).
    pub fn admit(&mut self, record: &RxRecord) -> Option<RxRecord> {
        let first = *self.first_tx_ns.get_or_insert(record.tx_ns);
        let in_span = record.tx_ns < first.saturating_add(self.omit_ns);
        let from = match self.counted_from_seq {
            _ if in_span => None,
            None => Some(*self.counted_from_seq.insert(record.seq)),
            Some(from) if record.seq < from => None,
            Some(from) => Some(from),
        };
        match from {
            Some(from) => Some(RxRecord {
                seq: record.seq - from,
                ..*record
            }),
            None => {
                self.omitted_packets += 1;
                self.omitted_bytes += u64::from(record.size_bytes);
                None
            }
        }
    }

    /// Of the `sent` packets the sender reports, those numbered within the counted span:
    /// what the loss expects.
    pub fn counted_sent(&self, sent: Option<u64>) -> Option<u64> {
        sent.map(|s| s.saturating_sub(self.before_counted()))
    }

    /// Packets numbered before the counted span: sent, but never metered.
    pub fn before_counted(&self) -> u64 {
        self.counted_from_seq.unwrap_or(0)
    }

    /// Packets received within the omitted span (or numbered before the counted span).
    pub fn omitted_packets(&self) -> u64 {
        self.omitted_packets
    }

    /// Their payload bytes.
    pub fn omitted_bytes(&self) -> u64 {
        self.omitted_bytes
    }

    /// The sequence number the counted span starts at; `None` while nothing counted
    /// came.
    pub fn counted_from_seq(&self) -> Option<u64> {
        self.counted_from_seq
    }
}

/// The sender's side of `-O` for one flow: which sent packets its `sent` figures leave
/// out.
#[derive(Clone, Copy, Debug)]
pub struct TxOmit {
    omit_ns: u64,
    /// The wall-clock stamp of the flow's first packet.
    first_tx_ns: Option<u64>,
    /// Packets sent within the omitted span.
    pub packets: u64,
    /// Their payload bytes.
    pub bytes: u64,
}

impl TxOmit {
    /// Omits what is stamped within `omit_ns` of the first packet sent.
    pub fn new(omit_ns: u64) -> Self {
        Self {
            omit_ns,
            first_tx_ns: None,
            packets: 0,
            bytes: 0,
        }
    }

    /// Whether a packet of `size_bytes` stamped `tx_ns` is omitted (and counted so).
    pub fn omits(&mut self, tx_ns: u64, size_bytes: u32) -> bool {
        let first = *self.first_tx_ns.get_or_insert(tx_ns);
        let omitted = tx_ns < first.saturating_add(self.omit_ns);
        if omitted {
            self.packets += 1;
            self.bytes += u64::from(size_bytes);
        }
        omitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, tx_ns: u64) -> RxRecord {
        RxRecord {
            flow: 1,
            seq,
            size_bytes: 100,
            tx_ns,
            rx_ns: tx_ns + 10,
            tos: None,
            hop_limit: None,
            flow_label: None,
            kernel_ts: false,
            rtp_ts: None,
        }
    }

    #[test]
    fn both_ends_omit_the_packets_stamped_within_the_span_and_loss_counts_from_its_end() {
        // Ten packets 100 ns apart, the first 350 ns omitted: seq 0-3.
        let mut tx = TxOmit::new(350);
        let omitted: Vec<bool> = (0..10).map(|s| tx.omits(1_000 + s * 100, 100)).collect();
        assert_eq!(omitted.iter().filter(|o| **o).count(), 4);
        assert_eq!((tx.packets, tx.bytes), (4, 400));
        let mut rx = RxOmit::new(350);
        let admitted: Vec<_> = (0..10)
            .filter_map(|s| rx.admit(&record(s, 1_000 + s * 100)))
            .map(|r| r.seq)
            .collect();
        // Renumbered from the counted span's start.
        assert_eq!(admitted, [0, 1, 2, 3, 4, 5]);
        assert_eq!(
            (
                rx.omitted_packets(),
                rx.omitted_bytes(),
                rx.counted_from_seq()
            ),
            (4, 400, Some(4))
        );
        assert_eq!(rx.counted_sent(Some(10)), Some(6));
    }

    #[test]
    fn a_packet_reordered_across_the_boundary_is_omitted() {
        let mut rx = RxOmit::new(350);
        assert!(rx.admit(&record(0, 1_000)).is_none());
        // 5 (counted) overtakes 4 (counted by its stamp, numbered below the start now)
        // and 3 (omitted by its stamp).
        assert_eq!(rx.admit(&record(5, 1_500)).map(|r| r.seq), Some(0));
        assert!(rx.admit(&record(4, 1_400)).is_none());
        assert!(rx.admit(&record(3, 1_300)).is_none());
        assert_eq!(rx.admit(&record(6, 1_600)).map(|r| r.seq), Some(1));
        assert_eq!(rx.omitted_packets(), 3);
        assert_eq!(rx.counted_from_seq(), Some(5));
    }
}
