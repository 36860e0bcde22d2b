//! One pass over a per-packet log ([`meter::LogReader`], over any `Read`): every record
//! goes into the streaming meters as it is read (the live receiver's and sender's, so
//! the figures are theirs), in memory that does not grow with the log. Opening the
//! file, and undoing its compression, is the caller's.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};

use meter::log::{Entry, LogReader};
use meter::{IntervalError, IntervalSeries, SummaryMeter, TxMeter};

use wire::control::Meter;

use super::{DecodeDoc, LogEnd, DECODE_FORMAT_VERSION};
use crate::log::{LogFlow, LogMeta};

/// What to decode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Only this flow.
    pub flow: Option<u32>,
    /// Also a series of windows this long (ns), keyed on receive time.
    pub interval_ns: Option<u64>,
    /// How the stream was compressed (`"zstd"`), for [`LogEnd::compression`].
    pub compression: Option<String>,
}

/// A log decoded: everything [`DecodeDoc`] holds and the text reports show.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    /// [`DecodeDoc::meta`].
    pub meta: Option<LogMeta>,
    /// [`DecodeDoc::flow_info`].
    pub flow_info: BTreeMap<u32, LogFlow>,
    /// [`DecodeDoc::summary`].
    pub summary: meter::Summary,
    /// [`DecodeDoc::sent`].
    pub sent: BTreeMap<u32, meter::SentSummary>,
    /// [`DecodeDoc::schedule_error`].
    pub schedule_error: BTreeMap<u32, meter::ScheduleError>,
    /// [`DecodeDoc::intervals`].
    pub intervals: Option<Vec<meter::Interval>>,
    /// Their windows' length (ns), [`DecodeOptions::interval_ns`].
    pub interval_ns: Option<u64>,
    /// [`DecodeDoc::received_rtp`].
    pub received_rtp: BTreeMap<u32, meter::RtpJitterSummary>,
    /// [`DecodeDoc::log_end`].
    pub end: LogEnd,
    /// A sender's log (`tool` is `dualperf send`): its arrivals are the echoes of its
    /// round-trip flows.
    pub sender_log: bool,
    /// Flows with a record in the log (received or sent).
    pub flows_seen: BTreeSet<u32>,
}

impl Decoded {
    /// The `decode --json` document of the log at `log`.
    pub fn into_doc(self, log: std::path::PathBuf) -> DecodeDoc {
        DecodeDoc {
            format_version: DECODE_FORMAT_VERSION,
            log,
            meta: self.meta,
            flow_info: self.flow_info,
            summary: self.summary,
            sent: self.sent,
            schedule_error: self.schedule_error,
            intervals: self.intervals,
            received_rtp: self.received_rtp,
            log_end: Some(self.end),
        }
    }
}

/// Everything read from the log before the figures are taken.
struct Fed {
    rx: SummaryMeter,
    tx: BTreeMap<u32, TxMeter>,
    info: BTreeMap<u32, LogFlow>,
    ended: BTreeSet<u32>,
    last_flow: Option<u32>,
}

/// Decodes the log `reader` reads, in one pass. `stream_error` says, once the reader is
/// done, whether the stream under it ended badly (a damaged or cut compressed stream):
/// a damaged end too. Fails only on an `interval_ns` no series can have.
pub fn decode<R: Read>(
    reader: &mut LogReader<R>,
    options: &DecodeOptions,
    stream_error: impl FnOnce() -> Option<String>,
) -> Result<Decoded, IntervalError> {
    let meta = LogMeta::parse(reader.meta_json());
    let version = reader.header().version;
    let mut rx = SummaryMeter::new();
    if let Some(w) = options.interval_ns {
        rx = rx.with_intervals(IntervalSeries::new(w)?);
    }
    let mut end = LogEnd {
        format_version: version,
        compression: options.compression.clone(),
        ..LogEnd::default()
    };
    let fed = feed(reader, options.flow, rx, &mut end);
    end.bytes_read = reader.offset();
    end.truncated_tail_bytes = reader.truncated_tail_bytes();
    // A compressed stream that ended early (damaged or cut) is a damaged end too.
    end.error = end.error.take().or_else(stream_error);
    let cut_short = end.truncated_tail_bytes > 0 || end.error.is_some();
    let flows_seen: BTreeSet<u32> = fed.rx.flow_ids().chain(fed.tx.keys().copied()).collect();
    // Which flows the end of the log cut off: in version 3 every flow without its end
    // entry; before, flows were written whole, so only the last one, if the file ends
    // in a partial or damaged entry.
    end.cut_flows = if version >= 3 {
        let seen: BTreeSet<u32> = fed.info.keys().chain(&flows_seen).copied().collect();
        seen.difference(&fed.ended).copied().collect()
    } else {
        fed.last_flow.filter(|_| cut_short).into_iter().collect()
    };
    end.complete = !cut_short && end.cut_flows.is_empty();
    let Fed { rx, tx, info, .. } = fed;

    // Sent counts: from the flow's end entry (or, before version 3, its info), else from
    // the sender's own records; none for a flow the log cut short, whose tail is unknown
    // rather than lost. A sender's log holds arrivals only for round-trip flows (the
    // echoes): for its one-way flows there is nothing to lose, and counting their
    // packets as sent would report them all lost.
    let sender_log = meta.as_ref().and_then(|m| m.tool.as_deref()) == Some("dualperf send");
    let arrivals_expected = |id: u32| {
        !sender_log
            || info
                .get(&id)
                .is_some_and(|i| i.spec.as_ref().is_some_and(|s| s.meter == Meter::Rtt))
    };
    let mut sent: BTreeMap<u32, u64> = info
        .iter()
        .filter(|(id, _)| arrivals_expected(**id) && !end.cut_flows.contains(id))
        .filter_map(|(id, i)| Some((*id, i.sent_packets.flatten()?)))
        .collect();
    for (id, t) in &tx {
        if arrivals_expected(*id) && !end.cut_flows.contains(id) {
            sent.entry(*id).or_insert(t.packets());
        }
    }
    Ok(Decoded {
        summary: rx.summary(&sent),
        received_rtp: rx.rtp(),
        intervals: rx.intervals().transpose()?,
        interval_ns: options.interval_ns,
        schedule_error: tx
            .iter()
            .filter_map(|(id, t)| Some((*id, t.schedule_error()?)))
            .collect(),
        sent: tx.iter().map(|(id, t)| (*id, t.sent_summary())).collect(),
        meta,
        flow_info: info,
        end,
        sender_log,
        flows_seen,
    })
}

/// Reads every entry of `flow` (or every flow's) into the meters, counting records in
/// `end` and noting there what stopped the reading.
fn feed<R: Read>(
    reader: &mut LogReader<R>,
    flow: Option<u32>,
    rx: SummaryMeter,
    end: &mut LogEnd,
) -> Fed {
    let wanted = |id: u32| flow.is_none_or(|f| f == id);
    let mut fed = Fed {
        rx,
        tx: BTreeMap::new(),
        info: BTreeMap::new(),
        ended: BTreeSet::new(),
        last_flow: None,
    };
    loop {
        let entry = match reader.next_entry() {
            Ok(Some(entry)) => entry,
            Ok(None) => break,
            Err(e) => {
                end.error = Some(format!("{e}"));
                break;
            }
        };
        match entry {
            Entry::FlowInfo { flow, json } if wanted(flow) => {
                let info = LogFlow::parse(&json).unwrap_or_default();
                // RTP flows: the RFC 3550 §6.4.1 jitter against the RTP timestamps the
                // receiver logged, with the media clock it was announced.
                if let Some(hz) = info.announce.as_ref().and_then(|a| a.rtp_clock_hz) {
                    fed.rx.set_rtp_clock(flow, hz);
                }
                fed.info.insert(flow, info);
            }
            Entry::FlowEnd { flow, json } if wanted(flow) => {
                let end = LogFlow::parse(&json).unwrap_or_default();
                fed.info.entry(flow).or_default().merge(end);
                fed.ended.insert(flow);
            }
            Entry::Rx(r) if wanted(r.flow) => {
                fed.rx.handle_record(&r);
                end.rx_records += 1;
                end.last_rx_ns = end.last_rx_ns.max(Some(r.rx_ns));
                fed.last_flow = Some(r.flow);
            }
            Entry::Tx(t) if wanted(t.flow) => {
                fed.tx.entry(t.flow).or_default().handle_record(&t);
                end.tx_records += 1;
                fed.last_flow = Some(t.flow);
            }
            _ => {}
        }
    }
    fed
}

/// Writes every record of `flow` (or every flow's) as CSV, in file order, streamed
/// (`decode --packets`); an unknown field is empty. Returns how the log ended
/// ([`decode`]'s `stream_error` included) and whether any record was written.
pub fn packet_csv<R: Read>(
    reader: &mut LogReader<R>,
    flow: Option<u32>,
    out: &mut impl Write,
    stream_error: impl FnOnce() -> Option<String>,
) -> std::io::Result<(LogEnd, bool)> {
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    writeln!(
        out,
        "kind,flow,seq,size_bytes,tx_ns,rx_ns,scheduled_ns,actual_ns,tos,hop_limit,flow_label,kernel_ts"
    )?;
    let mut any = false;
    let mut end = LogEnd::default();
    loop {
        let entry = match reader.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                end.error = Some(e.to_string());
                break;
            }
        };
        match entry {
            Entry::Rx(r) if flow.is_none_or(|f| f == r.flow) => {
                any = true;
                end.rx_records += 1;
                writeln!(
                    out,
                    "rx,{},{},{},{},{},,,{},{},{},{}",
                    r.flow,
                    r.seq,
                    r.size_bytes,
                    r.tx_ns,
                    r.rx_ns,
                    opt(r.tos.map(u64::from)),
                    opt(r.hop_limit.map(u64::from)),
                    opt(r.flow_label.map(u64::from)),
                    u8::from(r.kernel_ts),
                )?;
            }
            Entry::Tx(t) if flow.is_none_or(|f| f == t.flow) => {
                any = true;
                end.tx_records += 1;
                writeln!(
                    out,
                    "tx,{},{},{},,,{},{},,,,",
                    t.flow, t.seq, t.size_bytes, t.scheduled_ns, t.actual_ns
                )?;
            }
            _ => {}
        }
    }
    out.flush()?;
    end.bytes_read = reader.offset();
    end.truncated_tail_bytes = reader.truncated_tail_bytes();
    end.error = end.error.take().or_else(stream_error);
    end.complete = end.truncated_tail_bytes == 0 && end.error.is_none();
    Ok((end, any))
}

#[cfg(test)]
mod tests {
    use super::*;
    use meter::{LogWriter, RxRecord, TxRecord};

    /// A receiver's log of flow 7: 4 sent, seq 2 lost, with its info and end entries.
    fn receiver_log() -> Vec<u8> {
        let mut w = LogWriter::new(Vec::new(), r#"{"tool":"dualperf recv"}"#).unwrap();
        let announce = wire::control::FlowAnnounce {
            label: "flow 0".into(),
            ..wire::control::FlowAnnounce::default()
        };
        let info = serde_json::json!({"flow_id": 1, "announce": announce, "peer": "198.18.0.1"});
        w.write_flow(7, &info.to_string()).unwrap();
        for seq in [0u64, 1, 3] {
            w.write_rx(&RxRecord {
                flow: 7,
                seq,
                size_bytes: 100,
                tx_ns: 1_000_000 * seq,
                rx_ns: 1_000_000 * seq + 50_000,
                ..RxRecord::default()
            })
            .unwrap();
        }
        w.write_flow_end(7, r#"{"flow_id":1,"sent_packets":4}"#)
            .unwrap();
        w.into_inner().unwrap()
    }

    #[test]
    fn a_whole_log_is_summarised_with_the_sent_count_of_its_end_entry() {
        let bytes = receiver_log();
        let mut reader = LogReader::open(&bytes[..]).unwrap();
        let d = decode(&mut reader, &DecodeOptions::default(), || None).unwrap();
        assert!(d.end.complete && d.end.cut_flows.is_empty());
        assert_eq!((d.end.rx_records, d.end.tx_records), (3, 0));
        assert_eq!(d.end.bytes_read, bytes.len() as u64);
        let flow = d.summary.flow(7).unwrap();
        assert_eq!(
            (flow.packets, flow.loss.sent, flow.loss.lost),
            (3, Some(4), 1)
        );
        // The end entry merged into the flow's info.
        assert_eq!(d.flow_info[&7].sent_packets, Some(Some(4)));
        assert_eq!(d.flow_info[&7].meter(), Some(Meter::Owd));
        assert!(!d.sender_log);
        assert_eq!(d.flows_seen, BTreeSet::from([7]));
        let text = super::super::text::text(&d);
        assert!(
            text.starts_with("flow 7: udp, meter owd, \"flow 0\", from 198.18.0.1\n")
                && text.contains("  lost            1 of 4 expected (25.000 %); 1 bursts,"),
            "{text}"
        );
    }

    #[test]
    fn a_log_cut_before_a_flows_end_counts_no_loss_for_it_and_says_where_it_ends() {
        let mut bytes = receiver_log();
        // Cut inside the end entry: the flow has no end, so no sent count.
        bytes.truncate(bytes.len() - 5);
        let mut reader = LogReader::open(&bytes[..]).unwrap();
        let d = decode(&mut reader, &DecodeOptions::default(), || None).unwrap();
        assert!(!d.end.complete);
        assert_eq!(d.end.cut_flows, [7]);
        assert!(d.end.truncated_tail_bytes > 0);
        assert_eq!(d.summary.flow(7).unwrap().loss.sent, None);
        // A damaged compressed stream under the reader is a damaged end too.
        let mut reader = LogReader::open(&bytes[..]).unwrap();
        let d = decode(&mut reader, &DecodeOptions::default(), || {
            Some("zstd: bad frame".into())
        })
        .unwrap();
        assert_eq!(d.end.error.as_deref(), Some("zstd: bad frame"));
        assert!(
            super::super::text::cut_sentence(&d.end).ends_with(
                ", then a damaged entry (zstd: bad frame); flow(s) 7 have no end entry: their figures cover the records up to the cut, and packets after it are not counted as lost."
            ),
            "{}",
            super::super::text::cut_sentence(&d.end)
        );
    }

    #[test]
    fn packets_are_listed_in_file_order_and_one_flow_can_be_chosen() {
        let mut w = LogWriter::new(Vec::new(), "{}").unwrap();
        w.write_tx(&TxRecord {
            flow: 1,
            seq: 0,
            size_bytes: 64,
            scheduled_ns: 10,
            actual_ns: 12,
        })
        .unwrap();
        w.write_rx(&RxRecord {
            flow: 2,
            seq: 5,
            size_bytes: 80,
            tx_ns: 100,
            rx_ns: 150,
            tos: Some(0xb8),
            ..RxRecord::default()
        })
        .unwrap();
        let bytes = w.into_inner().unwrap();
        let mut out = Vec::new();
        let mut reader = LogReader::open(&bytes[..]).unwrap();
        let (end, any) = packet_csv(&mut reader, None, &mut out, || None).unwrap();
        assert!(any && end.complete);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "kind,flow,seq,size_bytes,tx_ns,rx_ns,scheduled_ns,actual_ns,tos,hop_limit,flow_label,kernel_ts\n\
             tx,1,0,64,,,10,12,,,,\n\
             rx,2,5,80,100,150,,,184,,,0\n"
        );
        let mut reader = LogReader::open(&bytes[..]).unwrap();
        let (end, any) = packet_csv(&mut reader, Some(3), &mut Vec::new(), || None).unwrap();
        assert!(!any);
        assert_eq!((end.rx_records, end.tx_records), (0, 0));
    }
}
