//! Happy Eyeballs version 2 connection attempts (RFC 8305 §4-§5) as a sans-IO state
//! machine in virtual time.
//!
//! The caller owns the sockets and the clock. It creates a [`HappyEyeballs`] from the
//! addresses a name resolved to (already sorted by RFC 6724, see
//! [`super::select::sort_destinations`]) and then loops, in quinn's style:
//!
//! 1. [`HappyEyeballs::poll_attempt`]: start each attempt it hands out;
//! 2. [`HappyEyeballs::poll_cancel`]: abandon each attempt it names;
//! 3. wait until [`HappyEyeballs::poll_timeout`] or a socket event, whichever is first,
//!    and report the event with [`HappyEyeballs::handle_connected`] or
//!    [`HappyEyeballs::handle_failed`];
//!
//! until [`HappyEyeballs::outcome`] is set. [`HappyEyeballs::events`] is the timeline.
//!
//! Behaviour, and where it comes from:
//!
//! - §4: the sorted list is reordered so families alternate, starting with the family of
//!   the first address, after "First Address Family Count" addresses of that family
//!   ([`interleave`]).
//! - §5: attempts start one at a time, the next one "Connection Attempt Delay" (default
//!   250 ms) after the previous started, while earlier attempts continue in parallel.
//!   The delay is clamped to [10 ms, 2 s]: "a subsequent connection MUST NOT be started
//!   within 10 milliseconds of the previous attempt" and the delay "SHOULD have an upper
//!   bound ... The current recommended value is 2 seconds". The recommended minimum of
//!   100 ms is not enforced, so that a lab can explore shorter delays.
//! - §5: "Once one of the connection attempts succeeds ..., all other connections
//!   attempts that have not yet succeeded SHOULD be canceled. Any address that was not
//!   yet attempted as a connection SHOULD be ignored."
//! - Failure before the delay expires: RFC 8305 §5 does not say what to do; its timer
//!   only bounds how long an attempt that is *still in flight* gets to itself. When the
//!   most recently started attempt fails, waiting out its head start gains nothing, so
//!   the next attempt becomes due at once, as in common implementations (e.g. Python's
//!   `asyncio` staggered race), but no earlier than 10 ms after the previous start, the
//!   §5 floor above. The failure of an older attempt does not shorten the newest one's
//!   head start.
//!
//! Not covered: the DNS side of §3 (Resolution Delay) and §6's answer changes; the
//! caller resolves first and passes the full list.

use std::collections::VecDeque;
use std::net::SocketAddr;

use wire::time::{Duration, Instant};

/// RFC 8305 §5's floor: "a subsequent connection MUST NOT be started within 10
/// milliseconds of the previous attempt".
pub const MIN_ATTEMPT_SPACING: Duration = Duration::from_millis(10);
/// RFC 8305 §5/§8: "Minimum Connection Attempt Delay ... Recommended to be 100
/// milliseconds" (advisory; not enforced, see the module documentation).
pub const RECOMMENDED_MIN_ATTEMPT_DELAY: Duration = Duration::from_millis(100);
/// RFC 8305 §5/§8: "Maximum Connection Attempt Delay ... Recommended to be 2 seconds".
pub const MAX_ATTEMPT_DELAY: Duration = Duration::from_secs(2);
/// RFC 8305 §5/§8: "Connection Attempt Delay ... Recommended to be 250 milliseconds".
pub const DEFAULT_ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// Tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// RFC 8305 §5 "Connection Attempt Delay", default 250 ms; used clamped to
    /// [`MIN_ATTEMPT_SPACING`]..=[`MAX_ATTEMPT_DELAY`] (see
    /// [`Params::effective_attempt_delay`]).
    pub attempt_delay: Duration,
    /// RFC 8305 §4 "First Address Family Count", default 1; 0 is taken as 1.
    pub first_family_count: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            attempt_delay: DEFAULT_ATTEMPT_DELAY,
            first_family_count: 1,
        }
    }
}

impl Params {
    /// The delay actually used: `attempt_delay` clamped to [10 ms, 2 s] (RFC 8305 §5).
    pub fn effective_attempt_delay(&self) -> Duration {
        self.attempt_delay
            .clamp(MIN_ATTEMPT_SPACING, MAX_ATTEMPT_DELAY)
    }
}

/// Reorder an RFC 6724-sorted list so that address families alternate (RFC 8305 §4).
///
/// The first family is the family of the first address. `first_family_count` addresses
/// of it lead (0 counts as 1); after that the families strictly alternate, one address
/// each, and whatever remains of the longer family goes last. Order within a family is
/// kept. The count applies once, at the head of the list: §4 asks that the first
/// address of the other family be "moved up in the list", and the count only says how
/// far.
pub fn interleave(sorted: &[SocketAddr], first_family_count: usize) -> Vec<SocketAddr> {
    let Some(first) = sorted.first() else {
        return Vec::new();
    };
    let first_is_v4 = first.is_ipv4();
    let mut firsts = sorted
        .iter()
        .filter(|a| a.is_ipv4() == first_is_v4)
        .copied();
    let mut others = sorted
        .iter()
        .filter(|a| a.is_ipv4() != first_is_v4)
        .copied();
    let mut out = Vec::with_capacity(sorted.len());
    out.extend(firsts.by_ref().take(first_family_count.max(1)));
    loop {
        let other = others.next();
        out.extend(other);
        let next = firsts.next();
        out.extend(next);
        if other.is_none() && next.is_none() {
            return out;
        }
    }
}

/// A connection attempt the caller should start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attempt {
    /// The attempt's id, to report its result with.
    pub id: usize,
    /// Where to connect.
    pub addr: SocketAddr,
}

/// How the race ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// An attempt succeeded.
    Connected {
        /// The winning attempt.
        id: usize,
        /// Its address.
        addr: SocketAddr,
        /// When it was reported.
        at: Instant,
    },
    /// Every address was tried and every attempt failed (or there were no addresses).
    AllFailed {
        /// When the last failure was reported.
        at: Instant,
    },
}

/// One line of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// When it happened.
    pub at: Instant,
    /// What happened.
    pub kind: EventKind,
}

/// What happened to an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The attempt was handed out by [`HappyEyeballs::poll_attempt`].
    Started {
        /// The attempt.
        id: usize,
        /// Its address.
        addr: SocketAddr,
    },
    /// The caller reported success.
    Connected {
        /// The attempt.
        id: usize,
    },
    /// The caller reported failure.
    Failed {
        /// The attempt.
        id: usize,
    },
    /// The attempt lost to another and is to be abandoned.
    Cancelled {
        /// The attempt.
        id: usize,
    },
}

/// Where an address is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    NotStarted,
    InFlight,
    Connected,
    Failed,
    Cancelled,
}

/// The Happy Eyeballs connection-attempt state machine (see the module documentation).
#[derive(Debug, Clone)]
pub struct HappyEyeballs {
    /// Addresses in attempt order; an attempt's id is its index here.
    addrs: Vec<SocketAddr>,
    states: Vec<State>,
    delay: Duration,
    /// Index of the next address to attempt.
    next: usize,
    /// When the next attempt may start; `None` once none will.
    next_due: Option<Instant>,
    /// When the latest attempt started.
    last_start: Option<Instant>,
    to_cancel: VecDeque<usize>,
    outcome: Option<Outcome>,
    events: Vec<Event>,
}

impl HappyEyeballs {
    /// Start a race over `addrs` (already sorted per RFC 6724), interleaved per
    /// [`interleave`]. The first attempt is due at `now`. With no addresses the race is
    /// over at once: [`Outcome::AllFailed`] at `now`.
    pub fn new(addrs: &[SocketAddr], params: Params, now: Instant) -> Self {
        let addrs = interleave(addrs, params.first_family_count);
        let empty = addrs.is_empty();
        HappyEyeballs {
            states: vec![State::NotStarted; addrs.len()],
            addrs,
            delay: params.effective_attempt_delay(),
            next: 0,
            next_due: (!empty).then_some(now),
            last_start: None,
            to_cancel: VecDeque::new(),
            outcome: empty.then_some(Outcome::AllFailed { at: now }),
            events: Vec::new(),
        }
    }

    /// The addresses in the order they will be attempted; an attempt's id indexes this.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The next attempt to start, if one is due at `now`. Call until `None`.
    pub fn poll_attempt(&mut self, now: Instant) -> Option<Attempt> {
        if self.outcome.is_some() || now < self.next_due? {
            return None;
        }
        let id = self.next;
        let addr = *self.addrs.get(id)?;
        let state = self.states.get_mut(id)?;
        *state = State::InFlight;
        self.next += 1;
        self.last_start = Some(now);
        // RFC 8305 §5: the Next Connection Attempt Timer is reset from this start.
        self.next_due = (self.next < self.addrs.len()).then(|| now + self.delay);
        self.events.push(Event {
            at: now,
            kind: EventKind::Started { id, addr },
        });
        Some(Attempt { id, addr })
    }

    /// When the next attempt becomes due; `None` when no attempt is pending (all started,
    /// or the race is over). Failures may make it earlier.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.outcome {
            Some(_) => None,
            None => self.next_due,
        }
    }

    /// Attempt `id` connected at `now`. The first success wins: the other attempts in
    /// flight are cancelled (see [`HappyEyeballs::poll_cancel`]) and addresses not yet
    /// tried are dropped (RFC 8305 §5). Unknown ids, attempts not in flight and reports
    /// after the outcome are ignored.
    pub fn handle_connected(&mut self, id: usize, now: Instant) {
        if self.outcome.is_some() || self.states.get(id) != Some(&State::InFlight) {
            return;
        }
        let Some(&addr) = self.addrs.get(id) else {
            return;
        };
        self.set(id, State::Connected);
        self.events.push(Event {
            at: now,
            kind: EventKind::Connected { id },
        });
        for (other, state) in self.states.iter_mut().enumerate() {
            if *state == State::InFlight {
                *state = State::Cancelled;
                self.to_cancel.push_back(other);
                self.events.push(Event {
                    at: now,
                    kind: EventKind::Cancelled { id: other },
                });
            }
        }
        self.next_due = None;
        self.outcome = Some(Outcome::Connected { id, addr, at: now });
    }

    /// Attempt `id` failed at `now`. If it was the most recently started attempt, the
    /// next one becomes due at once, but no sooner than 10 ms after that start (RFC 8305
    /// §5; see the module documentation). When nothing is left to try or in flight, the
    /// race ends in [`Outcome::AllFailed`]. Unknown ids, attempts not in flight and
    /// reports after the outcome are ignored.
    pub fn handle_failed(&mut self, id: usize, now: Instant) {
        if self.outcome.is_some() || self.states.get(id) != Some(&State::InFlight) {
            return;
        }
        self.set(id, State::Failed);
        self.events.push(Event {
            at: now,
            kind: EventKind::Failed { id },
        });
        if self.next < self.addrs.len() {
            let latest = self.next.checked_sub(1) == Some(id);
            if latest {
                let floor = self.last_start.map_or(now, |t| t + MIN_ATTEMPT_SPACING);
                let due = now.max(floor);
                self.next_due = Some(self.next_due.map_or(due, |d| d.min(due)));
            }
        } else if !self.states.contains(&State::InFlight) {
            self.outcome = Some(Outcome::AllFailed { at: now });
        }
    }

    /// The next in-flight attempt to abandon because another won. Call until `None`.
    pub fn poll_cancel(&mut self) -> Option<usize> {
        self.to_cancel.pop_front()
    }

    /// How the race ended, once it has.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Everything that happened, in order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    fn set(&mut self, id: usize, state: State) {
        if let Some(s) = self.states.get_mut(id) {
            *s = state;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn v6a() -> SocketAddr {
        sa("[2001:db8::a]:443")
    }
    fn v6b() -> SocketAddr {
        sa("[2001:db8::b]:443")
    }
    fn v4a() -> SocketAddr {
        sa("192.0.2.10:443")
    }
    fn v4b() -> SocketAddr {
        sa("192.0.2.11:443")
    }

    fn started(at: u64, id: usize, addr: SocketAddr) -> Event {
        Event {
            at: ms(at),
            kind: EventKind::Started { id, addr },
        }
    }
    fn connected(at: u64, id: usize) -> Event {
        Event {
            at: ms(at),
            kind: EventKind::Connected { id },
        }
    }
    fn failed(at: u64, id: usize) -> Event {
        Event {
            at: ms(at),
            kind: EventKind::Failed { id },
        }
    }
    fn cancelled(at: u64, id: usize) -> Event {
        Event {
            at: ms(at),
            kind: EventKind::Cancelled { id },
        }
    }

    /// Let every attempt stall and return when each started.
    fn start_times(he: &mut HappyEyeballs) -> Vec<(u64, SocketAddr)> {
        let mut out = Vec::new();
        let mut now = Instant::ZERO;
        while let Some(a) = he.poll_attempt(now) {
            out.push((now.as_nanos() / 1_000_000, a.addr));
            match he.poll_timeout() {
                Some(t) => now = t,
                None => break,
            }
        }
        out
    }

    #[test]
    fn ipv6_connecting_at_1ms_is_the_only_attempt() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        assert_eq!(he.poll_attempt(ms(0)), Some(Attempt { id: 0, addr: v6a() }));
        assert_eq!(he.poll_attempt(ms(0)), None);
        assert_eq!(he.poll_timeout(), Some(ms(250)));
        he.handle_connected(0, ms(1));
        assert_eq!(
            he.outcome(),
            Some(Outcome::Connected {
                id: 0,
                addr: v6a(),
                at: ms(1)
            })
        );
        assert_eq!(he.poll_timeout(), None);
        assert_eq!(he.poll_attempt(ms(250)), None);
        assert_eq!(he.poll_cancel(), None);
        assert_eq!(he.events(), [started(0, 0, v6a()), connected(1, 0)]);
    }

    #[test]
    fn ipv6_stalls_so_ipv4_starts_at_250ms_and_wins() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        assert_eq!(he.poll_attempt(ms(0)).map(|a| a.id), Some(0));
        assert_eq!(
            he.poll_attempt(Instant::from_nanos(250_000_000 - 1)),
            None,
            "not a nanosecond early"
        );
        assert_eq!(he.poll_timeout(), Some(ms(250)));
        assert_eq!(
            he.poll_attempt(ms(250)),
            Some(Attempt { id: 1, addr: v4a() })
        );
        assert_eq!(he.poll_timeout(), None, "nothing left to start");
        he.handle_connected(1, ms(262));
        assert_eq!(
            he.outcome(),
            Some(Outcome::Connected {
                id: 1,
                addr: v4a(),
                at: ms(262)
            })
        );
        assert_eq!(he.poll_cancel(), Some(0));
        assert_eq!(he.poll_cancel(), None);
        assert_eq!(
            he.events(),
            [
                started(0, 0, v6a()),
                started(250, 1, v4a()),
                connected(262, 1),
                cancelled(262, 0),
            ]
        );
    }

    #[test]
    fn ipv6_refused_at_3ms_moves_ipv4_up_to_the_10ms_floor() {
        // RFC 8305 §5: "a subsequent connection MUST NOT be started within 10
        // milliseconds of the previous attempt", so not at 3 ms.
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        he.poll_attempt(ms(0));
        he.handle_failed(0, ms(3));
        assert_eq!(he.poll_timeout(), Some(ms(10)));
        assert_eq!(he.poll_attempt(ms(9)), None);
        assert_eq!(
            he.poll_attempt(ms(10)),
            Some(Attempt { id: 1, addr: v4a() })
        );
        he.handle_connected(1, ms(25));
        assert_eq!(
            he.events(),
            [
                started(0, 0, v6a()),
                failed(3, 0),
                started(10, 1, v4a()),
                connected(25, 1),
            ]
        );
    }

    #[test]
    fn ipv6_refused_at_30ms_starts_ipv4_at_once() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        he.poll_attempt(ms(0));
        he.handle_failed(0, ms(30));
        assert_eq!(he.poll_timeout(), Some(ms(30)));
        assert_eq!(
            he.poll_attempt(ms(30)),
            Some(Attempt { id: 1, addr: v4a() })
        );
    }

    #[test]
    fn an_older_failure_keeps_the_newest_head_start() {
        let addrs = [v6a(), v4a(), v6b()];
        let mut he = HappyEyeballs::new(&addrs, Params::default(), ms(0));
        he.poll_attempt(ms(0));
        he.poll_attempt(ms(250));
        he.handle_failed(0, ms(300)); // v6a, not the newest
        assert_eq!(he.poll_timeout(), Some(ms(500)));
        he.handle_failed(1, ms(320)); // v4a, the newest
        assert_eq!(he.poll_timeout(), Some(ms(320)));
        assert_eq!(
            he.poll_attempt(ms(320)),
            Some(Attempt { id: 2, addr: v6b() })
        );
    }

    #[test]
    fn families_alternate_and_first_family_count_leads() {
        let sorted = [v6a(), v6b(), v4a(), v4b()];
        assert_eq!(interleave(&sorted, 1), [v6a(), v4a(), v6b(), v4b()]);
        assert_eq!(interleave(&sorted, 2), [v6a(), v6b(), v4a(), v4b()]);
        assert_eq!(interleave(&sorted, 0), interleave(&sorted, 1));
        assert_eq!(interleave(&sorted, 9), sorted);
        // The first family is whatever RFC 6724 put first.
        assert_eq!(interleave(&[v4a(), v4b(), v6a()], 1), [v4a(), v6a(), v4b()]);
        // The count applies at the head only; then strict alternation.
        let v6c = sa("[2001:db8::c]:443");
        let v6d = sa("[2001:db8::d]:443");
        assert_eq!(
            interleave(&[v6a(), v6b(), v6c, v6d, v4a(), v4b()], 2),
            [v6a(), v6b(), v4a(), v6c, v4b(), v6d]
        );
        assert_eq!(interleave(&[v6a(), v6b()], 1), [v6a(), v6b()]);
        assert_eq!(interleave(&[], 1), Vec::<SocketAddr>::new());

        let mut he = HappyEyeballs::new(&sorted, Params::default(), ms(0));
        assert_eq!(he.addrs(), [v6a(), v4a(), v6b(), v4b()]);
        assert_eq!(
            start_times(&mut he),
            [(0, v6a()), (250, v4a()), (500, v6b()), (750, v4b())]
        );
        let params = Params {
            first_family_count: 2,
            ..Params::default()
        };
        let mut he = HappyEyeballs::new(&sorted, params, ms(0));
        assert_eq!(
            start_times(&mut he),
            [(0, v6a()), (250, v6b()), (500, v4a()), (750, v4b())]
        );
    }

    #[test]
    fn all_failing_ends_at_the_last_failure() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        he.poll_attempt(ms(0));
        he.handle_failed(0, ms(5));
        assert_eq!(he.outcome(), None);
        he.poll_attempt(ms(10));
        he.handle_failed(1, ms(40));
        assert_eq!(he.outcome(), Some(Outcome::AllFailed { at: ms(40) }));
        assert_eq!(he.poll_timeout(), None);

        // Failures reported out of start order: the race ends with the last report.
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        he.poll_attempt(ms(0));
        he.poll_attempt(ms(250));
        he.handle_failed(1, ms(260));
        assert_eq!(he.outcome(), None, "v6a is still in flight");
        he.handle_failed(0, ms(3000));
        assert_eq!(he.outcome(), Some(Outcome::AllFailed { at: ms(3000) }));
    }

    #[test]
    fn the_winner_cancels_everything_in_flight() {
        let sorted = [v6a(), v6b(), v4a(), v4b()];
        let mut he = HappyEyeballs::new(&sorted, Params::default(), ms(0));
        he.poll_attempt(ms(0)); // 0: v6a
        he.poll_attempt(ms(250)); // 1: v4a
        he.poll_attempt(ms(500)); // 2: v6b
        he.handle_failed(1, ms(510));
        he.handle_connected(2, ms(515));
        assert_eq!(he.poll_cancel(), Some(0));
        assert_eq!(he.poll_cancel(), None, "1 already failed, 3 never started");
        assert_eq!(he.poll_attempt(ms(10_000)), None);
        assert_eq!(
            he.events().last().copied(),
            Some(cancelled(515, 0)),
            "cancellations are in the timeline"
        );
    }

    #[test]
    fn late_reports_are_ignored() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        he.poll_attempt(ms(0));
        he.poll_attempt(ms(250));
        he.handle_connected(1, ms(262));
        let before = (he.outcome(), he.events().to_vec());
        // The cancelled IPv6 attempt completes anyway, then fails, then repeats.
        he.handle_connected(0, ms(300));
        he.handle_failed(0, ms(301));
        he.handle_connected(1, ms(302));
        // Ids that never existed, and far out of range.
        he.handle_connected(7, ms(303));
        he.handle_failed(usize::MAX, ms(304));
        assert_eq!((he.outcome(), he.events().to_vec()), before);
    }

    #[test]
    fn reports_for_attempts_not_started_are_ignored() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], Params::default(), ms(0));
        he.handle_connected(0, ms(0)); // not started yet
        he.handle_failed(1, ms(0));
        assert_eq!(he.outcome(), None);
        assert!(he.events().is_empty());
        he.poll_attempt(ms(0));
        he.handle_failed(0, ms(20));
        he.handle_failed(0, ms(21)); // twice
        assert_eq!(he.events(), [started(0, 0, v6a()), failed(20, 0)]);
    }

    #[test]
    fn no_addresses_means_all_failed_at_once() {
        let mut he = HappyEyeballs::new(&[], Params::default(), ms(7));
        assert_eq!(he.outcome(), Some(Outcome::AllFailed { at: ms(7) }));
        assert_eq!(he.poll_attempt(ms(7)), None);
        assert_eq!(he.poll_timeout(), None);
    }

    #[test]
    fn attempt_delay_is_clamped_to_rfc8305_bounds() {
        let with = |d: Duration| {
            Params {
                attempt_delay: d,
                ..Params::default()
            }
            .effective_attempt_delay()
        };
        assert_eq!(Params::default().effective_attempt_delay(), ms(250) - ms(0));
        assert_eq!(with(Duration::ZERO), MIN_ATTEMPT_SPACING);
        assert_eq!(with(Duration::from_millis(50)), Duration::from_millis(50));
        assert_eq!(with(Duration::from_secs(10)), MAX_ATTEMPT_DELAY);

        let params = Params {
            attempt_delay: Duration::ZERO,
            ..Params::default()
        };
        let mut he = HappyEyeballs::new(&[v6a(), v4a()], params, ms(0));
        he.poll_attempt(ms(0));
        assert_eq!(he.poll_timeout(), Some(ms(10)));
    }

    #[test]
    fn a_late_poll_resets_the_timer_from_the_actual_start() {
        let mut he = HappyEyeballs::new(&[v6a(), v4a(), v6b()], Params::default(), ms(0));
        he.poll_attempt(ms(0));
        assert_eq!(he.poll_attempt(ms(400)).map(|a| a.id), Some(1));
        assert_eq!(he.poll_timeout(), Some(ms(650)));
        assert_eq!(he.events()[1], started(400, 1, v4a()));
    }
}
