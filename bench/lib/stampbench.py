#!/usr/bin/env python3
"""Helpers for bench/stamp.sh: one result row per step of a rate search
(a STAMP Session-Sender against a Session-Reflector for a few seconds), the
loopback ceiling, kernel UDP drop counters, and the report.

Not meant to be used on its own; see bench/README.md.  Standard library
only; JSON and `time -v` reading are shared with benchtool.py / soak.py.

Result rows are JSON lines appended to a results file:
  step     {"type": "step", "kind": "reflector"|"sender", "tool", "reflector",
            "sender", "family", "rate", "duration", "sent", "replies", "lost",
            "loss_pct", "achieved_pps", "achieved_pct", "wall_s",
            "rss_kb" (the reflector's peak RSS), "refl_rx", "refl_tx",
            "refl_drop", "port_drops", "rcvbuf_errors", "verdict", "error"}
           kind reflector: `tool` is the reflector measured (the sender is
           always dualperf); kind sender: `tool` is the sender measured (the
           reflector is always dualperf's).
  search   {"type": "search", "kind", "tool", "family", "best", "fail",
            "capped"}  (written by the script)
  ceiling  {"type": "ceiling", "family", "recv_pps", "sent_pps"}

A step passes when round-trip loss <= MAX_LOSS_PCT and the sender achieved
at least MIN_ACHIEVED of the rate asked for:
  loss     = (sent - packets answered) / sent
             dualperf: flows[0].stamp.round_trip_lost / flows[0].sent.packets
             stamp-suite: (packets_sent - packets_received) / packets_sent
  achieved = sent / the sending time: dualperf max(duration,
             flows[0].sent.duration_ns) (a sender that falls behind sends its
             backlog late, so its span grows); stamp-suite the --duration it
             was given (it stops sending then, so a sender that falls behind
             sends fewer packets).  The wall time around the stamp-suite
             process (start-up and the wait for the last replies included)
             is kept as wall_s.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtool import ContractError, _get as get, _num as num  # noqa: E402
from soak import load_doc, opt, time_v  # noqa: E402

MAX_LOSS_PCT = 0.1
MIN_ACHIEVED = 0.99
# The goal: dualperf's reflector at least this share of the ceiling.
GOAL_CEILING_PCT = 80.0
TOOLS = ("dualperf", "stamp-suite")


def err(msg):
    print(f"stampbench: {msg}", file=sys.stderr)


# --------------------------------------------------------------------------
# parsing

def parse_dp_send(path, duration):
    """(sent, replies, lost, send_s) from `dualperf send --stamp --json`."""
    doc = load_doc(path)
    flow = get(doc, ["flows", 0])
    if flow.get("error"):
        raise ContractError(f"flows[0].error: {flow['error']}")
    sent = num(flow, ["sent", "packets"], int)
    st = get(flow, ["stamp"])
    if st is None:
        raise ContractError("flows[0].stamp is null (not a STAMP session?)")
    lost = num(st, ["round_trip_lost"], int)
    replies = num(st, ["replies"], int)
    span = opt(flow, ["sent", "duration_ns"])
    send_s = max(duration, (span or 0) / 1e9)
    return sent, replies, lost, send_s


def parse_ss_send(path):
    """(sent, replies, lost) from `stamp-suite --output-format json` (sender):
    its last JSON line has packets_sent and packets_received."""
    doc = load_doc(path)
    sent = num(doc, ["packets_sent"], int)
    received = num(doc, ["packets_received"], int)
    return sent, received, max(0, sent - received)


def reflector_counters(tool, path):
    """(received, reflected, dropped) the reflector printed when stopped, or
    Nones.  dualperf recv --json: its last line's stamp {reflected,
    malformed, ..., rate_limited, send_failures}; stamp-suite -i
    --output-format json: {total_packets_received, total_packets_reflected,
    total_packets_dropped, reply_queue_rejected, ...}."""
    try:
        with open(path) as f:
            lines = [l.strip() for l in f if l.strip().startswith("{")]
    except OSError:
        return None, None, None
    for line in reversed(lines):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if tool == "dualperf":
            st = _find_key(doc, "stamp")
            if isinstance(st, dict) and "reflected" in st:
                dropped = sum(int(st.get(k) or 0) for k in
                              ("malformed", "auth_failures", "not_allowed",
                               "rate_limited", "send_failures"))
                return None, int(st["reflected"]), dropped
        elif "total_packets_reflected" in doc:
            return (int(doc.get("total_packets_received", 0)),
                    int(doc["total_packets_reflected"]),
                    int(doc.get("total_packets_dropped", 0))
                    + int(doc.get("reply_queue_rejected", 0)))
    return None, None, None


def _find_key(obj, key, depth=0):
    if depth > 4:
        return None
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = _find_key(v, key, depth + 1)
            if r is not None:
                return r
    return None


def udp_port_drops(port):
    """Sum of the `drops` column of /proc/net/udp{,6} for local port `port`:
    datagrams the kernel dropped because that socket's buffer was full."""
    total = 0
    for name in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(name) as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) < 13:
                        continue
                    if int(fields[1].rsplit(":", 1)[1], 16) == port:
                        total += int(fields[-1])
        except OSError:
            pass
    return total


def rcvbuf_errors():
    """Kernel-wide UDP receive-buffer errors, IPv4 + IPv6 (/proc/net/snmp,
    /proc/net/snmp6)."""
    total = 0
    try:
        with open("/proc/net/snmp") as f:
            rows = [l.split() for l in f if l.startswith("Udp:")]
        if len(rows) >= 2:
            total += int(dict(zip(rows[0][1:], rows[1][1:])).get(
                "RcvbufErrors", 0))
    except OSError:
        pass
    try:
        with open("/proc/net/snmp6") as f:
            for line in f:
                k, _, v = line.partition(" ")
                if k == "Udp6RcvbufErrors":
                    total += int(v.split()[0])
    except OSError:
        pass
    return total


def parse_ceiling(path):
    """The last `ceiling family=F rx=block [tx=mmsg|gso] ... recv_pps=R ...`
    line: (recv_pps, sent_pps, tx)."""
    kv = None
    with open(path) as f:
        for line in f:
            if line.startswith("ceiling "):
                kv = dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)
    if kv is None:
        raise ContractError(f"{path}: no 'ceiling ...' line")
    return float(kv["recv_pps"]), float(kv["sent_pps"]), kv.get("tx", "mmsg")


# --------------------------------------------------------------------------
# commands

def verdict(row):
    if row.get("error"):
        return "ERROR"
    ok = (row["loss_pct"] <= MAX_LOSS_PCT
          and row["achieved_pct"] >= 100 * MIN_ACHIEVED)
    return "PASS" if ok else "FAIL"


def cmd_step(a):
    row = dict(type="step", kind=a.kind, tool=a.tool, reflector=a.reflector,
               sender=a.sender, family=a.family, rate=a.rate,
               duration=a.duration, sent=None, replies=None, lost=None,
               loss_pct=None, achieved_pps=None, achieved_pct=None,
               wall_s=a.wall, rss_kb=None, refl_rx=None, refl_tx=None,
               refl_drop=None, port_drops=a.port_drops,
               rcvbuf_errors=a.rcvbuf_errors, verdict=None, error=a.error)
    if a.reflector_time and os.path.exists(a.reflector_time):
        try:
            row["rss_kb"] = time_v(a.reflector_time)[0]
        except (ContractError, OSError, ValueError):
            pass
    if a.reflector_out:
        rx, tx, drop = reflector_counters(a.reflector, a.reflector_out)
        row.update(refl_rx=rx, refl_tx=tx, refl_drop=drop)
    if not row["error"]:
        try:
            if a.sender == "dualperf":
                sent, replies, lost, send_s = parse_dp_send(a.send_out,
                                                            a.duration)
            else:
                sent, replies, lost = parse_ss_send(a.send_out)
                send_s = a.duration
            if sent <= 0:
                raise ContractError("the sender sent nothing")
            row.update(sent=sent, replies=replies, lost=lost,
                       loss_pct=100.0 * lost / sent,
                       achieved_pps=sent / send_s,
                       achieved_pct=100.0 * sent / send_s / a.rate)
        except (ContractError, OSError, ValueError, json.JSONDecodeError) as e:
            row["error"] = f"{a.sender} output: {e}"
    row["verdict"] = verdict(row)
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(summary(row))
    return 0


def summary(row):
    head = (f"{row['verdict']} {row['kind']} {row['tool']} IPv{row['family']}"
            f" {row['rate']:,} pkt/s")
    if row.get("error"):
        return f"{head}: {row['error']}"
    s = (f"{head}: sent {row['sent']:,}, answered {row['replies']:,}, "
         f"loss {row['loss_pct']:.3f} %, achieved {row['achieved_pps']:,.0f}"
         f" pkt/s ({row['achieved_pct']:.2f} %)")
    if row.get("wall_s") is not None:
        s += f", wall {row['wall_s']:.2f} s"
    extra = []
    if row.get("refl_tx") is not None:
        extra.append(f"reflector answered {row['refl_tx']:,}"
                     + (f" of {row['refl_rx']:,}" if row.get("refl_rx")
                        is not None else "")
                     + (f", dropped {row['refl_drop']:,}"
                        if row.get("refl_drop") else ""))
    if row.get("port_drops"):
        extra.append(f"kernel drops at its socket {row['port_drops']:,}")
    if row.get("rcvbuf_errors"):
        extra.append(f"machine's UDP rcvbuf errors {row['rcvbuf_errors']:,}")
    if row.get("rss_kb") is not None:
        extra.append(f"reflector RSS {row['rss_kb'] / 1024:.1f} MB")
    if extra:
        s += "; " + "; ".join(extra)
    return s


def cmd_ceiling(a):
    try:
        recv, sent, tx = parse_ceiling(a.file)
    except (ContractError, OSError, ValueError, KeyError) as e:
        err(str(e))
        return 1
    with open(a.results, "a") as f:
        f.write(json.dumps(dict(type="ceiling", family=a.family, tx=tx,
                                recv_pps=recv, sent_pps=sent)) + "\n")
    print(f"ceiling IPv{a.family} ({tx}): {recv:,.0f} pkt/s received "
          f"({sent:,.0f} sent)")
    return 0


def cmd_port_drops(a):
    print(udp_port_drops(a.port))
    return 0


def cmd_rcvbuf(_a):
    print(rcvbuf_errors())
    return 0


def fmt_int(v):
    return "-" if v is None else f"{v:,.0f}"


def first_failure(steps, best):
    """The lowest rate above `best` that never passed, as its last attempt."""
    cand = {}
    passed = {s["rate"] for s in steps if s["verdict"] == "PASS"}
    for s in steps:
        if s["rate"] > best and s["rate"] not in passed:
            cand[s["rate"]] = s  # the last attempt at that rate
    if not cand:
        return None
    return cand[min(cand)]


def describe_fail(s):
    if s is None:
        return "-"
    if s.get("error"):
        return f"{s['rate']:,}: error"
    why = []
    if s["achieved_pct"] < 100 * MIN_ACHIEVED:
        why.append(f"achieved {s['achieved_pps']:,.0f}")
    loss = f"loss {s['loss_pct']:.2f} %"
    where = loss_place(s)
    why.append(f"{loss} ({where})" if where else loss)
    return f"{s['rate']:,}: " + ", ".join(why)


def loss_place(s):
    """Where the kernel dropped (nearly) all of a step's lost packets: at the
    reflector's socket (its `drops` in /proc/net/udp*), or elsewhere, i.e. at
    the sender's socket (the machine's UDP receive-buffer errors less the
    reflector's; the steps' two processes own the only busy UDP sockets).
    None when the counters do not account for 90 % of the loss."""
    lost = s.get("lost") or 0
    if lost <= 0:
        return None
    at_refl = s.get("port_drops") or 0
    others = (s.get("rcvbuf_errors") or 0) - at_refl
    if at_refl >= 0.9 * lost:
        return "dropped at the reflector's socket"
    if others >= 0.9 * lost:
        return "dropped at the sender's socket"
    return None


def cmd_report(a):
    rows = []
    if os.path.exists(a.results):
        with open(a.results) as f:
            rows = [json.loads(l) for l in f if l.strip()]
    families = []
    for r in rows:
        if r.get("family") not in families:
            families.append(r["family"])
    print(f"STAMP on loopback, 64-byte test packets, {a.step_seconds} s per "
          f"step; a step passes with round-trip loss <= {MAX_LOSS_PCT} % and"
          f" the sender at >= {100 * MIN_ACHIEVED:.0f} % of the rate asked")
    print("reflector: load from dualperf send --stamp; sender: against "
          "dualperf's reflector (dualperf's sender and reflector: one search, "
          "in both rows); '>=' = passed at the search cap")
    print()
    hdr = ["IPv", "figure", "dualperf", "stamp-suite", "dualperf/stamp-suite"]
    out = []
    goals = []
    for fam in families:
        def best_ceiling(tx):
            c = [r["recv_pps"] for r in rows if r["type"] == "ceiling"
                 and r["family"] == fam and r.get("tx", "mmsg") == tx]
            return max(c) if c else None
        # The ceiling: sendmmsg, as vs-ditg.sh; beside it the
        # ceiling with UDP GSO, which dualperf uses on loopback.
        ceiling = best_ceiling("mmsg")
        gso_ceiling = best_ceiling("gso")
        res = {}
        for kind in ("reflector", "sender"):
            for tool in TOOLS:
                # dualperf's sender against dualperf's reflector: one
                # search (kind reflector) serves both comparisons.
                k = "reflector" if tool == "dualperf" else kind
                steps = [r for r in rows if r["type"] == "step"
                         and r["family"] == fam and r["kind"] == k
                         and r["tool"] == tool]
                srch = [r for r in rows if r["type"] == "search"
                        and r["family"] == fam and r["kind"] == k
                        and r["tool"] == tool]
                passed = [s for s in steps if s["verdict"] == "PASS"]
                best = max((s["rate"] for s in passed), default=0)
                at_best = max((s for s in passed if s["rate"] == best),
                              key=lambda s: s["achieved_pps"], default=None)
                rss = max((s["rss_kb"] for s in steps
                           if s.get("rss_kb") is not None), default=None)
                capped = bool(srch and srch[-1].get("capped"))
                res[kind, tool] = dict(
                    steps=steps, best=best, at_best=at_best, rss=rss,
                    capped=capped, searched=bool(srch),
                    fail=first_failure(steps, best))
        out.append([str(fam), "loopback ceiling, pkt/s (ceiling.c, 64 B UDP)",
                    fmt_int(ceiling), "", ""])
        out.append([str(fam), "loopback ceiling with UDP GSO, pkt/s "
                    "(ceiling.c -G)", fmt_int(gso_ceiling), "", ""])

        def val(kind, tool):
            r = res[kind, tool]
            if not r["steps"]:
                return "not measured"
            if r["best"] == 0:
                return "< lowest step"
            return (">= " if r["capped"] else "") + fmt_int(r["best"])

        def ratio(x, y):
            return "-" if not x or not y else f"{x / y:.2f}"

        def pct(x, of=ceiling):
            return "-" if not x or not of else f"{100 * x / of:.0f} %"

        rd, rs = res["reflector", "dualperf"], res["reflector", "stamp-suite"]
        sd, ss = res["sender", "dualperf"], res["sender", "stamp-suite"]
        out.append([str(fam), "reflector: highest rate, pkt/s",
                    val("reflector", "dualperf"),
                    val("reflector", "stamp-suite"),
                    ratio(rd["best"], rs["best"])])
        out.append([str(fam), "reflector: % of the ceiling",
                    pct(rd["best"]), pct(rs["best"]), ""])
        out.append([str(fam), "reflector: % of the GSO ceiling",
                    pct(rd["best"], gso_ceiling), pct(rs["best"], gso_ceiling),
                    ""])
        out.append([str(fam), "reflector: first failing rate",
                    describe_fail(rd["fail"]), describe_fail(rs["fail"]), ""])
        out.append([str(fam), "reflector: peak RSS, MB",
                    "-" if rd["rss"] is None else f"{rd['rss'] / 1024:.1f}",
                    "-" if rs["rss"] is None else f"{rs['rss'] / 1024:.1f}",
                    ratio(rd["rss"], rs["rss"])])
        out.append([str(fam), "sender: highest rate, pkt/s",
                    val("sender", "dualperf"), val("sender", "stamp-suite"),
                    ratio(sd["best"], ss["best"])])

        def ach(r):
            s = r["at_best"]
            if s is None:
                return "-"
            return f"{s['achieved_pps']:,.0f} of {s['rate']:,}"

        out.append([str(fam), "sender: achieved at that rate, pkt/s",
                    ach(sd), ach(ss), ""])
        out.append([str(fam), "sender: first failing rate",
                    describe_fail(sd["fail"]), describe_fail(ss["fail"]), ""])

        def ahead(d, s):
            if d["best"] and not s["best"] and s["steps"]:
                return "yes (stamp-suite passed no step)"
            if not d["best"] or not s["best"]:
                return "unknown"
            if d["best"] > s["best"]:
                return f"yes ({d['best'] / s['best']:.2f}x)"
            if d["capped"] and s["capped"]:
                return "unknown (both at the cap)"
            return f"NO ({d['best'] / s['best']:.2f}x)"

        if rd["best"] and ceiling:
            share = 100 * rd["best"] / ceiling
            cg = (f"{'met' if share >= GOAL_CEILING_PCT else 'NOT met'} "
                  f"({share:.0f} %")
            if gso_ceiling:
                cg += f"; {100 * rd['best'] / gso_ceiling:.0f} % of the GSO ceiling"
            cg += ")"
        else:
            cg = "unknown"
        goals.append(f"GOAL IPv{fam}: dualperf's reflector ahead of "
                     f"stamp-suite's: {ahead(rd, rs)}; dualperf's sender ahead"
                     f" of stamp-suite's: {ahead(sd, ss)}; dualperf's reflector"
                     f" >= {GOAL_CEILING_PCT:.0f} % of the ceiling: {cg}")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for r in out:
        print("| " + " | ".join(r) + " |")
    print()
    for g in goals:
        print(g)
    if a.goals_out:
        with open(a.goals_out, "w") as f:
            f.write("\n".join(goals) + "\n")
    return 0


def cmd_selftest(_a):
    import tempfile
    d = tempfile.mkdtemp(prefix="stampbench-selftest.")
    p = os.path.join(d, "x")
    # dualperf sender JSON: 1000 sent, 2 lost, span 1.2 s > duration 1 s
    with open(p, "w") as f:
        json.dump({"flows": [{"sent": {"packets": 1000,
                                       "duration_ns": 1_200_000_000},
                              "stamp": {"replies": 998, "round_trip_lost": 2},
                              "error": None}]}, f)
    sent, replies, lost, send_s = parse_dp_send(p, 1.0)
    assert (sent, replies, lost, send_s) == (1000, 998, 2, 1.2), send_s
    with open(p, "w") as f:
        f.write('log line\n{"packets_sent": 500, "packets_received": 499,'
                ' "packets_lost": 1}\n')
    assert parse_ss_send(p) == (500, 499, 1)
    with open(p, "w") as f:
        f.write('{"flow": 1}\n{"counters": {"datagrams": 3, "stamp": '
                '{"reflected": 7, "malformed": 1, "rate_limited": 2}}}\n')
    assert reflector_counters("dualperf", p) == (None, 7, 3)
    with open(p, "w") as f:
        f.write('{"total_packets_received": 9, "total_packets_reflected": 8,'
                ' "total_packets_dropped": 1, "reply_queue_rejected": 0}\n')
    assert reflector_counters("stamp-suite", p) == (9, 8, 1)
    with open(p, "w") as f:
        f.write("ceiling family=4 rx=block size=64 batch=64 duration_s=1.0 "
                "sent_pps=400000 recv_pps=380000 sent=1 received=1 "
                "dropped=0\n")
    assert parse_ceiling(p) == (380000.0, 400000.0, "mmsg")
    with open(p, "w") as f:
        f.write("ceiling family=6 rx=block tx=gso size=64 batch=64 "
                "duration_s=1.0 sent_pps=900000 recv_pps=880000 sent=1 "
                "received=1 dropped=0\n")
    assert parse_ceiling(p) == (880000.0, 900000.0, "gso")
    base = dict(error=None, loss_pct=0.1, achieved_pct=99.0)
    assert verdict(base) == "PASS"
    assert verdict(dict(base, loss_pct=0.11)) == "FAIL"
    assert verdict(dict(base, achieved_pct=98.9)) == "FAIL"
    assert verdict(dict(base, error="x")) == "ERROR"
    steps = [dict(rate=100, verdict="PASS"), dict(rate=200, verdict="FAIL"),
             dict(rate=200, verdict="PASS"), dict(rate=400, verdict="FAIL"),
             dict(rate=300, verdict="FAIL", n=1),
             dict(rate=300, verdict="FAIL", n=2)]
    assert first_failure(steps, 200) == dict(rate=300, verdict="FAIL", n=2)
    assert loss_place(dict(lost=10, port_drops=9, rcvbuf_errors=9)) == \
        "dropped at the reflector's socket"
    assert loss_place(dict(lost=10, port_drops=0, rcvbuf_errors=10)) == \
        "dropped at the sender's socket"
    assert loss_place(dict(lost=10, port_drops=2, rcvbuf_errors=4)) is None
    assert isinstance(rcvbuf_errors(), int)
    assert isinstance(udp_port_drops(1), int)
    os.unlink(p)
    os.rmdir(d)
    print("stampbench selftest: ok")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("step")
    s.add_argument("--kind", choices=["reflector", "sender"], required=True)
    s.add_argument("--tool", choices=TOOLS, required=True)
    s.add_argument("--reflector", choices=TOOLS, required=True)
    s.add_argument("--sender", choices=TOOLS, required=True)
    s.add_argument("--family", type=int, required=True)
    s.add_argument("--rate", type=int, required=True)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--send-out", required=True)
    s.add_argument("--wall", type=float)
    s.add_argument("--reflector-time")
    s.add_argument("--reflector-out")
    s.add_argument("--port-drops", type=int)
    s.add_argument("--rcvbuf-errors", type=int)
    s.add_argument("--error")
    s.add_argument("--results", required=True)
    s.set_defaults(fn=cmd_step)

    s = sub.add_parser("ceiling")
    s.add_argument("--family", type=int, required=True)
    s.add_argument("--file", required=True)
    s.add_argument("--results", required=True)
    s.set_defaults(fn=cmd_ceiling)

    s = sub.add_parser("port-drops")
    s.add_argument("port", type=int)
    s.set_defaults(fn=cmd_port_drops)

    s = sub.add_parser("rcvbuf-errors")
    s.set_defaults(fn=cmd_rcvbuf)

    s = sub.add_parser("report")
    s.add_argument("--results", required=True)
    s.add_argument("--step-seconds", required=True)
    s.add_argument("--goals-out")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("selftest")
    s.set_defaults(fn=cmd_selftest)

    a = p.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
