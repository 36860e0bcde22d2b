//! A flow's [`FlowOutcome`] made from what each end measured: the sender's counts and
//! echoes ([`SenderFlow`]), the receiver's result for it ([`ReceivedFlow`]), and its
//! `TCP_INFO` report. The session that gathers them is the binary's.

use meter::{FlowMeter, FlowSummary, TxMeter};
use traffic::FlowSpec;
use wire::control::Meter;

use super::{sent_stats, FlowOutcome, HoldStats, SentStats, TcpReport, ZeroCopyStats};

/// The receiver's result for one flow, its figures in their types.
pub type ReceivedFlow =
    wire::control::FlowResult<FlowSummary, meter::RtpJitterSummary, Vec<meter::Interval>>;

/// What a flow measured at the sender; `error` says why it ended early, if it did.
#[derive(Clone, Debug)]
pub struct SenderFlow {
    /// The send records, counted as they were made.
    pub tx: TxMeter,
    /// The echoes' round-trip figures (round-trip flows).
    pub echoes: Option<FlowMeter>,
    /// The receiver's hold times of the echoes.
    pub hold: Option<HoldStats>,
    /// Records the log could not take.
    pub unlogged: u64,
    /// Why the flow ended early, if it did.
    pub error: Option<String>,
    /// `-O`: the packets sent within the omitted span (not in `tx`).
    pub omitted: Option<meter::omit::TxOmit>,
    /// `-Z`: the zero-copy sends and their completions.
    pub zerocopy: Option<ZeroCopyStats>,
    /// `--df`: datagrams the kernel refused as larger than the route's MTU (`EMSGSIZE`).
    pub too_big: u64,
}

impl SenderFlow {
    /// Nothing measured, no error.
    pub fn empty() -> Self {
        Self {
            tx: TxMeter::default(),
            echoes: None,
            hold: None,
            unlogged: 0,
            error: None,
            omitted: None,
            zerocopy: None,
            too_big: 0,
        }
    }

    /// Packets and payload bytes handed to the kernel, omitted (`-O`) or not.
    pub fn sent_total(&self) -> (u64, u64) {
        let (p, b) = self.omitted.map_or((0, 0), |o| (o.packets, o.bytes));
        (self.tx.packets() + p, self.tx.bytes() + b)
    }
}

impl FlowOutcome {
    /// The outcome of flow `id` sending `spec`: what it `sent`, the receiver's result if
    /// it reported one, its `TCP_INFO` report; with `cdf` its delay distribution (the
    /// round trip's from the echoes, else the receiver's one-way delay's), and with
    /// `logged` the records its log could not take.
    pub fn assemble(
        id: u16,
        spec: &FlowSpec,
        sent: SenderFlow,
        received: Option<ReceivedFlow>,
        tcp: Option<TcpReport>,
        cdf: bool,
        logged: bool,
    ) -> Self {
        let mut r = received;
        let packets = sent.tx.packets();
        let delay_cdf_ns = if !cdf {
            None
        } else if spec.meter == Meter::Rtt {
            sent.echoes.as_ref().and_then(FlowMeter::delay_cdf_ns)
        } else {
            r.as_mut().and_then(|r| r.delay_cdf_ns.take())
        };
        FlowOutcome {
            id,
            spec: spec.clone(),
            sent: SentStats {
                omitted_packets: sent.omitted.map(|o| o.packets),
                omitted_bytes: sent.omitted.map(|o| o.bytes),
                too_big: (sent.too_big > 0).then_some(sent.too_big),
                ..sent_stats(spec, &sent.tx)
            },
            received_omitted: r.as_ref().and_then(|r| r.omitted),
            zerocopy: sent.zerocopy,
            reservation: None,
            rtt: (spec.meter == Meter::Rtt).then(|| match &sent.echoes {
                Some(echoes) => echoes.summary(Some(packets)),
                None => FlowMeter::new(u32::from(id)).summary(Some(packets)),
            }),
            receiver_hold: sent.hold,
            malformed_at_receiver: r.as_ref().map(|r| r.malformed),
            error: sent.error,
            unlogged_records: logged.then_some(sent.unlogged),
            stamp: None,
            delay_cdf_ns,
            received_rtp: r.as_ref().and_then(|r| r.rtp),
            intervals_error: r.as_mut().and_then(|r| r.intervals_error.take()),
            intervals: r.as_mut().and_then(|r| r.intervals.take()),
            received: r.map(|r| r.summary),
            tcp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meter::{RxRecord, TxRecord};
    use wire::control::Omitted;

    /// Three packets of 512 bytes sent at 0, 1 and 2 ms, each 1 µs after its deadline.
    fn sent() -> SenderFlow {
        let mut tx = TxMeter::default();
        for seq in 0..3 {
            tx.handle_record(&TxRecord {
                flow: 7,
                seq,
                size_bytes: 512,
                scheduled_ns: seq * 1_000_000,
                actual_ns: seq * 1_000_000 + 1_000,
            });
        }
        let mut omitted = meter::omit::TxOmit::new(1_000_000);
        (omitted.packets, omitted.bytes) = (2, 1_024);
        SenderFlow {
            tx,
            unlogged: 5,
            omitted: Some(omitted),
            error: Some("cut short".into()),
            ..SenderFlow::empty()
        }
    }

    fn echo(seq: u64, rtt_ns: u64) -> RxRecord {
        RxRecord {
            flow: 7,
            seq,
            size_bytes: 512,
            tx_ns: seq * 1_000_000,
            rx_ns: seq * 1_000_000 + rtt_ns,
            tos: None,
            hop_limit: None,
            flow_label: None,
            kernel_ts: false,
            rtp_ts: None,
        }
    }

    /// The receiver's result for flow 7: two packets, 4 malformed, a series, a CDF.
    fn received() -> ReceivedFlow {
        let mut m = FlowMeter::new(7);
        m.handle_record(&echo(0, 40_000));
        m.handle_record(&echo(2, 60_000));
        ReceivedFlow {
            id: 7,
            summary: m.summary(Some(3)),
            malformed: 4,
            rtp: None,
            intervals: Some(Vec::new()),
            intervals_error: None,
            delay_cdf_ns: Some(vec![-1]),
            omitted: Some(Omitted {
                omitted_packets: 1,
                omitted_bytes: 512,
                counted_from_seq: Some(1),
            }),
            reservation: None,
        }
    }

    #[test]
    fn a_one_way_flow_has_what_it_sent_and_what_the_receiver_reported() {
        let spec = FlowSpec::default();
        let o = FlowOutcome::assemble(7, &spec, sent(), Some(received()), None, true, true);
        assert_eq!(o.id, 7);
        assert_eq!((o.sent.packets, o.sent.bytes), (3, 1_536));
        assert_eq!(
            (o.sent.omitted_packets, o.sent.omitted_bytes),
            (Some(2), Some(1_024))
        );
        assert_eq!(o.sent.duration_ns, Some(2_000_000));
        assert_eq!(o.sent.requested_pps, Some(1_000.0));
        assert_eq!(o.sent.schedule_error.unwrap().max_ns, 1_000);
        let got = o.received.as_ref().unwrap();
        assert_eq!((got.packets, got.loss.lost), (2, 1));
        assert_eq!(o.malformed_at_receiver, Some(4));
        assert_eq!(o.intervals, Some(Vec::new()));
        assert_eq!(o.received_omitted.unwrap().omitted_packets, 1);
        // The one-way delay's CDF is the receiver's; no round trip is measured here.
        assert_eq!(o.delay_cdf_ns, Some(vec![-1]));
        assert_eq!((o.rtt, o.receiver_hold), (None, None));
        assert_eq!(o.unlogged_records, Some(5));
        assert_eq!(o.error.as_deref(), Some("cut short"));
        assert_eq!(o.sent.too_big, None);
        let df = SenderFlow {
            too_big: 2,
            ..sent()
        };
        let o2 = FlowOutcome::assemble(7, &spec, df, None, None, false, false);
        assert_eq!((o2.sent.packets, o2.sent.too_big), (3, Some(2)));
        // Without --cdf and --log, neither.
        let o = FlowOutcome::assemble(7, &spec, sent(), Some(received()), None, false, false);
        assert_eq!((o.delay_cdf_ns, o.unlogged_records), (None, None));
    }

    #[test]
    fn a_round_trip_flow_has_its_echoes_and_every_packet_lost_without_them() {
        let spec = FlowSpec {
            meter: Meter::Rtt,
            ..FlowSpec::default()
        };
        let mut echoes = FlowMeter::new(7);
        echoes.handle_record(&echo(1, 50_000));
        let with = SenderFlow {
            echoes: Some(echoes),
            ..sent()
        };
        let o = FlowOutcome::assemble(7, &spec, with, Some(received()), None, true, false);
        let rtt = o.rtt.unwrap();
        assert_eq!((rtt.packets, rtt.loss.sent, rtt.loss.lost), (1, Some(3), 2));
        assert_eq!(rtt.delay.unwrap().max_ns, 50_000);
        // The CDF is the round trip's, from the echoes, not the receiver's.
        let cdf = o.delay_cdf_ns.unwrap();
        assert_eq!(cdf.len(), 101);
        assert_ne!(cdf, vec![-1]);
        // No echoes at all, and no receiver: every packet sent is lost on the round trip.
        let o = FlowOutcome::assemble(7, &spec, sent(), None, None, true, false);
        let rtt = o.rtt.unwrap();
        assert_eq!((rtt.packets, rtt.loss.lost), (0, 3));
        assert_eq!(o.delay_cdf_ns, None);
        assert_eq!((o.received, o.malformed_at_receiver), (None, None));
        assert_eq!((o.intervals, o.received_omitted), (None, None));
    }

    #[test]
    fn the_sent_total_counts_the_omitted_packets_too() {
        assert_eq!(sent().sent_total(), (5, 2_560));
        assert_eq!(SenderFlow::empty().sent_total(), (0, 0));
    }
}
