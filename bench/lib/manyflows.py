#!/usr/bin/env python3
"""Helpers for bench/many-flows.sh: one result row per run (dualperf's
`send --json` with /usr/bin/time -v of both ends; D-ITG's multi-flow logs
decoded with ITGDec; the C ceiling program), and the report.

Not meant to be used on its own; see bench/README.md.  Standard library
only; JSON parsing and `time -v` reading are shared with soak.py /
benchtool.py.

Result rows are JSON lines appended to a results file, one per run:
  {"case", "label", "tool", "family", "flows", "duration", "planned",
   "sent", "received", "delivered_pct", "on_time_pct", "otd", "otd_upper",
   "p99_median_ns", "p99_p90_ns", "p99_worst_ns", "gap_median_us",
   "rx_pps", "rss_send_kb", "rss_recv_kb", "cpu_send_pct", "cpu_recv_pct",
   "steal_ms", "note", "error"}
A figure the run does not define is null and shows as "-".

On-time delivered ("otd"), the D-ITG comparison's figure:
  D-ITG    per flow, the schedule is its first packet's send time plus
           k / rate (k = seq - first seq); a packet is on time when its send
           time (ITGDec's txTime, from the sender log) is at most LATE_NS
           after that; otd = packets of the receiver log (flow, seq; unique)
           that were sent on time.
  dualperf per flow, late = sent.schedule_error.late_packets (more than
           late_threshold_ns = 1 ms after the packet's deadline); without
           per-packet logs the overlap of "received" and "on time" is only
           known to within the loss: otd = sum(max(0, received - late)) (every
           late packet assumed delivered: the lower bound, reported) and
           otd_upper = sum(min(received, sent - late)); equal when no packet
           was lost.
  Both as a share of the packets planned: flows x rate x duration (dualperf:
  sum of flows[].sent.planned_packets), so a sender that falls behind and
  sends fewer packets scores lower.
"""

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtool import (ContractError, _get as get, _num as num,  # noqa: E402
                       _bindable, itgdec_total)
from soak import load_doc, opt, time_v, mb, dash, table  # noqa: E402
from soak import RSS_BASE_KB, RSS_PER_FLOW_KB  # noqa: E402  (issue 14's memory goal)

LATE_NS = 1_000_000          # on time: no more than 1 ms after the schedule
# Goals of the 10,000-flow case (issue 15).
GOAL_DELIVERED_PCT = 99.9
GOAL_MEDIAN_P99_NS = 100_000
GOAL_WORST_P99_NS = 1_000_000
# "A second core helps" when 16 flows with the default sender threads get at
# least this much more through than with --threads 1.
CORE_HELPS_RATIO = 1.10


def err(msg):
    print(f"manyflows: {msg}", file=sys.stderr)


def nearest_rank(sorted_vals, p):
    """The ceil(p*n)-th smallest (as dualperf's FlowQuantiles)."""
    n = len(sorted_vals)
    return sorted_vals[min(max(math.ceil(p * n), 1), n) - 1]


def spread(values):
    """(median, p90, worst) of per-flow values, or (None,)*3."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None, None, None
    return nearest_rank(v, 0.5), nearest_rank(v, 0.9), v[-1]


def cpu_pct(path):
    """'Percent of CPU this job got' of a /usr/bin/time -v file, or None."""
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("Percent of CPU this job got"):
                    v = line.rsplit(":", 1)[1].strip().rstrip("%")
                    return float(v) if v.replace(".", "", 1).isdigit() else None
    except OSError:
        pass
    return None


def write_row(results, row):
    with open(results, "a") as f:
        f.write(json.dumps(row) + "\n")


def base_row(a, tool):
    return dict(case=a.case, label=a.label, tool=tool, family=a.family,
                flows=a.flows, duration=a.duration, rate=a.rate, error=None,
                note="")


# --------------------------------------------------------------------------
# dualperf

def dualperf_figures(doc, want_flows, duration, flat_out=False):
    """The row's figures from a `dualperf send --json` document."""
    if doc.get("interrupted") is True:
        raise ContractError("dualperf reports the run was interrupted")
    flows = get(doc, ["flows"])
    if not isinstance(flows, list) or not flows:
        raise ContractError("'flows' is empty or not a list")
    if len(flows) != want_flows:
        raise ContractError(f"JSON lists {len(flows)} flows, {want_flows} "
                            "were asked for")
    s = get(doc, ["sum"])
    notes = []
    sent = num(s, ["sent", "packets"], int)
    if s.get("received") is None:
        raise ContractError("sum.received is null: the receiver reported no "
                            "flow")
    received = num(s, ["received", "packets"], int)
    f_err = [f.get("error") for f in flows if f.get("error")]
    if f_err:
        notes.append(f"{len(f_err)} flows with an error, e.g. {f_err[0]}")
    planned = 0
    late_sum = se_packets = otd = otd_up = 0
    p99s, gaps = [], []
    sum_sent = sum_rx = 0
    no_rx = starved = 0
    for i, f in enumerate(flows):
        fs = get(f, ["sent"])
        fsent = num(fs, ["packets"], int)
        sum_sent += fsent
        pp = opt(fs, ["planned_packets"])
        planned = None if (planned is None or pp is None) else planned + pp
        se = fs.get("schedule_error")
        late = 0
        if se is not None:
            late = num(se, ["late_packets"], int)
            se_packets += num(se, ["packets"], int)
            p99s.append(num(se, ["p99_ns"]))
        late_sum += late
        rx = f.get("received")
        if rx is None:
            frx = 0
        else:
            frx = opt(rx, ["unique_packets"])
            if frx is None:
                frx = num(rx, ["packets"], int)
        sum_rx += 0 if rx is None else num(rx, ["packets"], int)
        if frx == 0:
            no_rx += 1
        elif pp and frx < 0.5 * pp:
            starved += 1
        otd += max(0, frx - late)
        otd_up += min(frx, max(0, fsent - late))
        dns = opt(fs, ["duration_ns"])
        if dns and fsent > 1:
            gaps.append(dns / 1e3 / (fsent - 1))
    if sum_sent != sent:
        notes.append(f"JSON: sum.sent.packets {sent} != sum of flows "
                     f"{sum_sent}")
    if sum_rx != received:
        notes.append(f"JSON: sum.received.packets {received} != sum of "
                     f"flows {sum_rx}")
    if no_rx:
        notes.append(f"{no_rx} flows received nothing")
    if starved and not flat_out:
        notes.append(f"{starved} flows received < 50 % of their plan")
    med, p90, worst = spread(p99s)
    sp = s.get("spread")
    on_time_pct = None
    delivered_pct = 100.0 * received / sent if sent else None
    if sp:
        q = sp.get("schedule_error_p99_ns")
        if q:
            # the JSON's own spread; ours (same nearest rank) as a check
            if (med, worst) != (q.get("median"), q.get("worst")):
                notes.append(f"JSON: spread p99 median/worst {q.get('median')}"
                             f"/{q.get('worst')} != flows' {med}/{worst}")
            med, p90, worst = q.get("median"), q.get("p90"), q.get("worst")
        on_time_pct = sp.get("on_time_pct")
        if sp.get("delivered_pct") is not None:
            delivered_pct = sp["delivered_pct"]
    if on_time_pct is None and se_packets:
        on_time_pct = 100.0 * (se_packets - min(late_sum, se_packets)) / se_packets
    span_ns = opt(s, ["sent", "duration_ns"])
    eff = max(duration, (span_ns or 0) / 1e9)
    if span_ns and span_ns / 1e9 > duration * 1.02 + 0.05:
        notes.append(f"sending took {span_ns / 1e9:.2f}s for {duration:g}s "
                     "requested")
    gap_med = spread(gaps)[0]
    return dict(planned=planned, sent=sent, received=received,
                delivered_pct=delivered_pct, on_time_pct=on_time_pct,
                otd=otd, otd_upper=otd_up, late=late_sum,
                p99_median_ns=med, p99_p90_ns=p90, p99_worst_ns=worst,
                gap_median_us=gap_med, rx_pps=received / eff,
                sent_pps=sent / eff, send_span_s=(span_ns or 0) / 1e9,
                note="; ".join(notes))


def cmd_dp_row(a):
    row = base_row(a, "dualperf")
    try:
        row.update(dualperf_figures(load_doc(a.send_json), a.flows,
                                    a.duration, a.flat_out))
    except (ContractError, OSError, ValueError, TypeError) as e:
        row["error"] = f"dualperf JSON: {e} (raw output: {a.send_json})"
    if a.recv_error:
        row["error"] = "; ".join(x for x in (row["error"], a.recv_error) if x)
    for side, path in (("send", a.send_time), ("recv", a.recv_time)):
        row[f"rss_{side}_kb"] = row[f"cpu_{side}_pct"] = None
        if path:
            try:
                row[f"rss_{side}_kb"] = time_v(path)[0]
                row[f"cpu_{side}_pct"] = cpu_pct(path)
            except (ContractError, OSError, ValueError) as e:
                row["error"] = row["error"] or f"time -v ({side}): {e}"
    row["steal_ms"] = a.steal_ms
    write_row(a.results, row)
    return summary(row)


# --------------------------------------------------------------------------
# D-ITG

# One packet of `ITGDec LOG -l out.txt`:
#   Flow>0002 Seq>      1 Src> 127.0.0.1/56973 Dest> 127.0.0.1/55599
#   txTime>16:44:33.544368 rxTime>16:44:33.544368 Size>  160
DITG_REC = re.compile(
    r"Flow>\s*(\d+)\s+Seq>\s*(\d+)\s.*?txTime>(\d+):(\d+):(\d+)\.(\d+)")
DAY_US = 86_400_000_000


def parse_ditg(text):
    """[(flow, seq, tx_us)] in file order; tx is a time of day, so a flow's
    time that falls by more than half a day crossed midnight (+1 day)."""
    out = []
    last = {}
    for line in text.splitlines():
        m = DITG_REC.search(line)
        if not m:
            continue
        fl, seq = int(m[1]), int(m[2])
        frac = (m[6] + "000000")[:6]
        t = ((int(m[3]) * 60 + int(m[4])) * 60 + int(m[5])) * 1_000_000 + int(frac)
        prev = last.get(fl)
        if prev is not None:
            while t < prev - DAY_US // 2:
                t += DAY_US
        last[fl] = t
        out.append((fl, seq, t))
    return out


def decode_log(path, keep_text):
    """ITGDec -l of one binary log -> records, cross-checked against the
    packet count of ITGDec's own summary."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    txt = path + ".txt"
    subprocess.run(["ITGDec", path, "-l", txt], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=900,
                   cwd=os.path.dirname(path) or ".")
    try:
        with open(txt) as f:
            recs = parse_ditg(f.read())
    finally:
        if not keep_text and os.path.exists(txt):
            os.remove(txt)
    total, _ = itgdec_total(path)
    if len(recs) != total:
        raise ValueError(f"ITGDec -l of {path} gave {len(recs)} packets, its "
                         f"summary {total}")
    return recs


def ditg_on_time(sent_recs, recv_keys, rate, late_us):
    """Schedule error of every sent packet and the on-time sets.

    sent_recs: [(key, seq, tx_us)], key naming the flow;
    recv_keys: set of (key, seq) received.
    Returns (per-flow error lists in us, on-time count, on-time delivered,
    per-flow mean gaps in us, in the order of the error lists; 0 for a flow
    of one packet)."""
    by_flow = {}
    for key, seq, t in sent_recs:
        by_flow.setdefault(key, []).append((seq, t))
    period_us = 1e6 / rate
    errors, gaps = {}, []
    on_time = otd = 0
    for key, pk in by_flow.items():
        pk.sort()
        seq0, t0 = pk[0]
        ev = []
        for seq, t in pk:
            e = t - (t0 + (seq - seq0) * period_us)
            ev.append(e)
            if e <= late_us:
                on_time += 1
                if (key, seq) in recv_keys:
                    otd += 1
        errors[key] = ev
        gaps.append((pk[-1][1] - pk[0][1]) / (len(pk) - 1) if len(pk) > 1
                    else 0.0)
    return errors, on_time, otd, gaps


def cmd_ditg_row(a):
    row = base_row(a, "D-ITG")
    row.update(rss_send_kb=None, rss_recv_kb=None, cpu_send_pct=None,
               cpu_recv_pct=None)
    try:
        sent_recs, recv_keys = [], set()
        recv_raw = 0
        for g, d in enumerate(a.groups):
            s = decode_log(os.path.join(d, "send.log"), a.keep_text)
            if not s:
                raise ValueError(f"ITGSend of group {g} ({d}) logged no "
                                 "packets")
            sent_recs.extend(((g, fl), seq, t) for fl, seq, t in s)
            r = decode_log(os.path.join(d, "recv.log"), a.keep_text)
            recv_raw += len(r)
            recv_keys.update(((g, fl), seq) for fl, seq, _ in r)
        errors, on_time, otd, gaps = ditg_on_time(sent_recs, recv_keys,
                                                  a.rate, LATE_NS / 1e3)
        sent = len(sent_recs)
        p99s = [nearest_rank(sorted(ev), 0.99) * 1e3 for ev in errors.values()]
        med, p90, worst = spread(p99s)
        planned = int(round(a.flows * a.rate * a.duration))
        notes = []
        if len(errors) != a.flows:
            notes.append(f"{a.flows - len(errors)} flows sent nothing")
        if recv_raw != len(recv_keys):
            notes.append(f"{recv_raw - len(recv_keys)} duplicates")
        # A flow's span: first to last send time (flows start at different
        # times, so the run's span says nothing about overrunning).
        span = max(((len(ev) - 1) * g / 1e6 for ev, g in
                    zip(errors.values(), gaps)), default=0)
        if span > a.duration * 1.02 + 0.05:
            notes.append(f"a flow's sending took {span:.2f}s")
        row.update(planned=planned, sent=sent, received=len(recv_keys),
                   delivered_pct=100.0 * len(recv_keys) / sent if sent else None,
                   on_time_pct=100.0 * on_time / sent if sent else None,
                   otd=otd, otd_upper=otd, late=sent - on_time,
                   p99_median_ns=med, p99_p90_ns=p90, p99_worst_ns=worst,
                   gap_median_us=spread([g for g in gaps if g])[0],
                   rx_pps=len(recv_keys) / a.duration,
                   sent_pps=sent / a.duration, note="; ".join(notes))
    except (ValueError, OSError, subprocess.SubprocessError) as e:
        row["error"] = str(e)
    write_row(a.results, row)
    return summary(row)


# --------------------------------------------------------------------------
# ceiling (bench/ceiling/ceiling.c)

def cmd_ceiling_row(a):
    row = base_row(a, "ceiling.c")
    row.update(rss_send_kb=None, rss_recv_kb=None, cpu_send_pct=None,
               cpu_recv_pct=None)
    try:
        kv = {}
        with open(a.file) as f:
            for line in f:
                if line.startswith("ceiling "):
                    kv = dict(p.split("=", 1) for p in line.split()[1:]
                              if "=" in p)
        if "recv_pps" not in kv:
            raise ValueError(f"no 'ceiling ... recv_pps=' line in {a.file}")
        sent, recv = int(kv["sent"]), int(kv["received"])
        row.update(sent=sent, received=recv, planned=None,
                   delivered_pct=100.0 * recv / sent if sent else None,
                   rx_pps=float(kv["recv_pps"]),
                   sent_pps=float(kv["sent_pps"]))
    except (ValueError, OSError, KeyError) as e:
        row["error"] = str(e)
    write_row(a.results, row)
    return summary(row)


def cmd_error_row(a):
    row = base_row(a, a.tool)
    row["error"] = a.message
    write_row(a.results, row)
    return summary(row)


# --------------------------------------------------------------------------
# ports outside the ephemeral range

def cmd_ports(a):
    """COUNT free ports below the kernel's ephemeral range.

    ITGRecv binds a flow's data port only when the flow is set up, by which
    time ITGSend's other flows hold hundreds of ephemeral source ports: a
    port from the ephemeral range (benchtool free-ports) can be taken by
    then, and one failed bind makes ITGRecv stop every flow."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    first = 10000
    if lo - first < 4 * a.count:
        err(f"ephemeral range starts at {lo}: no room below it for "
            f"{a.count} ports")
        return 1
    cands = list(range(first, lo))
    random.shuffle(cands)
    chosen = []
    for port in cands:
        if len(chosen) == a.count:
            break
        if _bindable(port):
            chosen.append(port)
    if len(chosen) != a.count:
        err("could not find free ports")
        return 1
    print(" ".join(map(str, chosen)))
    return 0


# --------------------------------------------------------------------------
# report

def us(ns):
    return "-" if ns is None else f"{ns / 1e3:,.1f}"


def pct(v, d=2):
    return "-" if v is None else f"{v:.{d}f}"


def kpps(v):
    return "-" if v is None else f"{v:,.0f}"


def summary(row):
    """One progress line on stdout (the script sends it to stderr); the
    figures the run defines only."""
    head = (f"{row['case']} {row['label']} {row['tool']} v{row['family']} "
            f"{row['flows']} flows")
    if row.get("error"):
        print(f"ERROR {head}: {row['error']}")
        return 1
    g = row.get
    parts = [f"sent {g('sent')} received {g('received')}"]
    if g("delivered_pct") is not None:
        parts.append(f"delivered {pct(g('delivered_pct'), 3)}%")
    if g("on_time_pct") is not None:
        parts.append(f"on time {pct(g('on_time_pct'))}%")
    if g("p99_median_ns") is not None:
        parts.append(f"sched p99 median/worst {us(g('p99_median_ns'))}/"
                     f"{us(g('p99_worst_ns'))} us")
    parts.append(f"recv {kpps(g('rx_pps'))} pkt/s")
    if g("rss_send_kb") is not None or g("rss_recv_kb") is not None:
        parts.append(f"RSS send/recv {mb(g('rss_send_kb'))}/"
                     f"{mb(g('rss_recv_kb'))} MB")
    line = f"{head}: " + " ".join(parts)
    if g("note"):
        line += f" [{g('note')}]"
    print(line)
    return 0


def cpu2(r):
    c = (r.get("cpu_send_pct"), r.get("cpu_recv_pct"))
    return "-" if c == (None, None) else "/".join(dash(x, "{:.0f}") for x in c)


def sent_of_plan(r):
    if not r.get("planned"):
        return "-"
    return pct(100.0 * r["sent"] / r["planned"], 2)


def steal(r):
    v = r.get("steal_ms")
    return "-" if v is None else f"{v:,}"


def goal(ok, what, val):
    return f"{what}: {val} {'met' if ok else 'NOT met'}"


def report_dualperf(rows, nproc):
    cases = [r for r in rows if r["case"] in ("big", "voip", "tcp")]
    if not cases:
        return []
    print("\n== Many flows, dualperf (send --calls N; recv with its default "
          f"threads = {nproc}) ==")
    hdr = ["case", "fam", "flows", "plan pkt/s", "sent/plan %", "delivered %",
           "on time %", "p99 median us", "p99 p90 us", "p99 worst us",
           "RSS send MB", "RSS recv MB", "CPU s/r %", "steal ms", "note"]
    out = []
    for r in cases:
        fam = f"v{r['family']}"
        if r.get("error"):
            out.append([r["label"], fam, f"{r['flows']:,}"] + ["-"] * 11
                       + ["ERROR: " + r["error"]])
            continue
        plan_pps = (r["planned"] / r["duration"]) if r.get("planned") else None
        out.append([r["label"], fam, f"{r['flows']:,}", kpps(plan_pps),
                    sent_of_plan(r), pct(r["delivered_pct"], 3),
                    pct(r["on_time_pct"]), us(r["p99_median_ns"]),
                    us(r["p99_p90_ns"]), us(r["p99_worst_ns"]),
                    mb(r["rss_send_kb"]), mb(r["rss_recv_kb"]), cpu2(r),
                    steal(r), r.get("note") or ""])
    table(hdr, out)
    print("(sent/plan % = packets sent / the flows' planned packets; "
          "delivered % = received / sent (sum.spread.delivered_pct);\n"
          " on time % = packets sent <= 1 ms after their deadline / sent "
          "(sum.spread.on_time_pct); p99 median/p90/worst =\n"
          " the median, 90th-percentile and worst flow's schedule-error p99 "
          "(sum.spread.schedule_error_p99_ns);\n RSS = 'Maximum resident set "
          "size' of /usr/bin/time -v (MB = 1024 KB); CPU s/r = sender/receiver "
          "user+sys / wall;\n steal = CPU time the hypervisor took from this VM's "
          "CPUs while they wanted to run, all CPUs, during the\n sender's run "
          "(/proc/stat, in ticks of 10 ms): a stolen moment makes every packet "
          "due in it late)")
    goals = []
    for r in cases:
        if r["case"] != "big":
            continue
        tag = f"GOAL {r['flows']:,} UDP flows x 50 pkt/s IPv{r['family']}:"
        if r.get("error"):
            goals.append(f"{tag} not measured ({r['error']})")
            continue
        d, m, w = r["delivered_pct"], r["p99_median_ns"], r["p99_worst_ns"]
        parts = [
            goal(d is not None and d >= GOAL_DELIVERED_PCT,
                 f"delivered >= {GOAL_DELIVERED_PCT} %", f"{pct(d, 3)} %"),
            goal(m is not None and m <= GOAL_MEDIAN_P99_NS,
                 "median flow's p99 <= 100 us", f"{us(m)} us"),
            goal(w is not None and w <= GOAL_WORST_P99_NS,
                 "worst flow's p99 <= 1 ms", f"{us(w)} us"),
        ]
        if r.get("steal_ms") is not None:
            parts.append(f"CPU steal during the run {steal(r)} ms")
        goals.append(f"{tag} " + "; ".join(parts))
    # Issue 14's memory goal, whatever the flow count: 64 MB plus 16 KB a flow.
    for r in cases:
        if r.get("error"):
            continue
        limit_kb = RSS_BASE_KB + RSS_PER_FLOW_KB * r["flows"]
        worst = max((r.get(k) for k in ("rss_send_kb", "rss_recv_kb")
                     if r.get(k) is not None), default=None)
        goals.append(
            f"GOAL peak RSS < 64 MB + 16 KB per flow ({mb(limit_kb)} MB), "
            f"{r['label']} IPv{r['family']}: " + goal(
                worst is not None and worst < limit_kb,
                "send/recv", f"{mb(r.get('rss_send_kb'))}/"
                f"{mb(r.get('rss_recv_kb'))} MB"))
    for g in goals:
        print(g)
    return goals


def report_ditg(rows):
    cmp_rows = [r for r in rows if r["case"] == "ditg"]
    if not cmp_rows:
        return
    print("\n== On-time delivery: dualperf vs D-ITG (UDP, 50 pkt/s, 160 B "
          "per flow) ==")
    hdr = ["tool", "fam", "flows", "s", "planned", "sent", "received",
           "sent on time %", "on-time delivered", "% of plan",
           "p99 median us", "p99 worst us", "mean gap us", "note"]
    out = []
    order = {"dualperf": 0, "D-ITG": 1}
    cmp_rows.sort(key=lambda r: (r["family"], r["flows"],
                                 order.get(r["tool"], 9)))
    for r in cmp_rows:
        base = [r["tool"], f"v{r['family']}", f"{r['flows']:,}",
                f"{r['duration']:g}"]
        if r.get("error"):
            out.append(base + ["-"] * 9 + ["ERROR: " + r["error"]])
            continue
        otd = f"{r['otd']:,}"
        if r.get("otd_upper") is not None and r["otd_upper"] != r["otd"]:
            otd += f" (<= {r['otd_upper']:,})"
        out.append(base + [f"{r['planned']:,}" if r.get("planned") else "-",
                           f"{r['sent']:,}", f"{r['received']:,}",
                           pct(r["on_time_pct"]), otd,
                           pct(100.0 * r["otd"] / r["planned"])
                           if r.get("planned") else "-",
                           us(r["p99_median_ns"]), us(r["p99_worst_ns"]),
                           "-" if r.get("gap_median_us") is None
                           else f"{r['gap_median_us']:,.1f}",
                           r.get("note") or ""])
    table(hdr, out)
    print("(on time = sent no more than 1 ms after the flow's schedule: D-ITG "
          "first packet's send time + k x 20 ms, from its\n sender log; "
          "dualperf its own deadlines, late_packets; on-time delivered = "
          "received packets that were sent on time;\n for dualperf a lower "
          "bound, '(<= upper)' shown when a loss leaves it open; % of plan = "
          "on-time delivered / (flows x 50 x s);\n mean gap = the median "
          "flow's (last - first send time) / (packets - 1), 20,000 us asked)")
    by = {(r["family"], r["flows"], r["tool"]): r for r in cmp_rows
          if not r.get("error")}
    for fam, n in sorted({(r["family"], r["flows"]) for r in cmp_rows}):
        dp, dg = by.get((fam, n, "dualperf")), by.get((fam, n, "D-ITG"))
        x = 100.0 * dp["otd"] / dp["planned"] if dp and dp.get("planned") else None
        y = 100.0 * dg["otd"] / dg["planned"] if dg and dg.get("planned") else None
        if x is not None and y:
            ratio = f"ratio {x / y:.2f}x"
        elif x is not None and y == 0:
            ratio = "ratio: infinite (D-ITG delivered none on time)"
        else:
            ratio = "ratio n/a"
        print(f"on time delivered, {n:,} flows, IPv{fam}: dualperf "
              f"{pct(x)} %, D-ITG {pct(y)} %, {ratio}")


def report_multicore(rows, nproc):
    mc = [r for r in rows if r["case"] == "multicore"]
    if not mc:
        return
    nmc = max(r["flows"] for r in mc)
    print(f"\n== {nmc} flows flat out vs one flow (UDP, 64 B; {nproc} CPUs, "
          "sender and receiver share them) ==")
    hdr = ["run", "fam", "flows", "s", "requested pkt/s", "sent pkt/s",
           "recv pkt/s", "loss %", "x 1 flow", "x ceiling", "CPU s/r %",
           "note"]
    one = {r["family"]: r for r in mc
           if r["label"] == "1flow" and not r.get("error")}
    ceil = {r["family"]: r for r in mc
            if r["label"] == "ceiling" and not r.get("error")}
    names = {"ceiling": "ceiling.c (1 flow, sendmmsg)",
             "1flow": "dualperf 1 flow",
             "16flows": "dualperf {n} flows",
             "16flows-t1": "dualperf {n} flows --threads 1"}
    order = {"ceiling": 0, "1flow": 1, "16flows": 2, "16flows-t1": 3}
    mc.sort(key=lambda r: (r["family"], order.get(r["label"], 9)))
    out = []
    for r in mc:
        base = [names.get(r["label"], r["label"]).format(n=r["flows"]),
                f"v{r['family']}",
                str(r["flows"]), f"{r['duration']:g}"]
        if r.get("error"):
            out.append(base + ["-"] * 7 + ["ERROR: " + r["error"]])
            continue
        req = r["rate"] * r["flows"] if r.get("rate") else None
        o, c = one.get(r["family"]), ceil.get(r["family"])
        loss = (100.0 * (r["sent"] - r["received"]) / r["sent"]
                if r.get("sent") else None)
        out.append(base + [kpps(req) if req else "unpaced",
                           kpps(r.get("sent_pps")), kpps(r["rx_pps"]),
                           pct(loss, 3),
                           f"{r['rx_pps'] / o['rx_pps']:.2f}" if o else "-",
                           f"{r['rx_pps'] / c['rx_pps']:.2f}" if c else "-",
                           cpu2(r), r.get("note") or ""])
    table(hdr, out)
    print("(recv pkt/s = packets received / the requested duration, or / "
          "the sending span if that was longer; ceiling.c: its own\n "
          "measured window, blocking receiver, as bench/vs-ditg.sh; x 1 flow "
          "= recv pkt/s / dualperf 1 flow's; loss % = (sent - received) / "
          "sent)")
    for fam in sorted({r["family"] for r in mc}):
        get_ = {r["label"]: r for r in mc
                if r["family"] == fam and not r.get("error")}
        a, b, o = get_.get("16flows"), get_.get("16flows-t1"), get_.get("1flow")
        if o and a:
            print(f"IPv{fam}: {a['flows']} flows deliver "
                  f"{a['rx_pps'] / o['rx_pps']:.2f}x "
                  "the single-flow rate of dualperf", end="")
            c = ceil.get(fam)
            print(f", {a['rx_pps'] / c['rx_pps']:.2f}x the ceiling" if c else "",
                  end="")
            print()
        if a and b and b["rx_pps"] > 0:
            q = a["rx_pps"] / b["rx_pps"]
            verdict = ("yes" if q >= CORE_HELPS_RATIO else
                       "no (slower)" if q < 1 / CORE_HELPS_RATIO else
                       f"no (within {100 * (CORE_HELPS_RATIO - 1):.0f} %)")
            print(f"IPv{fam}: does a second core help? default sender "
                  f"threads / --threads 1 = {q:.2f}x: {verdict}")


def cmd_report(a):
    rows = []
    if os.path.exists(a.results):
        with open(a.results) as f:
            rows = [json.loads(l) for l in f if l.strip()]
    goals = report_dualperf(rows, a.nproc)
    report_ditg(rows)
    report_multicore(rows, a.nproc)
    errors = [r for r in rows if r.get("error")]
    print(f"\nSUMMARY: {len(rows)} runs, {len(errors)} errors; goals "
          f"not met: {sum(g.count('NOT met') for g in goals)}")
    if a.goals_out:
        with open(a.goals_out, "w") as f:
            f.write("\n".join(goals) + "\n")
    return 0


# --------------------------------------------------------------------------
# self-test of the parsers and the on-time formula

def cmd_selftest(_a):
    text = "\n".join([
        "Flow>0001 Seq>      1 Src> 127.0.0.1/1 Dest> 127.0.0.1/2 "
        "txTime>23:59:59.990000 rxTime>23:59:59.990000 Size>  160",
        "Flow>0001 Seq>      2 Src> 127.0.0.1/1 Dest> 127.0.0.1/2 "
        "txTime>00:00:00.010500 rxTime>00:00:00.010500 Size>  160",
        "Flow>0001 Seq>      3 Src> 127.0.0.1/1 Dest> 127.0.0.1/2 "
        "txTime>00:00:00.031001 rxTime>00:00:00.031001 Size>  160",
        "Flow>0002 Seq>      1 Src> ::1/3 Dest> ::1/4 "
        "txTime>10:00:00.5 rxTime>10:00:00.5 Size>  160",
        "Flow>0002 Seq>      3 Src> ::1/3 Dest> ::1/4 "
        "txTime>10:00:00.540000 rxTime>10:00:00.540000 Size>  160",
        "|\\-/|\\-/ garbage",
    ])
    recs = parse_ditg(text)
    assert len(recs) == 5, recs
    assert recs[1][2] - recs[0][2] == 20_500, recs      # across midnight
    assert recs[3][2] == 36_000_500_000, recs            # .5 -> 500000 us
    errors, on_time, otd, gaps = ditg_on_time(
        [((0, f), s, t) for f, s, t in recs],
        {((0, 1), 1), ((0, 1), 3), ((0, 2), 3)}, 50, 1000)
    # flow 1: errors 0, 500, 1001 us -> 2 on time; flow 2: 0, 0 -> 2 on time
    assert errors[(0, 1)] == [0, 500, 1001], errors
    assert on_time == 4 and otd == 2, (on_time, otd)
    assert nearest_rank([1, 2, 3, 4], 0.5) == 2
    assert spread([3, 1, 2]) == (2, 3, 3)
    doc = {"interrupted": False, "sum": {
        "sent": {"packets": 20, "duration_ns": 1_000_000_000},
        "received": {"packets": 19},
        "spread": {"schedule_error_p99_ns": {"median": 10.0, "p90": 20.0,
                                             "worst": 20.0},
                   "on_time_pct": 90.0, "delivered_pct": 95.0}},
        "flows": [
            {"sent": {"packets": 10, "planned_packets": 10,
                      "duration_ns": 900_000_000,
                      "schedule_error": {"packets": 10, "p99_ns": 10,
                                         "late_packets": 2}},
             "received": {"packets": 9, "unique_packets": 9}, "error": None},
            {"sent": {"packets": 10, "planned_packets": 10,
                      "duration_ns": 900_000_000,
                      "schedule_error": {"packets": 10, "p99_ns": 20,
                                         "late_packets": 0}},
             "received": {"packets": 10, "unique_packets": 10},
             "error": None}]}
    f = dualperf_figures(doc, 2, 1.0)
    assert (f["otd"], f["otd_upper"]) == (17, 18), f
    assert f["p99_median_ns"] == 10.0 and f["note"] == "", f
    assert f["planned"] == 20 and f["rx_pps"] == 19.0, f
    print("manyflows selftest: ok")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(s):
        s.add_argument("--case", required=True)
        s.add_argument("--label", required=True)
        s.add_argument("--family", type=int, required=True)
        s.add_argument("--flows", type=int, required=True)
        s.add_argument("--duration", type=float, required=True)
        s.add_argument("--rate", type=float, default=None,
                       help="pkt/s per flow (requested)")
        s.add_argument("--results", required=True)

    s = sub.add_parser("dp-row")
    common(s)
    s.add_argument("--send-json", required=True)
    s.add_argument("--send-time")
    s.add_argument("--steal-ms", type=int, default=None,
                   help="CPU steal (ms, all CPUs) while the sender ran")
    s.add_argument("--recv-time")
    s.add_argument("--recv-error", default="",
                   help="the receiver failed after the sender succeeded")
    s.add_argument("--flat-out", action="store_true",
                   help="flows asked for more than can be sent: no note "
                   "on flows that received less than planned")
    s.set_defaults(fn=cmd_dp_row)

    s = sub.add_parser("ditg-row")
    common(s)
    s.add_argument("--groups", nargs="+", required=True,
                   help="one dir per ITGSend process, with send.log, recv.log")
    s.add_argument("--keep-text", action="store_true")
    s.set_defaults(fn=cmd_ditg_row)

    s = sub.add_parser("ceiling-row")
    common(s)
    s.add_argument("--file", required=True)
    s.set_defaults(fn=cmd_ceiling_row)

    s = sub.add_parser("error-row")
    common(s)
    s.add_argument("--tool", required=True)
    s.add_argument("--message", required=True)
    s.set_defaults(fn=cmd_error_row)

    s = sub.add_parser("report")
    s.add_argument("--results", required=True)
    s.add_argument("--nproc", default="?")
    s.add_argument("--goals-out")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("ports")
    s.add_argument("--count", type=int, default=1)
    s.set_defaults(fn=cmd_ports)

    s = sub.add_parser("selftest")
    s.set_defaults(fn=cmd_selftest)

    a = p.parse_args()
    if a.cmd == "ditg-row" and (a.rate is None or a.rate <= 0):
        p.error("ditg-row needs --rate")
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
