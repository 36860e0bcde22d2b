//! Run records for unit tests: a real `dualperf send --json` report (a 50-packet UDP flow
//! on loopback, `tests/data/send-udp-owd.json`) with the figures a test sets.

use results::send::SendReport;
use serde_json::Value;

/// The recorded report with `patch` merged in: objects key by key, anything else
/// replacing what is there. Each element of a `flows` array patches a copy of the
/// recorded flow; an object patched onto `null` (a flow's `rtt`) starts from the flow's
/// `received` summary, so a test names only the figures it reads.
pub(crate) fn report(patch: Value) -> SendReport {
    let base: Value = serde_json::from_str(include_str!("../tests/data/send-udp-owd.json"))
        .expect("the recorded report reads");
    let mut doc = base.clone();
    if let Some(flows) = patch.get("flows").and_then(Value::as_array) {
        let flow = &base["flows"][0];
        doc["flows"] = Value::Array(
            flows
                .iter()
                .map(|p| {
                    let mut f = flow.clone();
                    merge_flow(&mut f, p);
                    f
                })
                .collect(),
        );
    }
    for (k, v) in patch.as_object().into_iter().flatten() {
        if k != "flows" {
            merge(&mut doc[k.as_str()], v);
        }
    }
    serde_json::from_value(doc).expect("a patched report reads as a SendReport")
}

fn merge_flow(flow: &mut Value, patch: &Value) {
    for (k, v) in patch.as_object().into_iter().flatten() {
        if flow[k.as_str()].is_null() && v.is_object() {
            flow[k.as_str()] = flow["received"].clone();
        }
        merge(&mut flow[k.as_str()], v);
    }
}

fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        _ => *target = patch.clone(),
    }
}
