#!/usr/bin/env python3
"""Helpers for bench/bulk-vs-iperf3.sh: parse `iperf3 -J` and
`dualperf send --tcp --bulk --json` output into result rows, and print the
final report.

Not meant to be used on its own; see bench/README.md.  Standard library only.
Free ports and port readiness come from bench/lib/benchtool.py.

Result rows are JSON lines appended to a results file, one per run:
  {"tool", "family", "config", "rep", "rx_bps", "tx_bps", "rx_bytes",
   "rx_seconds", "per_flow_bps", "cpu_snd", "cpu_rcv", "notes", "error"}
rx_bps is the receiver-side payload rate each tool reports itself:
  iperf3:   end.sum_received.bits_per_second (bytes / test duration)
  dualperf: sum.received.bitrate_bps (bytes / first->last message)
"""

import argparse
import json
import os
import statistics
import sys

TOLERANCE = 0.10  # acceptance: dualperf within 10 % of iperf3


# The JSON contract checks are benchtool's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtool import ContractError, _get as get  # noqa: E402


def num(obj, path):
    v = get(obj, path)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ContractError(f"field '{'.'.join(map(str, path))}' is not a "
                            f"number: {v!r}")
    return float(v)


def load_json(path, notes):
    """The JSON object on stdout.  If other lines come before it, the object
    starting on the first line that begins with '{' (one note is added)."""
    with open(path) as f:
        text = f.read()
    if not text.strip():
        raise ContractError("empty stdout (expected a JSON document)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc, lines = None, text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if line.startswith("{"):
                try:
                    doc = json.JSONDecoder().raw_decode("".join(lines[i:]))[0]
                except json.JSONDecodeError:
                    continue
                notes.append(f"{i} non-JSON line(s) before the JSON on stdout")
                break
    if not isinstance(doc, dict):
        raise ContractError("stdout is not a JSON object: "
                            + text.strip()[:200].replace("\n", " "))
    return doc


def parse_iperf3(doc, a):
    if doc.get("error"):
        raise ContractError(f"iperf3 error: {doc['error']}")
    notes = []
    n = get(doc, ["start", "test_start", "num_streams"])
    if n != a.parallel:
        raise ContractError(f"{n} streams reported, {a.parallel} requested")
    cc = get(doc, ["end"]).get("sender_tcp_congestion")
    if cc != a.cc:
        notes.append(f"congestion control {cc!r}, not {a.cc!r}")
    streams = get(doc, ["end", "streams"])
    per_flow = [num(s, ["receiver", "bits_per_second"]) for s in streams]
    cpu = get(doc, ["end"]).get("cpu_utilization_percent") or {}
    return dict(rx_bps=num(doc, ["end", "sum_received", "bits_per_second"]),
                tx_bps=num(doc, ["end", "sum_sent", "bits_per_second"]),
                rx_bytes=num(doc, ["end", "sum_received", "bytes"]),
                rx_seconds=num(doc, ["end", "sum_received", "seconds"]),
                per_flow_bps=per_flow, cpu_snd=cpu.get("host_total"),
                cpu_rcv=cpu.get("remote_total"), notes=notes,
                version=get(doc, ["start"]).get("version"))


def parse_dualperf(doc, a):
    if doc.get("interrupted") is True:
        raise ContractError("dualperf reports the run was interrupted")
    flows = get(doc, ["flows"])
    if not isinstance(flows, list) or len(flows) != a.parallel:
        raise ContractError(f"'flows' has {len(flows) if isinstance(flows, list) else '?'}"
                            f" entries, {a.parallel} requested")
    notes, per_flow, ivals = [], [], []
    for i, fl in enumerate(flows):
        if fl.get("error"):
            raise ContractError(f"flows[{i}].error: {fl['error']}")
        rx = fl.get("received")
        if isinstance(rx, dict) and rx.get("bitrate_bps") is None:
            raise ContractError(
                f"flows[{i}] stalled: the receiver got {rx.get('packets')} "
                f"message(s), {rx.get('bytes')} bytes, of "
                f"{get(fl, ['sent', 'packets'])} sent "
                "(received.bitrate_bps is null)")
        per_flow.append(num(fl, ["received", "bitrate_bps"]))
        num(fl, ["sent", "bitrate_bps"])
        cc = (fl.get("spec") or {}).get("congestion")
        if cc is not None and cc != a.cc:
            notes.append(f"flows[{i}].spec.congestion {cc!r}, not {a.cc!r}")
        for iv in fl.get("intervals") or []:
            if isinstance(iv, dict) and isinstance(iv.get("bitrate_bps"), (int, float)):
                ivals.append(iv["bitrate_bps"])
    rx_bytes = num(doc, ["sum", "received", "bytes"])
    rx_ns = num(doc, ["sum", "received", "duration_ns"])
    rx_bps = num(doc, ["sum", "received", "bitrate_bps"])
    if rx_ns > 0 and abs(rx_bytes * 8e9 / rx_ns - rx_bps) > 0.01 * rx_bps:
        notes.append(f"sum.received.bitrate_bps {rx_bps:.4g} != bytes*8/duration "
                     f"{rx_bytes * 8e9 / rx_ns:.4g}")
    if ivals:
        notes.append(f"{len(ivals)} intervals {min(ivals) / 1e9:.2f}-"
                     f"{max(ivals) / 1e9:.2f} Gbit/s")
    return dict(rx_bps=rx_bps, tx_bps=num(doc, ["sum", "sent", "bitrate_bps"]),
                rx_bytes=rx_bytes, rx_seconds=rx_ns / 1e9,
                per_flow_bps=per_flow, cpu_snd=None, cpu_rcv=None, notes=notes)


def base_row(a):
    return dict(tool=a.tool, family=a.family, config=a.config, rep=a.rep,
                error=None, notes=[])


def opt_float(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def cmd_row(a):
    row = base_row(a)
    try:
        pre = []
        doc = load_json(a.json, pre)
        row.update((parse_iperf3 if a.tool == "iperf3" else parse_dualperf)(doc, a))
        row["notes"] = pre + row["notes"]
        if row["rx_bps"] <= 0:
            row["error"] = "throughput is zero"
    except (ContractError, OSError) as e:
        row["error"] = f"{a.tool} JSON: {e} (raw output: {a.json})"
    for k in ("cpu_snd", "cpu_rcv"):  # the tool's own figure wins (iperf3)
        if row.get(k) is None:
            row[k] = opt_float(getattr(a, k))
    return emit(row, a.results)


def cmd_error_row(a):
    row = base_row(a)
    row["error"] = a.message
    return emit(row, a.results)


def pct(v):
    return "?" if v is None else f"{v:.0f}%"


def emit(row, results):
    with open(results, "a") as f:
        f.write(json.dumps(row) + "\n")
    head = f"IPv{row['family']} {row['config']} rep {row['rep']} {row['tool']}:"
    if row["error"]:
        print(f"ERROR {head} {row['error']}")
        return 1
    line = (f"{head} rx {row['rx_bps'] / 1e9:.2f} Gbit/s (tx "
            f"{row['tx_bps'] / 1e9:.2f}) over {row['rx_seconds']:.3f} s; cpu "
            f"snd {pct(row['cpu_snd'])} rcv {pct(row['cpu_rcv'])}")
    if len(row["per_flow_bps"]) > 1:
        line += "; per flow " + "/".join(f"{b / 1e9:.2f}" for b in row["per_flow_bps"])
    for n in row["notes"]:
        line += f"; {n}"
    print(line)
    return 0


def single_threaded(version):
    """iperf3 runs one thread per stream only from 3.16 on."""
    try:
        major, minor = version.split()[-1].split(".")[:2]
        return (int(major), int(minor.split("+")[0])) < (3, 16)
    except (ValueError, IndexError):
        return False


def cmd_report(a):
    with open(a.results) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    groups = {}
    for r in rows:  # insertion order = run order
        groups.setdefault((r["family"], r["config"]), []).append(r)
    hdr = ["family", "config", "iperf3 Gbit/s (min-max)",
           "dualperf Gbit/s (min-max)", "dp/iperf3", "pairs (min-max)",
           "verdict"]
    table, bad = [], 0
    for (fam, cfg), rs in groups.items():
        ok = {t: [r for r in rs if r["tool"] == t and not r["error"]]
              for t in ("iperf3", "dualperf")}
        errs = sum(1 for r in rs if r["error"])
        cells = [f"IPv{fam}", cfg]
        for t in ("iperf3", "dualperf"):
            v = [r["rx_bps"] / 1e9 for r in ok[t]]
            cells.append(f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
                         if v else "-")
        if ok["iperf3"] and ok["dualperf"]:
            ratio = (statistics.median(r["rx_bps"] for r in ok["dualperf"])
                     / statistics.median(r["rx_bps"] for r in ok["iperf3"]))
            by_rep = {r["rep"]: r["rx_bps"] for r in ok["iperf3"]}
            pairs = [r["rx_bps"] / by_rep[r["rep"]] for r in ok["dualperf"]
                     if r["rep"] in by_rep]
            cells += [f"{ratio:.3f}",
                      f"{min(pairs):.2f}-{max(pairs):.2f}" if pairs else "-"]
            within = abs(ratio - 1) <= TOLERANCE
            verdict = "within 10 %" if within else \
                f"NOT within 10 % ({100 * (ratio - 1):+.0f} %)"
            bad += not within
        else:
            cells += ["-", "-"]
            verdict = "no result"
            bad += 1
        if errs:
            verdict += f" [{errs} run(s) failed]"
        table.append(cells + [verdict])
    widths = [max(len(x[i]) for x in table + [hdr]) for i in range(len(hdr))]
    print()
    print(f"== Bulk TCP on loopback: dualperf vs iperf3, {a.duration} s per run, "
          f"{a.reps} run(s) per tool, alternating ==")
    print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())
    print(f"""
Throughput = receiver-side TCP payload bits per second (headers excluded), median
of the runs, min-max in brackets.  iperf3: end.sum_received.bits_per_second =
bytes received / test duration.  dualperf: sum.received.bitrate_bps = bytes
received / time from the first to the last message received.  The two
differ by the time before the first and after the last byte (well under a
millisecond on loopback), i.e. far below 1 % of a {a.duration} s run.
dp/iperf3 = dualperf median / iperf3 median; "within 10 %" means
{1 - TOLERANCE:.2f} <= dp/iperf3 <= {1 + TOLERANCE:.2f}.  pairs = dualperf / iperf3 of the same repetition.
Sender and receiver of each tool share this machine's cores: loopback rates
here move by 10-20 % from run to run; compare rows of one invocation.""")
    old = sorted({r.get("version") for r in rows if r.get("version")
                  and single_threaded(r["version"])})
    if old and any(len(r.get("per_flow_bps") or []) > 1 for r in rows):
        print(f"Note: {', '.join(old)} runs all -P streams in one thread (iperf3 "
              "is multi-threaded\nfrom 3.16); dualperf runs one thread per flow, "
              "so with several streams the ratio\nalso compares 1 thread with N.")
    return 3 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, fn in (("row", cmd_row), ("error-row", cmd_error_row)):
        s = sub.add_parser(name)
        s.add_argument("--tool", choices=["iperf3", "dualperf"], required=True)
        s.add_argument("--family", type=int, required=True)
        s.add_argument("--config", required=True)
        s.add_argument("--rep", type=int, required=True)
        s.add_argument("--results", required=True)
        if name == "row":
            s.add_argument("--json", required=True)
            s.add_argument("--parallel", type=int, required=True)
            s.add_argument("--cc", required=True)
            s.add_argument("--cpu-snd")
            s.add_argument("--cpu-rcv")
        else:
            s.add_argument("--message", required=True)
        s.set_defaults(fn=fn)
    s = sub.add_parser("report", help="exit 3 if any verdict is not within 10 %%")
    s.add_argument("--results", required=True)
    s.add_argument("--duration", required=True)
    s.add_argument("--reps", required=True)
    s.set_defaults(fn=cmd_report)
    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
