//! A node's RSVP counters: messages by type in and out, the state it holds, what it
//! installed and refused, and the soft-state events (timeouts, tears, refreshes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use wire::rsvp::MsgType;

/// Messages of each RSVP type (RFC 2205 §3.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ByType {
    /// Path messages.
    pub path: u64,
    /// Resv messages.
    pub resv: u64,
    /// PathErr messages.
    pub path_err: u64,
    /// ResvErr messages.
    pub resv_err: u64,
    /// PathTear messages.
    pub path_tear: u64,
    /// ResvTear messages.
    pub resv_tear: u64,
    /// ResvConf messages.
    pub resv_conf: u64,
}

impl ByType {
    /// Count one message of `kind`.
    pub fn count(&mut self, kind: MsgType) {
        *match kind {
            MsgType::Path => &mut self.path,
            MsgType::Resv => &mut self.resv,
            MsgType::PathErr => &mut self.path_err,
            MsgType::ResvErr => &mut self.resv_err,
            MsgType::PathTear => &mut self.path_tear,
            MsgType::ResvTear => &mut self.resv_tear,
            MsgType::ResvConf => &mut self.resv_conf,
        } += 1;
    }

    /// Messages of every type.
    pub fn total(&self) -> u64 {
        self.path
            + self.resv
            + self.path_err
            + self.resv_err
            + self.path_tear
            + self.resv_tear
            + self.resv_conf
    }
}

/// An RSVP node's counters (router or host). Gauges say "now"; the rest count since start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Stats {
    /// Messages handed in (parsed), by type.
    pub messages_in: ByType,
    /// Messages sent, by type.
    pub messages_out: ByType,
    /// Path states held now (a router's PSBs; a sender's flows; a receiver's senders).
    pub path_states: u64,
    /// Reservation states held now (a router's RSBs; a receiver's requested reservations).
    pub resv_states: u64,
    /// Reservations installed now (a router: merged flowspecs per interface, session and
    /// filter that `Env::admit` accepted; a sender: flows with a reservation).
    pub installed: u64,
    /// Admissions accepted (new reservations and changes), since start.
    pub admitted: u64,
    /// Refusals by ERROR_SPEC error code (1 = admission control failure, RFC 2205 App. B).
    pub refused: BTreeMap<u8, u64>,
    /// Path states removed because their lifetime L passed without a refresh.
    pub path_timeouts: u64,
    /// Reservation states removed because their lifetime L passed without a refresh.
    pub resv_timeouts: u64,
    /// Path states removed by a PathTear.
    pub path_tears: u64,
    /// Reservation states removed by a ResvTear, or with the path state of their sender
    /// (its PathTear or its timeout).
    pub resv_tears: u64,
    /// Refreshes sent on a refresh timer (Path and Resv each count one).
    pub refreshes_sent: u64,
    /// Messages that failed to parse (handed in with `handle_parse_error`), or that parsed
    /// but lack what their type needs here.
    pub malformed: u64,
    /// Messages dropped without state change or answer (an unknown session at a host, an
    /// error for state we do not hold).
    pub ignored: u64,
    /// `handle_timeout` calls that stopped at the work bound with timers still due (the rest
    /// run on the next call).
    pub deferred: u64,
}

impl Stats {
    /// Count a refusal with error `code`.
    pub fn refuse(&mut self, code: u8) {
        *self.refused.entry(code).or_default() += 1;
    }

    /// Refusals of every code.
    pub fn refused_total(&self) -> u64 {
        self.refused.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_round_trip_through_json_with_refusals_by_code() {
        let mut s = Stats::default();
        s.messages_in.count(MsgType::Path);
        s.messages_in.count(MsgType::Path);
        s.messages_out.count(MsgType::ResvErr);
        s.refuse(1);
        s.refuse(1);
        s.refuse(21);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""refused":{"1":2,"21":1}"#), "{json}");
        let back: Stats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.messages_in.path, 2);
        assert_eq!(back.messages_in.total(), 2);
        assert_eq!(back.refused_total(), 3);
        // an older document without the newer fields still reads
        let old: Stats = serde_json::from_str(r#"{"path_states":3}"#).unwrap();
        assert_eq!(old.path_states, 3);
        assert_eq!(old.refused_total(), 0);
    }

    #[test]
    fn stats_have_a_schema() {
        let schema = schemars::schema_for!(Stats);
        let text = serde_json::to_string(&schema).unwrap();
        assert!(text.contains("resv_timeouts"), "{text}");
    }
}
