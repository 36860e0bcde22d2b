//! What the receiver measures of one flow, and the [`FlowReport`] it becomes: the
//! receiver's threads, sockets and locks stay in the binary, which hands each flow's
//! packets here with their arrival times and takes the report when the flow ends.

use std::net::IpAddr;

use meter::{FlowMeter, IntervalSeries, RxRecord};
use wire::control::FlowAnnounce;
use wire::probe::SeqUnwrapper;

use super::FlowReport;

/// Datagrams of one flow, `n` (≥ 1) of them, alike but for the 32-bit sequence numbers
/// of their probes, `seq`, `seq + 1`, …: one datagram, or a run of one coalesced
/// receive. `record.seq` is filled in by the flow's home, which unwraps the numbers.
#[derive(Clone, Copy, Debug)]
pub struct Datagrams {
    /// The first datagram's sequence number, as its probe carries it.
    pub seq: u32,
    /// How many datagrams, numbered one after another.
    pub n: u32,
    /// What the datagrams share (size, stamps, header fields).
    pub record: RxRecord,
}

/// What a flow has measured: every figure, the sequence unwrapper, the counts. The
/// receiver keeps one per flow, in one place.
#[derive(Debug)]
pub struct FlowState {
    /// Every figure of the flow, updated as packets arrive (constant memory).
    pub meter: FlowMeter,
    /// Records the log writer could not take.
    pub unlogged: u64,
    /// Widens the probes' 32-bit sequence numbers.
    pub unwrapper: SeqUnwrapper,
    /// Malformed packets of this flow.
    pub malformed: u64,
    /// When the last packet arrived, on the receiver's monotonic clock.
    pub last_rx_mono_ns: u64,
    /// Largest delay seen, to size the wait for packets still in flight.
    pub max_delay_ns: u64,
    /// `-O/--omit`: the packets left out of the figures.
    pub omit: Option<meter::omit::RxOmit>,
}

impl FlowState {
    /// The state of flow `id`, announced as `announce`, that has received nothing; its
    /// series (if asked for) may hold at most `max_windows` windows.
    pub fn new(id: u16, announce: &FlowAnnounce, max_windows: u64) -> Self {
        let mut meter = FlowMeter::new(u32::from(id));
        if let Some(hz) = announce.rtp_clock_hz {
            // RFC 3550 §6.4.1 interarrival jitter against the RTP timestamps.
            meter = meter.with_rtp_clock(hz);
        }
        if let Some(w) = announce.interval_ns {
            // The series of one session travel in its results: no flow may build more
            // windows than a session may report.
            if let Ok(series) = IntervalSeries::with_max_windows(w, max_windows) {
                meter = meter.with_intervals(series);
            }
        }
        Self {
            meter,
            unlogged: 0,
            unwrapper: SeqUnwrapper::default(),
            malformed: 0,
            last_rx_mono_ns: 0,
            max_delay_ns: 0,
            omit: announce.omit_ns.map(meter::omit::RxOmit::new),
        }
    }

    /// Keep the largest delay (one-way here; clocks of one host, or synchronised ones).
    pub fn note_delay(&mut self, r: &RxRecord) {
        let d = u64::try_from(r.delay_ns()).unwrap_or(0);
        if d > self.max_delay_ns {
            self.max_delay_ns = d.min(5_000_000_000);
        }
    }

    /// Count `record` in the flow's figures, unless `-O` omits it.
    pub fn meter_record(&mut self, record: &RxRecord) {
        match self.omit.as_mut() {
            None => {
                self.meter.handle_record(record);
            }
            Some(omit) => {
                if let Some(counted) = omit.admit(record) {
                    self.meter.handle_record(&counted);
                }
            }
        }
    }

    /// The figures' summary, with `sent` the sender's count of the flow's packets.
    pub fn summary(&self, sent: Option<u64>) -> meter::FlowSummary {
        let sent = match &self.omit {
            Some(omit) => omit.counted_sent(sent),
            None => sent,
        };
        self.meter.summary(sent)
    }

    /// Meter datagrams `d`, which arrived at `now_mono_ns`, and hand each record to
    /// `log`. Datagrams of one coalesced receive whose numbers run on above the highest
    /// yet are metered in one step ([`FlowMeter::handle_records`], exact as one at a
    /// time), unless each must be logged or may be omitted.
    pub fn handle_datagrams(
        &mut self,
        d: &Datagrams,
        now_mono_ns: u64,
        mut log: Option<impl FnMut(&RxRecord)>,
    ) {
        let Datagrams { seq, n, record } = *d;
        self.last_rx_mono_ns = now_mono_ns;
        if n > 1 && log.is_none() && self.omit.is_none() {
            if let Some(first) = self.unwrapper.unwrap_consecutive(seq, n) {
                let record = RxRecord {
                    seq: first,
                    ..record
                };
                self.note_delay(&record);
                self.meter.handle_records(&record, u64::from(n));
                return;
            }
        }
        for k in 0..n {
            let record = RxRecord {
                seq: self.unwrapper.unwrap(seq.wrapping_add(k)),
                ..record
            };
            self.note_delay(&record);
            self.meter_record(&record);
            if let Some(log) = log.as_mut() {
                log(&record);
            }
        }
    }

    /// Whether a flow of which the sender says it sent `sent` packets is done, after
    /// its `Finish` came at `finish_mono_ns`, now `now_mono_ns`: as many distinct
    /// sequence numbers arrived as were sent (duplicates do not stand in for packets
    /// still on their way), or none arrived for max(250 ms, 2 × the flow's largest
    /// delay) counted from the later of its last packet and `Finish`. `state` is `None`
    /// while nothing has arrived.
    pub fn settled(state: Option<&Self>, sent: u64, finish_mono_ns: u64, now_mono_ns: u64) -> bool {
        // Nothing arrived yet: nothing seen, no delay known.
        // With -O, the packets numbered before the counted span are not metered.
        let (unique, last_rx_mono_ns, max_delay_ns) = state.map_or((0, 0, 0), |f| {
            let omitted = f.omit.as_ref().map_or(0, |o| o.before_counted().min(sent));
            (
                f.meter.unique_packets() + omitted,
                f.last_rx_mono_ns,
                f.max_delay_ns,
            )
        });
        let idle = now_mono_ns.saturating_sub(last_rx_mono_ns.max(finish_mono_ns));
        unique >= sent || idle > (2 * max_delay_ns).max(250_000_000)
    }

    /// The report of the finished flow `origin`, with `sent` the sender's count of its
    /// packets; `logged`: the receiver writes a log (`unlogged_records` is reported). A
    /// series asked for is reported if it fits what is left of `budget`.
    pub fn report(
        &self,
        origin: &FlowOrigin<'_>,
        sent: Option<u64>,
        logged: bool,
        budget: &mut WindowBudget,
    ) -> FlowReport {
        let announce = origin.announce;
        let mut report = FlowReport {
            id: origin.id,
            session: origin.session,
            peer: origin.peer,
            protocol: announce.protocol,
            meter: announce.meter,
            label: announce.label.clone(),
            sent_packets: sent,
            malformed: self.malformed,
            summary: self.summary(sent),
            rtp: self.meter.rtp(),
            intervals: None,
            intervals_error: None,
            unlogged_records: logged.then_some(self.unlogged),
            delay_cdf_ns: announce.cdf.then(|| self.meter.delay_cdf_ns()).flatten(),
            omitted: self.omit.as_ref().map(|o| wire::control::Omitted {
                omitted_packets: o.omitted_packets(),
                omitted_bytes: o.omitted_bytes(),
                counted_from_seq: o.counted_from_seq(),
            }),
        };
        if let Some(w) = announce.interval_ns {
            let (windows, windows_left, max) =
                (self.meter.interval_windows(), budget.left, budget.max);
            match self.meter.intervals() {
                _ if windows > windows_left => {
                    report.intervals_error = Some(format!(
                        "{windows} windows of {} exceed the {windows_left} left of the {max} a session may report: use a longer --interval",
                        wire::time::Duration::from_nanos(w)
                    ));
                }
                Some(Ok(series)) => {
                    budget.left -= windows;
                    report.intervals = Some(series);
                }
                Some(Err(e)) => {
                    report.intervals_error = Some(format!(
                        "{e} of {} a session may report: use a longer --interval",
                        wire::time::Duration::from_nanos(w)
                    ));
                }
                None => {}
            }
        }
        report
    }
}

/// Who a flow was: what its report says of it besides its figures.
#[derive(Clone, Copy, Debug)]
pub struct FlowOrigin<'a> {
    /// The flow's id in its session.
    pub id: u16,
    /// The control session it belonged to.
    pub session: u64,
    /// The sender's address.
    pub peer: IpAddr,
    /// What the sender announced.
    pub announce: &'a FlowAnnounce,
}

/// The interval windows the flows of one session may still report: their series are
/// bounded together, whatever the session's flow count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowBudget {
    /// Windows left.
    pub left: u64,
    /// Windows a session may report in all.
    pub max: u64,
}

impl WindowBudget {
    /// The budget of a session that has reported nothing yet, `max` windows.
    pub fn new(max: u64) -> Self {
        Self { left: max, max }
    }
}

#[cfg(test)]
mod tests {
    use wire::control::{Meter, Protocol};

    use super::*;

    /// Datagram `seq` of flow 7, 64 bytes, sent at `seq` ms, received 100 µs later.
    fn record(seq: u64) -> RxRecord {
        let tx_ns = 1_000_000_000 + seq * 1_000_000;
        RxRecord {
            flow: 7,
            seq,
            size_bytes: 64,
            tx_ns,
            rx_ns: tx_ns + 100_000,
            ..RxRecord::default()
        }
    }

    fn one(seq: u32) -> Datagrams {
        Datagrams {
            seq,
            n: 1,
            record: record(u64::from(seq)),
        }
    }

    fn origin(announce: &FlowAnnounce) -> FlowOrigin<'_> {
        FlowOrigin {
            id: 7,
            session: 3,
            peer: "198.18.0.1".parse().unwrap(),
            announce,
        }
    }

    #[test]
    fn a_run_is_metered_and_logged_as_its_datagrams_one_by_one() {
        let announce = FlowAnnounce::default();
        let run = Datagrams {
            seq: u32::MAX - 1,
            n: 4,
            record: record(0),
        };
        let mut batched = FlowState::new(7, &announce, 10);
        batched.handle_datagrams(&run, 55, None::<fn(&RxRecord)>);
        let mut logged = Vec::new();
        let mut singles = FlowState::new(7, &announce, 10);
        singles.handle_datagrams(&run, 55, Some(|r: &RxRecord| logged.push(r.seq)));
        assert_eq!(
            logged,
            [4_294_967_294, 4_294_967_295, 4_294_967_296, 4_294_967_297]
        );
        assert_eq!(batched.summary(Some(4)), singles.summary(Some(4)));
        assert_eq!(batched.meter.unique_packets(), 4);
        assert_eq!(
            (batched.last_rx_mono_ns, batched.max_delay_ns),
            (55, 100_000)
        );
    }

    #[test]
    fn a_flow_is_settled_by_its_count_or_after_a_quiet_spell() {
        let mut state = FlowState::new(7, &FlowAnnounce::default(), 10);
        for seq in [0, 1, 1] {
            state.handle_datagrams(&one(seq), 1_000_000_000, None::<fn(&RxRecord)>);
        }
        // A duplicate does not stand in for the third packet, still on its way.
        assert!(!FlowState::settled(
            Some(&state),
            3,
            900_000_000,
            1_100_000_000
        ));
        assert!(FlowState::settled(
            Some(&state),
            2,
            900_000_000,
            1_000_000_000
        ));
        // Quiet for 250 ms after the later of the last packet and Finish.
        assert!(!FlowState::settled(
            Some(&state),
            3,
            1_200_000_000,
            1_450_000_000
        ));
        assert!(FlowState::settled(
            Some(&state),
            3,
            1_200_000_000,
            1_450_000_001
        ));
        // Twice the largest delay when that is longer: 2 × 200 ms.
        state.note_delay(&RxRecord {
            rx_ns: record(0).tx_ns + 200_000_000,
            ..record(0)
        });
        assert_eq!(state.max_delay_ns, 200_000_000);
        assert!(!FlowState::settled(Some(&state), 3, 0, 1_400_000_000));
        assert!(FlowState::settled(Some(&state), 3, 0, 1_400_000_001));
        // Nothing arrived: quiet since Finish.
        assert!(!FlowState::settled(None, 1, 100, 250_000_100));
        assert!(FlowState::settled(None, 1, 100, 250_000_101));
        assert!(FlowState::settled(None, 0, 100, 100));
    }

    #[test]
    fn a_report_says_who_the_flow_was_and_what_it_measured() {
        let announce = FlowAnnounce {
            protocol: Protocol::Udp,
            meter: Meter::Owd,
            label: "voice".into(),
            cdf: true,
            ..FlowAnnounce::default()
        };
        let mut state = FlowState::new(7, &announce, 10);
        for seq in [0, 1, 3] {
            state.handle_datagrams(&one(seq), 0, None::<fn(&RxRecord)>);
        }
        state.malformed = 2;
        state.unlogged = 5;
        let mut budget = WindowBudget::new(10);
        let r = state.report(&origin(&announce), Some(4), true, &mut budget);
        assert_eq!(
            (r.id, r.session, r.peer.to_string(), r.label.as_str()),
            (7, 3, "198.18.0.1".into(), "voice")
        );
        assert_eq!((r.protocol, r.meter), (Protocol::Udp, Meter::Owd));
        assert_eq!(
            (r.sent_packets, r.malformed, r.unlogged_records),
            (Some(4), 2, Some(5))
        );
        assert_eq!((r.summary.packets, r.summary.loss.lost), (3, 1));
        let cdf = r.delay_cdf_ns.unwrap();
        assert_eq!((cdf.len(), cdf[0], cdf[100]), (101, 100_000, 100_000));
        assert_eq!(
            (r.rtp, r.intervals, r.intervals_error, r.omitted),
            (None, None, None, None)
        );
        assert_eq!(budget, WindowBudget::new(10), "no series asked for");
        let unlogged = state.report(&origin(&announce), None, false, &mut budget);
        assert_eq!(
            (unlogged.sent_packets, unlogged.unlogged_records),
            (None, None)
        );
    }

    #[test]
    fn the_series_of_a_session_share_its_window_budget() {
        let announce = FlowAnnounce {
            interval_ns: Some(1_000_000),
            ..FlowAnnounce::default()
        };
        // Packets 0 to 3 ms apart: 4 windows of 1 ms.
        let mut state = FlowState::new(7, &announce, 10);
        for seq in 0..4 {
            state.handle_datagrams(&one(seq), 0, None::<fn(&RxRecord)>);
        }
        let mut budget = WindowBudget::new(10);
        let first = state.report(&origin(&announce), None, false, &mut budget);
        assert_eq!(first.intervals.map(|s| s.len()), Some(4));
        assert_eq!(budget.left, 6);
        let second = state.report(&origin(&announce), None, false, &mut budget);
        assert_eq!(second.intervals.map(|s| s.len()), Some(4));
        let third = state.report(&origin(&announce), None, false, &mut budget);
        assert_eq!(third.intervals, None);
        assert_eq!(
            third.intervals_error.as_deref(),
            Some("4 windows of 1.000ms exceed the 2 left of the 10 a session may report: use a longer --interval")
        );
        assert_eq!(budget.left, 2);
        // A flow whose own series outgrew what a session may report.
        let mut long = FlowState::new(7, &announce, 10);
        for seq in [0, 20] {
            long.handle_datagrams(&one(seq), 0, None::<fn(&RxRecord)>);
        }
        let r = long.report(&origin(&announce), None, false, &mut WindowBudget::new(100));
        assert_eq!(
            r.intervals_error.as_deref(),
            Some("records span 21 windows, more than the limit of 10 of 1.000ms a session may report: use a longer --interval")
        );
    }

    #[test]
    fn omitted_warm_up_is_left_out_of_the_figures_and_reported() {
        let announce = FlowAnnounce {
            omit_ns: Some(2_000_000),
            ..FlowAnnounce::default()
        };
        let mut state = FlowState::new(7, &announce, 10);
        for seq in 0..5 {
            state.handle_datagrams(&one(seq), 0, None::<fn(&RxRecord)>);
        }
        let r = state.report(
            &origin(&announce),
            Some(6),
            false,
            &mut WindowBudget::new(10),
        );
        assert_eq!(
            r.omitted,
            Some(wire::control::Omitted {
                omitted_packets: 2,
                omitted_bytes: 128,
                counted_from_seq: Some(2),
            })
        );
        assert_eq!((r.summary.packets, r.summary.loss.lost), (3, 1));
        assert!(!FlowState::settled(Some(&state), 6, 0, 1));
        assert!(FlowState::settled(Some(&state), 5, 0, 1));
    }
}
