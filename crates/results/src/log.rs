//! The JSON a per-packet log carries beside its records (`dualperf recv --log`,
//! `dualperf send --log`; the layout is `meter::log`'s): the header's metadata
//! ([`LogMeta`]) and each flow's entries ([`LogFlow`]: its FlowInfo, and its FlowEnd
//! merged in), as `decode --json` prints them in `meta` and `flow_info`.
//!
//! The writers (`recv`, `send`) and the reader (`decode`) share these types. A key
//! dualperf does not write (another writer's, a later version's) is kept as it is
//! in `other`; an entry that does not read as these types keeps all its keys there.

use std::collections::BTreeMap;
use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use traffic::FlowSpec;
use wire::control::FlowAnnounce;

/// Any other keys, as written.
type Other = BTreeMap<String, serde_json::Value>;

/// A log's metadata: which tool wrote it, and where. The fields are in name order, as
/// `decode --json` has always printed them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogMeta {
    /// When the receiver created the log (ns since the Unix epoch; `recv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_unix_ns: Option<u64>,
    /// Where the sender sent (`send`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dest: Option<String>,
    /// Where the receiver listened (`recv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// The writer: `dualperf recv` or `dualperf send`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The writer's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Keys dualperf does not write, as written.
    #[serde(flatten)]
    pub other: Other,
}

/// `v`'s JSON with every object's keys in name order, as logs have always held it.
fn in_name_order(v: &impl Serialize) -> String {
    serde_json::to_value(v).map_or_else(|_| "{}".to_owned(), |v| v.to_string())
}

impl LogMeta {
    /// The metadata as a log's header holds it.
    pub fn to_json(&self) -> String {
        in_name_order(self)
    }

    /// The metadata in `json`; `None` when it is not JSON at all.
    pub fn parse(json: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        Some(typed_or_kept(v, |other| Self {
            other,
            ..Self::default()
        }))
    }
}

/// What a log says of one flow: its FlowInfo entry (the receiver's `announce`, session
/// and peer, or the sender's `spec`) with its FlowEnd entry merged in (`sent_packets`,
/// `unlogged_records`), in name order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogFlow {
    /// The sender's announcement of the flow, as the receiver took it (`recv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub announce: Option<FlowAnnounce>,
    /// The flow's id in its session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<u16>,
    /// The sender's address (`recv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<IpAddr>,
    /// Packets the sender sent, from the flow's end; `null` where the receiver never
    /// learnt it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub sent_packets: Option<Option<u64>>,
    /// The control session (`recv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// The flow as the sender was asked for it (`send`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<FlowSpec>,
    /// Records the log could not keep up with, from the flow's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlogged_records: Option<u64>,
    /// Keys dualperf does not write, as written.
    #[serde(flatten)]
    pub other: Other,
}

/// A field that is there, even as `null`: `Some(None)`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// `v` as `T`, or else its keys kept by `keep` (none when it is not an object).
fn typed_or_kept<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
    keep: impl FnOnce(Other) -> T,
) -> T {
    match serde_json::from_value(v.clone()) {
        Ok(t) => t,
        Err(_) => keep(match v {
            serde_json::Value::Object(m) => m.into_iter().collect(),
            _ => Other::new(),
        }),
    }
}

impl LogFlow {
    /// The entry as a log holds it.
    pub fn to_json(&self) -> String {
        in_name_order(self)
    }

    /// A flow entry's JSON; `None` when it is not JSON at all.
    pub fn parse(json: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        Some(typed_or_kept(v, |other| Self {
            other,
            ..Self::default()
        }))
    }

    /// Takes in the flow's end entry: each key it has replaces this one's.
    pub fn merge(&mut self, end: LogFlow) {
        macro_rules! take {
            ($($f:ident),*) => {$(if end.$f.is_some() { self.$f = end.$f; })*};
        }
        take!(
            announce,
            flow_id,
            peer,
            sent_packets,
            session,
            spec,
            unlogged_records
        );
        self.other.extend(end.other);
    }

    /// The flow's meter (`owd`, `rtt`): the receiver's announcement's, or the sender's
    /// spec's.
    pub fn meter(&self) -> Option<wire::control::Meter> {
        self.announce
            .as_ref()
            .map(|a| a.meter)
            .or(self.spec.as_ref().map(|s| s.meter))
    }

    /// The flow's protocol, as [`LogFlow::meter`].
    pub fn protocol(&self) -> Option<wire::control::Protocol> {
        self.announce
            .as_ref()
            .map(|a| a.protocol)
            .or(self.spec.as_ref().map(|s| s.protocol))
    }

    /// The flow's label, as [`LogFlow::meter`].
    pub fn label(&self) -> Option<&str> {
        self.announce
            .as_ref()
            .map(|a| a.label.as_str())
            .or(self.spec.as_ref().map(|s| s.label.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `json` read and written again.
    fn again(json: &str) -> serde_json::Value {
        serde_json::to_value(LogFlow::parse(json).unwrap()).unwrap()
    }

    #[test]
    fn what_the_receiver_and_sender_write_reads_back_key_for_key() {
        let announce = FlowAnnounce {
            index: 0,
            label: "flow 0".into(),
            src_port: Some(40_000),
            ..FlowAnnounce::default()
        };
        let info = serde_json::json!({
            "flow_id": 1, "session": 3, "peer": "198.18.0.1", "announce": announce,
        });
        assert_eq!(again(&info.to_string()), info);
        // Written back byte for byte: what the log held before the entries had types.
        assert_eq!(
            LogFlow::parse(&info.to_string()).unwrap().to_json(),
            info.to_string()
        );
        let mut flow = LogFlow::parse(&info.to_string()).unwrap();
        // The receiver's end of a flow whose sent count it never learnt.
        let end = serde_json::json!({
            "flow_id": 1, "session": 3, "sent_packets": null, "unlogged_records": 0,
        });
        flow.merge(LogFlow::parse(&end.to_string()).unwrap());
        assert_eq!(flow.sent_packets, Some(None));
        let mut both = info.as_object().unwrap().clone();
        both.extend(end.as_object().unwrap().clone());
        assert_eq!(
            serde_json::to_value(&flow).unwrap(),
            serde_json::Value::Object(both)
        );
        let spec = FlowSpec::default();
        let sent = serde_json::json!({"flow_id": 2, "spec": spec});
        assert_eq!(again(&sent.to_string()), sent);
        assert_eq!(
            LogFlow::parse(&sent.to_string()).unwrap().to_json(),
            sent.to_string()
        );
        assert_eq!(
            LogFlow::parse(&sent.to_string()).unwrap().meter(),
            Some(spec.meter)
        );
    }

    #[test]
    fn keys_of_another_writer_are_kept_and_an_entry_that_does_not_read_keeps_them_all() {
        let odd = serde_json::json!({"flow_id": 1, "colour": "blue"});
        assert_eq!(again(&odd.to_string()), odd);
        // `announce` not an announcement: nothing typed, every key kept.
        let wrong = serde_json::json!({"flow_id": 1, "announce": 7});
        let flow = LogFlow::parse(&wrong.to_string()).unwrap();
        assert_eq!((flow.flow_id, flow.other.len()), (None, 2));
        assert_eq!(serde_json::to_value(&flow).unwrap(), wrong);
        assert_eq!(LogFlow::parse("not json"), None);
        let meta = serde_json::json!({"tool": "dualperf recv", "listen": "[::]:9000", "version": "0.1.0", "created_unix_ns": 5});
        assert_eq!(
            serde_json::to_value(LogMeta::parse(&meta.to_string()).unwrap()).unwrap(),
            meta
        );
    }
}
