#!/usr/bin/env python3
"""Helpers for bench/bulk-vs-iperf3.sh: parse `iperf3 -J` and
`dualperf send --bulk --json` output (TCP and UDP) into result rows, and
print the final report.

Not meant to be used on its own; see bench/README.md.  Standard library only.
Free ports and port readiness come from bench/lib/benchtool.py.

Result rows are JSON lines appended to a results file, one per run:
  {"tool", "family", "proto", "config", "rep", "rx_bps", "tx_bps",
   "rx_bytes", "rx_seconds", "rx_pps", "loss_pct", "per_flow_bps",
   "cpu_snd", "cpu_rcv", "marks", "notes", "error", "skipped"}
tool is iperf3 (the one on PATH), iperf3-alt (IPERF3=path), dualperf, or
ceiling (bench/ceiling/ceiling.c in a UDP row: rx_pps, and rx_bps from it).
rx_bps is the receiver-side payload rate each tool reports itself:
  iperf3 TCP: end.sum_received.bits_per_second (bytes / test duration)
  iperf3 UDP: end.sum_received.bits_per_second (the same definition)
  dualperf:   sum.received.bitrate_bps (bytes / first->last message)
UDP rows also carry rx_pps (datagrams delivered per second, over the same
time as rx_bps) and loss_pct (lost / sent datagrams, as the receiver counts
them).  marks flag a run that differs from its row's config: "nogso" (a
dualperf that cannot turn GSO on ran without it) and "paced" (a dualperf
without unpaced UDP bulk ran paced at a rate above what loopback carries).
A skipped row (a tool that cannot run that config, e.g. an iperf3 without
--gsro in a GSO row) is shown as n/a, and is no failure.
"""

import argparse
import json
import os
import statistics
import sys

# Issue 22's goals, each row against every iperf3 that ran it (see goal_of):
TCP_SINGLE_GOAL = 1.0   # one stream, unpaced: dualperf >= 1.0x iperf3
UDP_PLAIN_GOAL = 1.5    # 1400 B without GSO: dualperf >= 1.5x iperf3
UDP_GSO_GOAL = 1.0      # 1400 B with GSO: dualperf >= 1.0x iperf3 --gsro
OTHER_GOAL = 0.90       # rows the issue sets no goal for: at least 90 %
TOOLS = ("iperf3", "iperf3-alt", "dualperf")
ROW_TOOLS = TOOLS + ("ceiling",)
SHORT = {"iperf3": "A", "iperf3-alt": "B", "dualperf": "dp"}
MARKS = {  # mark -> (symbol, footnote)
    "nogso": ("*", "dualperf ran without GSO: this build has no --no-gso, i.e. no UDP "
                   "GSO yet;\n  the row compares it as it is with iperf3 --gsro"),
    "paced": ("+", "dualperf ran paced at {rate} (this build refuses --udp --bulk "
                   "without --rate);\n  that rate is beyond loopback's, so the "
                   "sender runs flat out, but it keeps its\n  per-packet schedule"),
}

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
    end = get(doc, ["end"])
    cpu = end.get("cpu_utilization_percent") or {}
    res = dict(cpu_snd=cpu.get("host_total"), cpu_rcv=cpu.get("remote_total"),
               notes=notes, version=get(doc, ["start"]).get("version"))
    if a.proto == "tcp":
        cc = end.get("sender_tcp_congestion")
        if cc != a.cc:
            notes.append(f"congestion control {cc!r}, not {a.cc!r}")
        per_flow = [num(s, ["receiver", "bits_per_second"]) for s in end["streams"]]
        res.update(rx_bps=num(doc, ["end", "sum_received", "bits_per_second"]),
                   tx_bps=num(doc, ["end", "sum_sent", "bits_per_second"]),
                   rx_bytes=num(doc, ["end", "sum_received", "bytes"]),
                   rx_seconds=num(doc, ["end", "sum_received", "seconds"]),
                   per_flow_bps=per_flow)
        return res
    # UDP: end.sum_received is the receiver's side (checked on 3.12 and 3.21):
    # bytes received / receiver time, packets = received + lost (the sender's
    # last datagrams that never arrived are not counted), lost_packets.  end.sum
    # mixes the sender's bytes and rate with the receiver's loss: not used.
    rx = get(doc, ["end", "sum_received"])
    if "packets" not in rx:
        raise ContractError("no end.sum_received.packets (iperf3 too old?)")
    rx_bps = num(rx, ["bits_per_second"])
    secs = num(rx, ["seconds"])
    rx_bytes = num(rx, ["bytes"])
    lost, pkts = num(rx, ["lost_packets"]), num(rx, ["packets"])
    tx_bps = num(doc, ["end", "sum_sent", "bits_per_second"])
    ts = get(doc, ["start", "test_start"])
    if "gso" in ts and (ts.get("gso") or a.gso):
        notes.append(f"gso {ts.get('gso')} gro {ts.get('gro')}")
        if a.gso and not ts.get("gso"):
            notes.append("--gsro was given but GSO is off")
    delivered = max(pkts - lost, 0)
    if pkts > 0 and rx_bytes > 0 and a.size > 0:
        # The datagram size is fixed: delivered packets must match the bytes.
        exp = rx_bytes / a.size
        if abs(delivered - exp) > max(2, 0.01 * exp):
            notes.append(f"{delivered:.0f} datagrams delivered (packets - lost) but "
                         f"bytes/size = {exp:.0f}")
    res.update(rx_bps=rx_bps, tx_bps=tx_bps, rx_bytes=rx_bytes, rx_seconds=secs,
               rx_pps=delivered / secs if secs > 0 else 0.0,
               loss_pct=100.0 * lost / pkts if pkts > 0 else None,
               per_flow_bps=[rx_bps])
    return res


def parse_dualperf(doc, a):
    if doc.get("interrupted") is True:
        raise ContractError("dualperf reports the run was interrupted")
    flows = get(doc, ["flows"])
    if not isinstance(flows, list) or len(flows) != a.parallel:
        raise ContractError(f"'flows' has {len(flows) if isinstance(flows, list) else '?'}"
                            f" entries, {a.parallel} requested")
    notes, per_flow, ivals = [], [], []
    lost = expected = 0
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
        if a.proto == "tcp":
            cc = (fl.get("spec") or {}).get("congestion")
            if cc is not None and cc != a.cc:
                notes.append(f"flows[{i}].spec.congestion {cc!r}, not {a.cc!r}")
        else:
            lost += num(fl, ["received", "loss", "lost"])
            expected += num(fl, ["received", "loss", "expected"])
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
    res = dict(rx_bps=rx_bps, tx_bps=num(doc, ["sum", "sent", "bitrate_bps"]),
               rx_bytes=rx_bytes, rx_seconds=rx_ns / 1e9,
               per_flow_bps=per_flow, cpu_snd=None, cpu_rcv=None, notes=notes)
    if a.proto == "udp":
        pkts = num(doc, ["sum", "received", "packets"])
        res.update(rx_pps=pkts * 1e9 / rx_ns if rx_ns > 0 else 0.0,
                   loss_pct=100.0 * lost / expected if expected > 0 else None)
        sent = flows[0].get("sent") or {}
        planned = sent.get("planned_packets")
        if "paced" in (a.mark or []) and isinstance(planned, (int, float)) and planned:
            notes.append(f"sent {100 * sent.get('packets', 0) / planned:.1f} % of "
                         "the packets its rate planned")
    return res


def base_row(a):
    return dict(tool=a.tool, family=a.family, proto=a.proto, config=a.config,
                rep=a.rep, error=None, skipped=None, notes=[],
                marks=list(getattr(a, "mark", None) or []))


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
        row.update((parse_dualperf if a.tool == "dualperf" else parse_iperf3)(doc, a))
        row["notes"] = pre + row["notes"]
        if row["rx_bps"] <= 0:
            row["error"] = "throughput is zero"
    except (ContractError, OSError, KeyError, TypeError) as e:
        row["error"] = f"{a.tool} JSON: {e} (raw output: {a.json})"
    for k in ("cpu_snd", "cpu_rcv"):  # the tool's own figure wins (iperf3)
        if row.get(k) is None:
            row[k] = opt_float(getattr(a, k))
    return emit(row, a.results)


def cmd_error_row(a):
    row = base_row(a)
    row["error"] = a.message
    return emit(row, a.results)


def cmd_ceiling_row(a):
    """A row from ceiling.c's one line: received datagrams per second over its
    window, as payload bit/s at --size bytes each."""
    row = base_row(a)
    try:
        with open(a.line_file) as f:
            line = next((x for x in f if x.startswith("ceiling ")), None)
        if line is None:
            raise ValueError(f"no 'ceiling ...' line in {a.line_file}")
        kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
        pps = float(kv["recv_pps"])
        sent, dropped = int(kv["sent"]), int(kv["dropped"])
        row.update(rx_pps=pps, rx_bps=pps * a.size * 8,
                   tx_bps=float(kv["sent_pps"]) * a.size * 8,
                   rx_seconds=float(kv["duration_s"]), per_flow_bps=[pps * a.size * 8],
                   loss_pct=100.0 * dropped / sent if sent else None,
                   cpu_snd=None, cpu_rcv=None, copy=kv.get("copy", "whole"))
    except (OSError, ValueError, KeyError) as e:
        row["error"] = f"ceiling: {e}"
    return emit(row, a.results)


def cmd_skip_row(a):
    row = base_row(a)
    row["skipped"] = a.message
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
    if row["skipped"]:
        print(f"{head} not run: {row['skipped']}")
        return 0
    line = (f"{head} rx {row['rx_bps'] / 1e9:.2f} Gbit/s (tx "
            f"{row['tx_bps'] / 1e9:.2f}) over {row['rx_seconds']:.3f} s")
    if row["proto"] == "udp":
        loss = row.get("loss_pct")
        line += (f", {row['rx_pps'] / 1e6:.3f} Mpkt/s delivered, loss "
                 + ("?" if loss is None else f"{loss:.2f} %"))
    line += f"; cpu snd {pct(row['cpu_snd'])} rcv {pct(row['cpu_rcv'])}"
    if len(row["per_flow_bps"]) > 1:
        line += "; per flow " + "/".join(f"{b / 1e9:.2f}" for b in row["per_flow_bps"])
    for m in row["marks"]:
        line += f"; [{m}]"
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


def med_range(vals, fmt):
    if not vals:
        return "-"
    m = fmt.format(statistics.median(vals))
    if len(vals) > 1:
        m += f" ({fmt.format(min(vals))}-{fmt.format(max(vals))})"
    return m


def print_table(hdr, table):
    widths = [max(len(x[i]) for x in table + [hdr]) for i in range(len(hdr))]
    print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())


def goal_of(proto, cfg):
    """(kind, floor, text) of a row's goal.  kind: "ratio" (dp/X >= floor),
    "ahead" (dp/X > floor) or "cpu" (same rate, sender CPU <= X's)."""
    if proto == "tcp":
        streams = cfg.split("x", 1)[0]
        if "@" in cfg:
            return "cpu", 1.0, "GOAL sender CPU <= every iperf3's"
        if streams != "1":
            return "ahead", 1.0, "GOAL ahead of every iperf3"
        return "ratio", TCP_SINGLE_GOAL, f"GOAL >= {TCP_SINGLE_GOAL:.1f}x every iperf3"
    if cfg.startswith("1400 ") and not cfg.endswith("skip-rx-copy"):
        if cfg.endswith("GSO"):
            return "ratio", UDP_GSO_GOAL, f"GOAL >= {UDP_GSO_GOAL:.1f}x iperf3 --gsro"
        return "ratio", UDP_PLAIN_GOAL, f"GOAL >= {UDP_PLAIN_GOAL:.1f}x iperf3"
    return "ratio", OTHER_GOAL, f"no goal; >= {OTHER_GOAL:.2f}x"


def build_table(groups, tools, proto, used_marks):
    """Rows of one protocol's table, and how many verdicts failed."""
    iperfs = [t for t in tools if t != "dualperf"]
    hdr = ["family", "config"]
    for t in tools:
        s = SHORT[t]
        hdr.append(f"{s} Gbit/s")
        if proto == "udp":
            hdr += [f"{s} loss", f"{s} Mpkt/s"]
    hdr += [f"dp/{SHORT[t]}" for t in iperfs]
    hdr += [f"{SHORT[t]} cpu s/r" for t in tools]
    hdr.append("verdict")
    table, bad = [], 0
    for (fam, p, cfg), rs in groups.items():
        if p != proto:
            continue
        ok = {t: [r for r in rs if r["tool"] == t and not r["error"]
                  and not r["skipped"]] for t in tools}
        skipped = {t: next((r["skipped"] for r in rs if r["tool"] == t
                            and r["skipped"]), None) for t in tools}
        errs = sum(1 for r in rs if r["error"])
        cells = [f"IPv{fam}", cfg]
        for t in tools:
            marks = "".join(MARKS[m][0] for m in sorted({m for r in ok[t]
                                                           for m in r["marks"]}))
            used_marks.update(m for r in ok[t] for m in r["marks"])
            na = "n/a" if skipped[t] else "-"
            gb = med_range([r["rx_bps"] / 1e9 for r in ok[t]], "{:.2f}")
            cells.append(na if gb == "-" else gb + marks)
            if proto == "udp":
                loss = [r["loss_pct"] for r in ok[t] if r.get("loss_pct") is not None]
                cells.append(f"{statistics.median(loss):.2f}%" if loss else na)
                pps = [r["rx_pps"] / 1e6 for r in ok[t]]
                cells.append(f"{statistics.median(pps):.3f}" if pps else na)
        kind, floor, goal_text = goal_of(proto, cfg)
        verdicts, compared = [], 0
        for t in iperfs:
            if not (ok[t] and ok["dualperf"]):
                cells.append("n/a" if skipped[t] else "-")
                continue
            compared += 1
            ratio = (statistics.median(r["rx_bps"] for r in ok["dualperf"])
                     / statistics.median(r["rx_bps"] for r in ok[t]))
            by_rep = {r["rep"]: r["rx_bps"] for r in ok[t]}
            pairs = [r["rx_bps"] / by_rep[r["rep"]] for r in ok["dualperf"]
                     if r["rep"] in by_rep]
            cell = f"{ratio:.3f}"
            if len(pairs) > 1:
                cell += f" ({min(pairs):.2f}-{max(pairs):.2f})"
            cells.append(cell)
            if kind == "cpu":
                cpu = lambda tool: statistics.median(  # noqa: E731
                    [r["cpu_snd"] for r in ok[tool] if r.get("cpu_snd") is not None]
                    or [float("nan")])
                mine, theirs = cpu("dualperf"), cpu(t)
                # Same rate (within 1 %), no more sender CPU.
                if not (ratio >= 0.99 and mine <= theirs):
                    verdicts.append(f"{SHORT[t]} sender {theirs:.0f} % vs {mine:.0f} %"
                                    f", rate x{ratio:.2f}")
            elif (ratio <= floor if kind == "ahead" else ratio < floor):
                verdicts.append(f"{SHORT[t]} x{ratio:.2f}")
        for t in tools:
            snd = [r["cpu_snd"] for r in ok[t] if r.get("cpu_snd") is not None]
            rcv = [r["cpu_rcv"] for r in ok[t] if r.get("cpu_rcv") is not None]
            if not ok[t]:
                cells.append("n/a" if skipped[t] else "-")
            else:
                cells.append(f"{statistics.median(snd):.0f}" if snd else "?")
                cells[-1] += "/" + (f"{statistics.median(rcv):.0f}" if rcv else "?")
        if not compared and (ok["dualperf"] or skipped["dualperf"]) and not errs \
                and all(skipped[t] for t in iperfs):
            # Every iperf3 was n/a (no --gsro): nothing to compare, no fault.
            verdict = ("not run (no tool with GSO)" if skipped["dualperf"]
                       else "not compared (no iperf3 ran it)")
        elif not compared:
            verdict = "no result"
            bad += 1
        elif verdicts:
            verdict = f"{goal_text}: NOT met (" + ", ".join(verdicts) + ")"
            bad += 1
        else:
            verdict = f"{goal_text}: met"
        if errs:
            verdict += f" [{errs} run(s) failed]"
        table.append(cells + [verdict])
    return hdr, table, bad


def ceiling_lines(groups, tools):
    """Lines putting each UDP row's loopback ceiling beside the tools that ran it."""
    lines = []
    med = lambda rs: statistics.median(r["rx_bps"] for r in rs)  # noqa: E731
    for (fam, p, cfg), rs in groups.items():
        ceil = [r for r in rs if r["tool"] == "ceiling" and not r["error"]]
        if p != "udp" or not ceil:
            continue
        c = med(ceil)
        pps = statistics.median(r["rx_pps"] for r in ceil) / 1e6
        cells = []
        for t in tools:
            ok = [r for r in rs if r["tool"] == t and not r["error"] and not r["skipped"]]
            if ok:
                cells.append(f"{SHORT[t]} {med(ok) / c:.2f}")
        lines.append(f"  IPv{fam} {cfg}: {c / 1e9:.2f} Gbit/s ({pps:.3f} Mpkt/s), "
                     f"{min(r['rx_bps'] for r in ceil) / 1e9:.2f}-"
                     f"{max(r['rx_bps'] for r in ceil) / 1e9:.2f}; of it: "
                     + (", ".join(cells) or "-"))
    return lines


def skip_vs_copy(groups, tools):
    """Lines comparing dualperf's skip-rx-copy rows with each iperf3's copying row
    of the same size and family: what a user of an iperf3 without --skip-rx-copy
    gets by moving to dualperf with it."""
    lines = []
    med = lambda rs: statistics.median(r["rx_bps"] for r in rs)  # noqa: E731
    for (fam, p, cfg), rs in groups.items():
        if p != "udp" or not cfg.endswith(" skip-rx-copy"):
            continue
        dp = [r for r in rs if r["tool"] == "dualperf" and not r["error"]
              and not r["skipped"]]
        plain = groups.get((fam, p, cfg[:-len(" skip-rx-copy")]), [])
        cells = []
        for t in tools:
            theirs = [r for r in plain if r["tool"] == t and not r["error"]
                      and not r["skipped"]]
            if t != "dualperf" and dp and theirs:
                cells.append(f"x{med(dp) / med(theirs):.2f} {SHORT[t]}")
        if cells:
            lines.append(f"  IPv{fam} {cfg[:-len(' skip-rx-copy')]}: " + ", ".join(cells))
    return lines


def cmd_report(a):
    with open(a.results) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    labels = dict(x.split("=", 1) for x in a.tool_label)
    tools = [t for t in TOOLS if t in labels]
    groups = {}
    for r in rows:  # insertion order = run order
        groups.setdefault((r["family"], r.get("proto", "tcp"), r["config"]), []).append(r)
    n = len(tools)
    print()
    print(f"== Bulk transfers on loopback: dualperf vs iperf3, {a.duration} s per run, "
          f"{a.reps} run(s) per tool, {n} tools alternating ==")
    for t in tools:
        print(f"  {SHORT[t]:>2} = {labels[t]}")
    bad, used_marks = 0, set()
    for proto, title in (("tcp", "TCP"), ("udp", "UDP, 1 flow, unpaced")):
        if not any(k[1] == proto for k in groups):
            continue
        hdr, table, b = build_table(groups, tools, proto, used_marks)
        bad += b
        print(f"\n-- {title} --")
        print_table(hdr, table)
        cross = skip_vs_copy(groups, tools) if proto == "udp" else []
        if cross:
            print("\ndualperf with recv --skip-rx-copy / each iperf3 copying the payload "
                  "(its row without it):")
            print("\n".join(cross))
        ceil = ceiling_lines(groups, tools) if proto == "udp" else []
        if ceil:
            print("\nloopback ceiling (bench/ceiling/ceiling.c: sendmmsg and recvmmsg, "
                  "batches of 64,\nno metering; median, min-max) and each tool's median "
                  "as a share of it:")
            print("\n".join(ceil))
    print(f"""
Throughput (Gbit/s) = receiver-side payload bits per second (headers excluded),
median of the runs, min-max in brackets when there are several.  iperf3:
end.sum_received.bits_per_second = bytes received / test duration.  dualperf:
sum.received.bitrate_bps = bytes received / time from the first to the last
message received; the two differ by far less than 1 % of a {a.duration} s run.
dp/X = dualperf median / X's median, with the per-repetition ratios' min-max
when there are several.  cpu s/r = CPU use (user+system time / wall time, %;
100 = one core) of the sender / the receiver: iperf3's own
cpu_utilization_percent (host_total / remote_total), dualperf's from the
shell's `times` and /proc/PID/stat.
verdict: issue 22's goal for the row, against every iperf3 X that ran it:
one TCP stream dp/X >= {TCP_SINGLE_GOAL:.1f}; a paced stream (@G) the same rate (dp/X >=
0.99) for no more sender CPU; several streams dp/X > 1 (ahead); UDP 1400 B
dp/X >= {UDP_PLAIN_GOAL:.1f} without GSO and >= {UDP_GSO_GOAL:.1f} with it; other UDP sizes and the
skip-rx-copy rows have no goal (shown: dp/X >= {OTHER_GOAL:.2f}).
UDP: one unpaced flow of datagrams of the given payload size; GSO = with UDP
GSO in the sender (iperf3 --gsro, which also turns on GRO in its receiver);
skip-rx-copy = dualperf without GSO, its receiver copying only the head of
each datagram (recv --skip-rx-copy, MSG_TRUNC); iperf3 is not run there, as its
UDP --skip-rx-copy miscounts (12 bytes and no datagram for each datagram).
loss = datagrams sent but not received / sent (receiver socket overflow,
mostly); Mpkt/s = datagrams delivered per second.
n/a = that tool cannot run that config (an iperf3 without --gsro, or with a
miscounting --skip-rx-copy; a dualperf without GSO when no iperf3 has --gsro
either) and was not run.
Sender and receiver of each tool share this machine's cores: loopback rates
here move by 10-20 % from run to run; compare rows of one invocation.""")
    for m in sorted(used_marks):
        sym, text = MARKS[m]
        print(f"{sym} {text.format(rate=a.udp_paced_rate)}")
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
    s = sub.add_parser("ceiling-row")
    s.add_argument("--family", type=int, required=True)
    s.add_argument("--config", required=True)
    s.add_argument("--rep", type=int, required=True)
    s.add_argument("--results", required=True)
    s.add_argument("--size", type=float, required=True)
    s.add_argument("--line-file", required=True)
    s.set_defaults(fn=cmd_ceiling_row, tool="ceiling", proto="udp", mark=None)
    for name, fn in (("row", cmd_row), ("error-row", cmd_error_row),
                     ("skip-row", cmd_skip_row)):
        s = sub.add_parser(name)
        s.add_argument("--tool", choices=ROW_TOOLS, required=True)
        s.add_argument("--family", type=int, required=True)
        s.add_argument("--proto", choices=["tcp", "udp"], default="tcp")
        s.add_argument("--config", required=True)
        s.add_argument("--rep", type=int, required=True)
        s.add_argument("--results", required=True)
        s.add_argument("--mark", action="append", choices=sorted(MARKS),
                       help="this run differs from its config (footnote)")
        if name == "row":
            s.add_argument("--json", required=True)
            s.add_argument("--parallel", type=int, required=True)
            s.add_argument("--cc", default="")
            s.add_argument("--size", type=float, default=0,
                           help="UDP payload bytes per datagram")
            s.add_argument("--gso", type=int, default=0,
                           help="1: the run asked for UDP GSO")
            s.add_argument("--cpu-snd")
            s.add_argument("--cpu-rcv")
        else:
            s.add_argument("--message", required=True)
        s.set_defaults(fn=fn)
    s = sub.add_parser("report", help="exit 3 if any verdict fails")
    s.add_argument("--results", required=True)
    s.add_argument("--duration", required=True)
    s.add_argument("--reps", required=True)
    s.add_argument("--tool-label", action="append", required=True,
                   help="TOOL=LABEL, for each tool that ran")
    s.add_argument("--udp-paced-rate", default="?")
    s.set_defaults(fn=cmd_report)
    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
