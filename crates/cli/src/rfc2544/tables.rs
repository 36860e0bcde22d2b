//! `rfc2544`'s output: the run directory (`rfc2544.json`, `report.txt`, rewritten
//! after each completed test) and the tables, the same on stdout and in report.txt.
//! A figure at the tester's ceiling is printed "≥ N".

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use results::bmwg::{Direction, PathResult, Rfc2544Doc};
use results::text_table::Table;

use super::{path_name, Config};

/// `--dir`, or results/rfc2544-UNIXTIME (as `run` and `compare` name theirs), created.
pub(crate) fn run_dir(cfg: &Config) -> Result<PathBuf> {
    let dir = cfg.dir.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from("results").join(format!("rfc2544-{now}"))
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Writes `d` into `dir`: rfc2544.json and report.txt, each through a temporary file.
pub(crate) fn write(dir: &Path, d: &Rfc2544Doc) -> Result<()> {
    let json = serde_json::to_string_pretty(&crate::out::sorted_json(d)?)? + "\n";
    for (name, text) in [("rfc2544.json", json), ("report.txt", text(d))] {
        let tmp = dir.join(format!("{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join(name))
            .with_context(|| format!("writing {}", dir.join(name).display()))?;
    }
    Ok(())
}

/// Prints `d`: the document with `--json`, else the tables.
pub(crate) fn show(cfg: &Config, d: &Rfc2544Doc) -> Result<()> {
    if cfg.json {
        return crate::out::print_json(&crate::out::sorted_json(d)?);
    }
    crate::out::print(text(d))
}

/// `n` with thousands separators.
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate, "≥ N" when it is a lower bound.
fn fps(n: u64, lower_bound: bool) -> String {
    if lower_bound {
        format!("≥ {}", group(n))
    } else {
        group(n)
    }
}

/// µs with one decimal; `-` when undefined.
fn us(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".into(), |ns| format!("{:.1}", ns as f64 / 1000.0))
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::AToB => "a→b",
        Direction::BToA => "b→a",
        Direction::Both => "both",
    }
}

/// The entries of `d` that `has`, by path and then frame size (the document keeps the
/// order they ran in).
fn sorted(d: &Rfc2544Doc, has: impl Fn(&PathResult) -> bool) -> Vec<&PathResult> {
    let mut v: Vec<&PathResult> = d.paths.iter().filter(|p| has(p)).collect();
    v.sort_by_key(|p| (p.path as u8, p.frame_size));
    v
}

/// The tables of `d`: ceiling, throughput, latency, loss curve, back-to-back.
pub(crate) fn text(d: &Rfc2544Doc) -> String {
    let kind = serde_json::to_value(d.device.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut out = format!(
        "dualperf rfc2544: device {} ({kind}{}), tester {} on {}\n",
        d.device.name,
        d.device
            .lab
            .as_ref()
            .map_or(String::new(), |l| format!(", lab {l}")),
        d.tester.method,
        d.tester.cpu
    );
    let s = &d.settings;
    out += &format!(
        "final trials {} ms, PDR loss ≤ {}%, per-frame timeout {} ms, {}, {} ports\n",
        s.final_duration_ns / 1_000_000,
        s.pdr_ratio * 100.0,
        s.timeout_ns as f64 / 1e6,
        if s.bidirectional {
            "both directions at once (rates per direction)"
        } else {
            "port a to b only"
        },
        if s.rfc4814_ports {
            "RFC 4814 pseudorandom"
        } else {
            "fixed"
        }
    );
    if !d.tester.ceiling.is_empty() {
        let mut t = Table::new(&["family", "size", "tester ceiling fps"]);
        for c in &d.tester.ceiling {
            t.row(vec![
                if c.v6 { "ipv6" } else { "ipv4" }.into(),
                c.frame_size.to_string(),
                group(c.fps),
            ]);
        }
        out += "\nThe tester's ceiling (back to back, one core per direction):\n";
        out += &t.render();
    }
    let tp = sorted(d, |p| p.throughput.is_some());
    if !tp.is_empty() {
        let mut t = Table::new(&[
            "path",
            "size",
            "dir",
            "NDR fps",
            "PDR fps",
            "NDR Mbit/s",
            "trials",
            "converged",
        ]);
        for p in tp {
            let x = p.throughput.as_ref().expect("filtered");
            t.row(vec![
                path_name(p.path).into(),
                p.frame_size.to_string(),
                dir_name(p.direction).into(),
                fps(x.ndr_fps, x.lower_bound),
                fps(x.pdr_fps, x.lower_bound && x.pdr_fps >= x.ndr_fps),
                format!("{:.1}", x.ndr_bps as f64 / 1e6),
                x.trials.len().to_string(),
                if x.converged { "yes" } else { "no" }.into(),
            ]);
        }
        out += "\nThroughput (RFC 2544 §26.1; ≥: the tester's ceiling, the device did at least that):\n";
        out += &t.render();
    }
    let lat = sorted(d, |p| p.latency.is_some());
    if !lat.is_empty() {
        let mut t = Table::new(&[
            "path",
            "size",
            "rate fps",
            "tagged",
            "min µs",
            "median µs",
            "p99.9 µs",
            "max µs",
            "PDV µs",
            "IPDV µs",
        ]);
        for p in lat {
            let l = p.latency.as_ref().expect("filtered");
            t.row(vec![
                path_name(p.path).into(),
                p.frame_size.to_string(),
                group(l.rate_fps),
                format!("{}{}", l.samples, if l.too_few { " (< 500)" } else { "" }),
                us(l.min_ns),
                us(l.median_ns),
                us(l.p99_9_ns),
                us(l.max_ns),
                us(l.pdv_ns),
                us(l.ipdv_p99_9_ns.map(|v| v.max(0) as u64)),
            ]);
        }
        out += "\nLatency at the NDR (RFC 8219 §7.2, PDV and IPDV §7.3):\n";
        out += &t.render();
    }
    let flr = sorted(d, |p| !p.flr.is_empty());
    if !flr.is_empty() {
        let mut t = Table::new(&["path", "size", "load %", "rate fps", "loss %"]);
        for p in flr {
            for f in &p.flr {
                t.row(vec![
                    path_name(p.path).into(),
                    p.frame_size.to_string(),
                    f.percent.to_string(),
                    group(f.rate_fps),
                    format!(
                        "{:.4}{}",
                        f.loss_ratio * 100.0,
                        if f.tester_late { " (tester late)" } else { "" }
                    ),
                ]);
            }
        }
        out += "\nFrame loss rate from the tester's ceiling down (RFC 2544 §26.3):\n";
        out += &t.render();
    }
    let b2b = sorted(d, |p| p.back_to_back.is_some());
    if !b2b.is_empty() {
        let mut t = Table::new(&[
            "path",
            "size",
            "burst fps",
            "frames (mean)",
            "searches",
            "buffer µs",
        ]);
        for p in b2b {
            let b = p.back_to_back.as_ref().expect("filtered");
            let mean = format!(
                "{}{:.0}",
                if b.lower_bound { "≥ " } else { "" },
                b.frames_mean
            );
            t.row(vec![
                path_name(p.path).into(),
                p.frame_size.to_string(),
                group(b.rate_fps),
                mean,
                b.bursts.len().to_string(),
                b.buffer_time_ns
                    .map_or_else(|| "-".into(), |ns| format!("{:.1}", ns / 1000.0)),
            ]);
        }
        out += "\nBack-to-back frames (RFC 9004; buffer: the corrected DUT buffer time, §3.5):\n";
        out += &t.render();
    }
    for n in &d.notes {
        out += &format!("note: {n}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_list_paths_by_family_and_size_and_say_at_least_at_the_ceiling() {
        let tp = |ndr: u64, lb: bool| {
            serde_json::json!({"ndr_fps": ndr, "pdr_fps": ndr, "ndr_bps": 0, "pdr_bps": 0,
                "ndr_upper_fps": null, "pdr_upper_fps": null, "lower_bound": lb,
                "converged": true, "trials": []})
        };
        let d: Rfc2544Doc = serde_json::from_value(serde_json::json!({
            "schema": "dualperf.rfc2544/1",
            "device": {"name": "dut", "kind": "kernel", "lab": "dut-kernel"},
            "tester": {"method": "xdp-live-frames", "cpu": "x",
                       "ceiling": [{"frame_size": 64, "v6": false, "fps": 1_313_759, "cores": 1}]},
            "settings": {"quick": true, "initial_duration_ns": 1, "final_duration_ns": 2_000_000_000,
                         "pdr_ratio": 0.005, "precision": 0.02, "timeout_ns": 10_000_000,
                         "bidirectional": true, "rfc4814_ports": true, "ramp_ns": 1, "b2b_repeats": 5},
            "paths": [
                {"path": "ipv6", "frame_size": 1280, "direction": "both", "throughput": tp(812_345, false)},
                {"path": "ipv4", "frame_size": 64, "direction": "both", "throughput": tp(1_313_759, true)}
            ]
        }))
        .unwrap();
        let t = text(&d);
        let v4 = t.find("ipv4    64  both  ≥ 1,313,759").expect(&t);
        let v6 = t.find("ipv6  1280  both      812,345").expect(&t);
        assert!(v4 < v6, "{t}");
        assert!(
            t.starts_with("dualperf rfc2544: device dut (kernel, lab dut-kernel)"),
            "{t}"
        );
    }

    #[test]
    fn rates_group_thousands_and_lower_bounds_say_at_least() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(12_345_678), "12,345,678");
        assert_eq!(fps(1_204_000, true), "≥ 1,204,000");
        assert_eq!(fps(812_345, false), "812,345");
    }
}
