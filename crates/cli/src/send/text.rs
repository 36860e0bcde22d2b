//! What `dualperf send` prints without `--json`.

use results::send::SendReport;
use wire::control::Meter;

/// `dualperf send`'s results as text: one table row per flow, then notes.
pub(crate) fn send_text(report: &SendReport) -> String {
    let mut t = report::text_table::Table::new(&[
        "flow",
        "proto",
        "size B",
        "sent",
        "received",
        "lost %",
        "sent pps",
        "rx Mbit/s",
        "delay mean µs",
        "jitter µs (D-ITG)",
        "sched err p99 µs",
    ]);
    let dash = || "-".to_owned();
    for f in &report.flows {
        let summary = if f.spec.meter == Meter::Rtt {
            f.rtt.as_ref()
        } else {
            f.received.as_ref()
        };
        let rx = f.received.as_ref();
        t.row(vec![
            format!("{} {}", f.id, f.spec.label),
            format!("{:?}/{:?}", f.spec.protocol, f.spec.meter).to_lowercase(),
            f.spec.size_bytes.to_string(),
            f.sent.packets.to_string(),
            rx.map_or_else(dash, |r| r.packets.to_string()),
            rx.and_then(|r| r.loss.loss_pct)
                .map_or_else(dash, |p| format!("{p:.3}")),
            f.sent.rate_pps.map_or_else(dash, |r| format!("{r:.1}")),
            rx.and_then(|r| r.bitrate_bps)
                .map_or_else(dash, |b| format!("{:.3}", b / 1e6)),
            summary
                .and_then(|s| s.delay.as_ref())
                .map_or_else(dash, |d| format!("{:.1}", d.mean_ns / 1e3)),
            summary
                .and_then(|s| s.jitter.ditg_ns)
                .map_or_else(dash, |j| format!("{:.1}", j / 1e3)),
            f.sent
                .schedule_error
                .as_ref()
                .map_or_else(dash, |e| format!("{:.1}", e.p99_ns as f64 / 1e3)),
        ]);
    }
    let mut s = format!(
        "dualperf send to {}{}\n",
        report.dest,
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
    s.push_str(&t.render());
    for f in report.flows.iter().filter(|f| f.spec.meter == Meter::Rtt) {
        s.push_str(&format!(
            "flow {}: delay is the round trip{}\n",
            f.id,
            f.receiver_hold.map_or(String::new(), |h| format!(
                " minus the receiver's hold time (mean {:.1} µs, max {:.1} µs)",
                h.mean_ns / 1e3,
                h.max_ns as f64 / 1e3
            ))
        ));
    }
    if report.flows.len() > 1 {
        let mbit = |b: Option<f64>| b.map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b / 1e6));
        s.push_str(&format!(
            "sum of {} flows: sent {} Mbit/s, received {} Mbit/s\n",
            report.sum.flows,
            mbit(report.sum.sent.bitrate_bps),
            mbit(report.sum.received.as_ref().and_then(|r| r.bitrate_bps)),
        ));
    }
    for f in &report.flows {
        if let Some(e) = &f.intervals_error {
            s.push_str(&format!("flow {}: no interval series: {e}\n", f.id));
        }
        let Some(series) = &f.intervals else {
            continue;
        };
        s.push_str(&format!("flow {}: received per interval\n", f.id));
        let origin = series.first().map_or(0, |i| i.start_ns);
        for i in series {
            s.push_str(&format!(
                "  [{:7.2}-{:7.2} s] {:>12} bytes {:>10} Mbit/s\n",
                (i.start_ns - origin) as f64 / 1e9,
                (i.end_ns - origin) as f64 / 1e9,
                i.bytes,
                i.bitrate_bps
                    .map_or_else(|| "-".to_owned(), |b| format!("{:.3}", b / 1e6)),
            ));
        }
    }
    for f in &report.flows {
        if let Some(e) = &f.error {
            s.push_str(&format!("flow {}: ended early: {e}\n", f.id));
        }
    }
    s
}
