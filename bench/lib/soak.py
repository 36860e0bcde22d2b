#!/usr/bin/env python3
"""Helpers for bench/soak.sh: one result row per run from `dualperf send
--json`, the receiver's `recv --json` lines and `/usr/bin/time -v`; the
comparison of `dualperf decode --json` with the live receiver; the report.

Not meant to be used on its own; see bench/README.md.  Standard library only
(python3's json keeps 64-bit integers exact, jq 1.6 does not).

Result rows are JSON lines appended to a results file, one per run:
  {"point", "family", "variant", "rate", "duration", "sent", "send_s",
   "rate_pps", "loss_pct", "received", "sched_p99_ns", "rss_recv_kb",
   "rss_send_kb", "outside_window", "unlogged_send", "unlogged_recv",
   "sustainable", "achieved_pct", "error"}
A field the binary does not print yet is null and shows as "-".
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtool import ContractError, _get as get, _num as num  # noqa: E402

# Goal of the issue: peak RSS < 64 MB + 16 KB per flow (MB = 1024 KB, as
# /usr/bin/time reports KB); schedule-error p99 at SOAK_RATE within 2x of
# REF_RATE's.
RSS_BASE_KB = 64 * 1024
RSS_PER_FLOW_KB = 16
P99_MAX_RATIO = 2.0
# Sustainable (search): achieved send rate >= 99 % of requested, loss <= 0.1 %.
MIN_ACHIEVED = 0.99
MAX_LOSS_PCT = 0.1


def err(msg):
    print(f"soak: {msg}", file=sys.stderr)


def opt(obj, path):
    """A field that may be absent in this binary: its value or None."""
    try:
        return get(obj, path)
    except ContractError:
        return None


def load_doc(path):
    """The JSON object on stdout (the last line that parses, if mixed)."""
    with open(path) as f:
        text = f.read()
    if not text.strip():
        raise ContractError(f"{path}: empty (expected a JSON document)")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    continue
    raise ContractError(f"{path}: not JSON: " + text.strip()[:200])


def recv_flow(path):
    """The data of the (first non-empty) flow line of `recv --json`."""
    flows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and doc.get("type") == "flow":
                flows.append(doc.get("data") or {})
    if not flows:
        raise ContractError(f"{path}: no {{\"type\":\"flow\"}} line")
    for fl in flows:
        if (opt(fl, ["summary", "packets"]) or 0) > 0:
            return fl
    return flows[0]


def time_v(path):
    """(peak RSS KB, wall seconds) from a `/usr/bin/time -v -o` file."""
    rss = wall = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("Maximum resident set size"):
                rss = int(line.rsplit(":", 1)[1])
            elif line.startswith("Elapsed (wall clock) time"):
                parts = line.rsplit(" ", 1)[1].split(":")
                wall = 0.0
                for p in parts:
                    wall = wall * 60 + float(p)
    if rss is None:
        raise ContractError(f"{path}: no 'Maximum resident set size' line")
    return rss, wall


def sustainable(row):
    if row.get("error"):
        return False
    return (row["achieved_pct"] >= 100 * MIN_ACHIEVED
            and row["loss_pct"] is not None
            and row["loss_pct"] <= MAX_LOSS_PCT)


def cmd_row(a):
    row = dict(point=a.point, family=a.family, variant=a.variant,
               rate=a.rate, duration=a.duration, error=None)
    try:
        doc = load_doc(a.send_json)
        if doc.get("interrupted") is True:
            raise ContractError("dualperf reports the run was interrupted")
        fl = get(doc, ["flows", 0])
        if fl.get("error"):
            raise ContractError(f"flows[0].error: {fl['error']}")
        sent = num(fl, ["sent", "packets"], int)
        send_s = num(fl, ["sent", "duration_ns"]) / 1e9
        row.update(
            sent=sent, send_s=send_s,
            rate_pps=num(fl, ["sent", "rate_pps"]),
            sched_p99_ns=num(fl, ["sent", "schedule_error", "p99_ns"]),
            loss_pct=num(fl, ["received", "loss", "loss_pct"]),
            received=num(fl, ["received", "packets"], int),
            outside_window=opt(fl, ["received", "loss", "outside_window"]),
            unlogged_send=opt(fl, ["unlogged_records"]),
            # achieved: packets over the requested duration, or over the
            # actual sending time if the sender overran it.
            achieved_pct=100.0 * sent / (a.rate * max(a.duration, send_s)),
            late_pct=100.0 * num(fl, ["sent", "schedule_error", "late_packets"],
                                 int) / max(sent, 1),
            steal_ms=a.steal_ms)
        row["unlogged_recv"] = None
        if a.recv_json:
            row["unlogged_recv"] = opt(recv_flow(a.recv_json),
                                       ["unlogged_records"])
        row["rss_send_kb"] = time_v(a.send_time)[0] if a.send_time else None
        row["rss_recv_kb"] = time_v(a.recv_time)[0] if a.recv_time else None
    except (ContractError, OSError, ValueError) as e:
        row["error"] = str(e)
    row["sustainable"] = sustainable(row)
    if a.results:
        with open(a.results, "a") as f:
            f.write(json.dumps(row) + "\n")
    if row["error"]:
        print(f"ERROR {a.point} v{a.family} {a.variant} {a.rate}pps: "
              f"{row['error']}")
        return 1
    print(("PASS " if row["sustainable"] else "FAIL ") +
          f"{a.point} v{a.family} {a.variant} {a.rate}pps: "
          f"achieved {row['achieved_pct']:.2f}% ({row['rate_pps']:.0f}/s) "
          f"loss {row['loss_pct']:.3f}% received {row['received']} "
          f"sched p99 {row['sched_p99_ns'] / 1e3:.1f}us "
          f"RSS recv {mb(row['rss_recv_kb'])} send {mb(row['rss_send_kb'])} MB")
    return 0


def cmd_error_row(a):
    row = dict(point=a.point, family=a.family, variant=a.variant,
               rate=a.rate, duration=a.duration, error=a.message,
               sustainable=False)
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"ERROR {a.point} v{a.family} {a.variant} {a.rate}pps: {a.message}")
    return 0


# --------------------------------------------------------------------------
# decode vs live

EQUAL_FIELDS = [
    ["packets"], ["unique_packets"], ["bytes"],
    ["loss", "lost"], ["loss", "duplicates"], ["loss", "reordered"],
    ["delay", "min_ns"], ["delay", "max_ns"], ["delay", "mean_ns"],
    ["jitter", "ditg_ns"], ["jitter", "rfc3550_ns"],
]


def percentile_paths(live, dec):
    """Percentile fields (side by side only): p50/p95/p99 of PDV, IPDV and
    delay, whichever either side has."""
    out = []
    for base in (["jitter"], ["jitter", "ipdv"], ["delay"]):
        keys = set()
        for s in (live, dec):
            d = opt(s, base)
            if isinstance(d, dict):
                keys |= {k for k in d if re.search(r"p\d+(_ns)?$", k)}
        out += [base + [k] for k in sorted(keys)]
    return out


def fmt_val(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def cmd_compare(a):
    """Decode's figures against the live receiver's: equal or DIFFERENT."""
    try:
        live = get(recv_flow(a.recv_json), ["summary"])
        doc = load_doc(a.decode_json)
        flows = get(doc, ["summary", "flows"])
        dec = next((f for f in flows if (f.get("packets") or 0) > 0), None)
        if dec is None:
            raise ContractError("decode: no flow with packets > 0 in "
                                "summary.flows")
        rss, wall = time_v(a.decode_time)
    except (ContractError, OSError, ValueError, StopIteration) as e:
        out = dict(error=str(e))
        with open(a.out, "w") as f:
            json.dump(out, f)
        print(f"ERROR decode check: {e}")
        return 1
    pairs = []
    for p in EQUAL_FIELDS:
        lv, dv = opt(live, p), opt(dec, p)
        same = lv is not None and dv is not None and lv == dv
        note = "equal" if same else "DIFFERENT"
        if (not same and isinstance(lv, (int, float))
                and isinstance(dv, (int, float)) and lv):
            note += f" (rel {abs(dv - lv) / abs(lv):.1e})"
        if lv is None or dv is None:
            note += " (missing)"
        pairs.append(dict(field=".".join(p), live=fmt_val(lv),
                          decode=fmt_val(dv), verdict=note, equal=same))
    side = [dict(field=".".join(p), live=fmt_val(opt(live, p)),
                 decode=fmt_val(opt(dec, p)))
            for p in percentile_paths(live, dec)]
    out = dict(error=None, rss_kb=rss, wall_s=wall, records=a.records,
               log_bytes=a.log_bytes, source=a.source,
               live_flow=opt(live, ["flow"]), decode_flow=dec.get("flow"),
               equal=pairs, side_by_side=side)
    with open(a.out, "w") as f:
        json.dump(out, f)
    nd = sum(not p["equal"] for p in pairs)
    print(f"decode: {a.records} records, peak RSS {mb(rss)} MB, wall "
          f"{wall:.1f}s; {len(pairs) - nd}/{len(pairs)} fields equal")
    return 0


def cmd_count(a):
    """Packets in the live receiver's flow line (records its log holds)."""
    try:
        print(int(get(recv_flow(a.recv_json), ["summary", "packets"])))
    except (ContractError, OSError, ValueError) as e:
        err(str(e))
        print(0)
    return 0


# --------------------------------------------------------------------------
# report

def mb(kb):
    return "-" if kb is None else f"{kb / 1024:.2f}"


def dash(v, fmt="{}"):
    return "-" if v is None else fmt.format(v)


def table(hdr, rows):
    widths = [max(len(str(r[i])) for r in rows + [hdr])
              for i in range(len(hdr))]
    print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def cmd_report(a):
    rows = []
    if os.path.exists(a.results):
        with open(a.results) as f:
            rows = [json.loads(l) for l in f if l.strip()]
    ref = {r["family"]: r for r in rows
           if r["point"] == "ref" and not r.get("error")}

    def ratio(r):
        rf = ref.get(r["family"])
        if r.get("error") or not rf or not rf.get("sched_p99_ns"):
            return None
        return r["sched_p99_ns"] / rf["sched_p99_ns"]

    hdr = ["point", "fam", "log", "req pkt/s", "s", "achieved pkt/s",
           "loss %", "received", "sched p99 us", "p99/ref", ">1ms %",
           "steal ms", "RSS recv MB",
           "RSS send MB", "outside win", "unlogged s/r", "note"]
    out = []
    for r in rows:
        head = [r["point"], f"v{r['family']}", r["variant"],
                f"{r['rate']:,}", f"{r['duration']:g}"]
        if r.get("error"):
            out.append(head + ["-"] * 11 + ["ERROR: " + r["error"]])
            continue
        rt = ratio(r)
        notes = []
        if r["point"] != "search" and not r["sustainable"]:
            notes.append(f"not sustained ({r['achieved_pct']:.2f}% of "
                         "requested sent)")
        if r["send_s"] > r["duration"] * 1.001:
            notes.append(f"sending took {r['send_s']:.2f}s")
        out.append(head + [
            f"{r['rate_pps']:,.0f}", f"{r['loss_pct']:.3f}",
            f"{r['received']:,}", f"{r['sched_p99_ns'] / 1e3:.1f}",
            dash(rt, "{:.2f}"), dash(r.get("late_pct"), "{:.3f}"),
            dash(r.get("steal_ms")), mb(r.get("rss_recv_kb")),
            mb(r.get("rss_send_kb")), dash(r.get("outside_window")),
            f"{dash(r.get('unlogged_send'))}/{dash(r.get('unlogged_recv'))}",
            "; ".join(notes)])
    print()
    print("== Soak: one UDP flow, 64-byte probes, loopback ==")
    table(hdr, out)
    print("(achieved = flows[0].sent.rate_pps; sched p99 = "
          "sent.schedule_error.p99_ns; p99/ref = that / the same family's "
          "reference p99;\n >1ms % = packets sent over 1 ms late "
          "(sent.schedule_error.late_packets / sent.packets); steal ms = CPU "
          "steal (/proc/stat, all CPUs) while the sender ran;\n RSS = Maximum resident set size of /usr/bin/time "
          "-v, MB = 1024 KB; outside win = received.loss.outside_window;\n "
          "unlogged s/r = records not logged by sender (flows[0]."
          "unlogged_records) / receiver (its flow line); '-' = not reported "
          "by this binary;\n log = nolog, log (--log on both sides), rxlog "
          "(--log on the receiver only))")
    if a.search and os.path.exists(a.search):
        with open(a.search) as f:
            lines = [l.strip() for l in f if l.strip()]
        if lines:
            print()
            print("Highest sustainable rate (achieved >= "
                  f"{100 * MIN_ACHIEVED:.0f}% of requested, loss <= "
                  f"{MAX_LOSS_PCT}%):")
            for l in lines:
                print("  " + l)

    # Goals.
    print()
    limit = RSS_BASE_KB + RSS_PER_FLOW_KB  # one flow
    rss = []
    for r in rows:
        if r.get("error") or r["point"] == "search":
            continue
        for side in ("recv", "send"):
            v = r.get(f"rss_{side}_kb")
            if v is not None:
                rss.append((v, f"{side} {r['point']} v{r['family']} "
                            f"{r['variant']} {r['rate']:,} pkt/s"))
    if rss:
        worst = max(rss)
        met = worst[0] < limit
        print(f"GOAL peak RSS < 64 MB + 16 KB per flow (one flow: "
              f"{limit / 1024:.2f} MB): {'met' if met else 'NOT met'} "
              f"(worst: {mb(worst[0])} MB, {worst[1]})")
    else:
        print("GOAL peak RSS: no run measured")
    ratios = []
    for r in rows:
        if r["point"] == "soak":
            ratios.append((ratio(r), f"v{r['family']} {r['variant']}"))
    if ratios and all(x is not None for x, _ in ratios):
        met = all(x <= P99_MAX_RATIO for x, _ in ratios)
        print(f"GOAL schedule-error p99 at {a.soak_rate:,} within "
              f"{P99_MAX_RATIO:g}x of {a.ref_rate:,}: "
              f"{'met' if met else 'NOT met'} (ratios "
              + ", ".join(f"{n} {x:.2f}" for x, n in ratios) + ")")
    else:
        print(f"GOAL schedule-error p99 at {a.soak_rate:,} within "
              f"{P99_MAX_RATIO:g}x of {a.ref_rate:,}: not measured (ratios "
              + ", ".join(f"{n} {dash(x, '{:.2f}')}" for x, n in ratios)
              + ")")

    # Decode.
    if a.decode:
        print()
        if not os.path.exists(a.decode):
            print(f"Decode check: {a.decode_status or 'not run'}")
            return 0
        with open(a.decode) as f:
            d = json.load(f)
        if d.get("error"):
            print(f"Decode check: ERROR {d['error']}")
            return 0
        print(f"== Decode check: dualperf decode --json of {d['source']} ==")
        print(f"log: {d['records']:,} records, {d['log_bytes'] / 1e9:.2f} GB; "
              f"decode peak RSS {mb(d['rss_kb'])} MB, wall {d['wall_s']:.1f} s"
              + (f"; {a.decode_status}" if a.decode_status else ""))
        print(f"flow: live id {d['live_flow']}, decode key {d['decode_flow']}")
        table(["field", "live recv --json", "decode --json", ""],
              [[p["field"], p["live"], p["decode"], p["verdict"]]
               for p in d["equal"]])
        if d["side_by_side"]:
            print("percentiles (side by side only):")
            table(["field", "live recv --json", "decode --json"],
                  [[p["field"], p["live"], p["decode"]]
                   for p in d["side_by_side"]])
        nd = sum(not p["equal"] for p in d["equal"])
        print(f"GOAL decode equals the live receiver: "
              f"{'met' if nd == 0 else 'NOT met'} "
              f"({len(d['equal']) - nd}/{len(d['equal'])} fields equal)")
    return 0


# --------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(s):
        s.add_argument("--point", required=True)
        s.add_argument("--family", type=int, required=True)
        s.add_argument("--variant", required=True)
        s.add_argument("--rate", type=int, required=True)
        s.add_argument("--duration", type=float, required=True)
        s.add_argument("--steal-ms", type=int, default=None,
                       help="CPU steal (ms, all CPUs) while the sender ran")

    s = sub.add_parser("row")
    common(s)
    s.add_argument("--send-json", required=True)
    s.add_argument("--recv-json")
    s.add_argument("--send-time")
    s.add_argument("--recv-time")
    s.add_argument("--results")
    s.set_defaults(fn=cmd_row)

    s = sub.add_parser("error-row")
    common(s)
    s.add_argument("--results", required=True)
    s.add_argument("--message", required=True)
    s.set_defaults(fn=cmd_error_row)

    s = sub.add_parser("count")
    s.add_argument("--recv-json", required=True)
    s.set_defaults(fn=cmd_count)

    s = sub.add_parser("compare")
    s.add_argument("--recv-json", required=True)
    s.add_argument("--decode-json", required=True)
    s.add_argument("--decode-time", required=True)
    s.add_argument("--records", type=int, required=True)
    s.add_argument("--log-bytes", type=int, required=True)
    s.add_argument("--source", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_compare)

    s = sub.add_parser("report")
    s.add_argument("--results", required=True)
    s.add_argument("--search")
    s.add_argument("--decode")
    s.add_argument("--decode-status", default="")
    s.add_argument("--soak-rate", type=int, required=True)
    s.add_argument("--ref-rate", type=int, required=True)
    s.set_defaults(fn=cmd_report)

    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
