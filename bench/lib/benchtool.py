#!/usr/bin/env python3
"""Helpers for bench/vs-ditg.sh: free ports, port readiness, parsing of
ITGDec and `dualperf send --json` output, and the final report.

Not meant to be used on its own; see bench/README.md.  Standard library only.

Result rows are JSON lines appended to a results file, one per measurement:
  {"tool", "family", "rate", "duration", "sent", "received", "lost",
   "loss_pct", "tool_rx_pps", "error"}
where sent/received are packet counts over the whole run and rates are
derived as count / requested duration, identically for every tool.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

# "sustainable" = at least this fraction of the requested packets received
# and at most this much loss (percent).
SUSTAIN_MIN_RX_FRACTION = 0.999
SUSTAIN_MAX_LOSS_PCT = 0.1


def err(msg):
    print(f"benchtool: {msg}", file=sys.stderr)


# --------------------------------------------------------------------------
# ports

def _bindable(port):
    """True if `port` can be bound for TCP and UDP on every loopback we use.

    A dual-stack [::] bind covers 127.0.0.1 and ::1 (and whatever a receiver
    that binds the wildcard will need); fall back to IPv4 only if the
    machine has no IPv6."""
    fams = []
    if socket.has_ipv6:
        fams.append((socket.AF_INET6, "::"))
    fams.append((socket.AF_INET, "0.0.0.0"))
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        for fam, addr in fams:
            try:
                s = socket.socket(fam, typ)
            except OSError:
                continue  # family unavailable
            try:
                if fam == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                s.bind((addr, port))
            except OSError:
                return False
            finally:
                s.close()
            break  # the dual-stack bind succeeded; IPv4-only not needed
    return True


def cmd_free_ports(a):
    chosen = []
    for _ in range(500):
        if len(chosen) == a.count:
            break
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port in chosen or port + 1 in chosen:
            continue
        if _bindable(port):
            chosen.append(port)
    if len(chosen) != a.count:
        err("could not find free ports")
        return 1
    print(" ".join(str(p) for p in chosen))
    return 0


def _bound_ports(proto):
    """Local ports bound in /proc/net for proto tcp (LISTEN only) or udp."""
    ports = set()
    for name in (proto, proto + "6"):
        try:
            with open(f"/proc/net/{name}") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    if len(fields) < 4:
                        continue
                    if proto == "tcp" and fields[3] != "0A":
                        continue
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def _alive(pid):
    """False once pid is gone or a zombie (exited, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(") ", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def cmd_wait_port(a):
    """Wait until something listens on port (tcp) / has it bound (udp)."""
    deadline = time.monotonic() + a.timeout
    protos = ["tcp", "udp"] if a.proto == "any" else [a.proto]
    while time.monotonic() < deadline:
        if any(a.port in _bound_ports(p) for p in protos):
            return 0
        if a.pid and not _alive(a.pid):
            err(f"process {a.pid} exited before binding port {a.port}")
            return 1
        time.sleep(0.05)
    err(f"timeout ({a.timeout}s) waiting for {a.proto} port {a.port}")
    return 1


# --------------------------------------------------------------------------
# D-ITG

def itgdec_total(path):
    """(packets, avg_rate_pps) from the TOTAL RESULTS block of `ITGDec path`.

    A missing or empty log means nothing was sent/received: (0, 0.0)."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return 0, 0.0
    out = subprocess.run(["ITGDec", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, timeout=300)
    text = out.stdout
    idx = text.rfind("TOTAL RESULTS")
    if idx < 0:
        raise ValueError(f"ITGDec {path}: no 'TOTAL RESULTS' block "
                         f"(exit {out.returncode})")
    packets = rate = None
    for line in text[idx:].splitlines():
        key, _, val = line.partition("=")
        key = key.strip()
        if key == "Total packets":
            packets = int(val.split()[0])
        elif key == "Average packet rate":
            rate = float(val.split()[0])
    if packets is None:
        raise ValueError(f"ITGDec {path}: no 'Total packets' line")
    return packets, rate if rate is not None else 0.0


def cmd_ditg_row(a):
    row = dict(tool=a.tool, family=a.family, rate=a.rate,
               duration=a.duration, error=None)
    try:
        sent, _ = itgdec_total(a.sendlog)
        recv, rx_rate = itgdec_total(a.recvlog)
        lost = max(sent - recv, 0)
        row.update(sent=sent, received=recv, lost=lost,
                   loss_pct=(100.0 * lost / sent) if sent else None,
                   tool_rx_pps=rx_rate)
        if sent == 0:
            row["error"] = "ITGSend logged no packets"
    except (ValueError, OSError, subprocess.SubprocessError) as e:
        row["error"] = str(e)
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    return _summary(row)


# --------------------------------------------------------------------------
# dualperf

class ContractError(Exception):
    pass


def _get(obj, path):
    cur = obj
    walked = []
    for key in path:
        walked.append(str(key))
        if isinstance(key, int):
            if not isinstance(cur, list) or len(cur) <= key:
                raise ContractError(f"missing '{'.'.join(walked)}'")
        elif not isinstance(cur, dict) or key not in cur:
            raise ContractError(f"missing field '{'.'.join(walked)}'")
        cur = cur[key]
    return cur


def _num(obj, path, kind=float):
    v = _get(obj, path)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ContractError(f"field '{'.'.join(map(str, path))}' is not a "
                            f"number: {v!r}")
    if kind is int and v != int(v):
        raise ContractError(f"field '{'.'.join(map(str, path))}' is not an "
                            f"integer: {v!r}")
    return kind(v)


def parse_dualperf(path):
    """Extract the fields we need from `dualperf send --json` stdout.

    Contract: {"flows":[{"id":0, "sent":{"packets":N,"rate_pps":F,...},
               "received":{"packets":N,"unique_packets":N,"rate_pps":F,
                           "loss":{"lost":N,"loss_pct":F,...},...}}]}
    The JSON document is the whole of stdout; if other lines are mixed in,
    the last line that parses as a JSON object is used."""
    with open(path) as f:
        text = f.read()
    if not text.strip():
        raise ContractError("empty stdout (expected a JSON document)")
    doc = None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    doc = json.loads(line)
                    break
                except json.JSONDecodeError:
                    continue
    if not isinstance(doc, dict):
        raise ContractError("stdout is not a JSON object: "
                            + text.strip()[:200].replace("\n", " "))
    if doc.get("interrupted") is True:
        raise ContractError("dualperf reports the run was interrupted")
    flows = _get(doc, ["flows"])
    if not isinstance(flows, list) or not flows:
        raise ContractError("'flows' is empty or not a list")
    if len(flows) > 1:
        err(f"{path}: {len(flows)} flows reported, using flows[0]")
    fl = flows[0]
    sent = _num(fl, ["sent", "packets"], int)
    recv = _num(fl, ["received", "packets"], int)
    rx_rate = _num(fl, ["received", "rate_pps"])
    lost = _num(fl, ["received", "loss", "lost"], int)
    loss_pct = _num(fl, ["received", "loss", "loss_pct"])
    try:
        unique = _num(fl, ["received", "unique_packets"], int)
    except ContractError as e:
        err(f"{path}: {e}; using received.packets")
        unique = recv
    # How long the sender actually took.  dualperf sends rate x duration
    # packets; when it cannot keep up it runs past the requested duration,
    # so count / requested duration would overstate the rate achieved.
    try:
        send_s = _num(fl, ["sent", "duration_ns"]) / 1e9
    except ContractError as e:
        err(f"{path}: {e}; assuming the run took the requested duration")
        send_s = None
    return dict(sent=sent, received=recv, unique=unique, lost=lost,
                loss_pct=loss_pct, tool_rx_pps=rx_rate, send_s=send_s)


def eff_duration(row):
    """Requested duration, or the sender's actual one if it ran longer."""
    d = row["duration"]
    s = row.get("send_s")
    return max(d, s) if s else d


def overran(row):
    s = row.get("send_s")
    return bool(s) and s > row["duration"] * 1.001


def cmd_dualperf_row(a):
    row = dict(tool=a.tool, family=a.family, rate=a.rate,
               duration=a.duration, error=None)
    try:
        row.update(parse_dualperf(a.json))
    except (ContractError, OSError) as e:
        row["error"] = f"dualperf JSON: {e} (raw output: {a.json})"
    if a.results:
        with open(a.results, "a") as f:
            f.write(json.dumps(row) + "\n")
    return _summary(row, verdict=a.verdict)


def sustainable(row):
    """>= 99.9 % of the requested rate received, measured over the requested
    duration or the actual one if the sender overran it, and <= 0.1 % loss."""
    if row.get("error"):
        return False
    got_pps = row.get("unique", row["received"]) / eff_duration(row)
    lp = row.get("loss_pct")
    return (got_pps >= SUSTAIN_MIN_RX_FRACTION * row["rate"]
            and lp is not None and lp <= SUSTAIN_MAX_LOSS_PCT)


def _summary(row, verdict=False):
    """One line on stdout for the log; exit status 1 if the row is an error."""
    if row.get("error"):
        print(f"ERROR {row['tool']} v{row['family']} {row['rate']}pps: "
              f"{row['error']}")
        return 1
    d = eff_duration(row)
    lp = row.get("loss_pct")
    line = (f"{row['tool']} v{row['family']} {row['rate']}pps: "
            f"sent={row['sent']} ({row['sent'] / d:.0f}/s) "
            f"received={row['received']} ({row['received'] / d:.0f}/s) "
            f"loss={'n/a' if lp is None else f'{lp:.3f}%'}")
    if overran(row):
        line += (f" OVERRAN: sending took {row['send_s']:.3f}s for "
                 f"{row['duration']:g}s requested")
    if verdict:
        got = row.get("unique", row["received"])
        line = ("PASS " if sustainable(row) else "FAIL ") + line + (
            f" rx={100.0 * got / (row['rate'] * d):.2f}% of requested")
    print(line)
    return 0


def cmd_error_row(a):
    row = dict(tool=a.tool, family=a.family, rate=a.rate,
               duration=a.duration, error=a.message)
    with open(a.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    return _summary(row)


# --------------------------------------------------------------------------
# report

def _fmt_int(v):
    return "-" if v is None else f"{v:,.0f}"


def _fmt_pct(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def _read_kv_lines(path, prefix):
    rows = []
    if not path or not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0] != prefix:
                continue
            rows.append(dict(p.split("=", 1) for p in parts[1:] if "=" in p))
    return rows


def cmd_report(a):
    rows = []
    if os.path.exists(a.results):
        with open(a.results) as f:
            rows = [json.loads(l) for l in f if l.strip()]

    # dualperf received rate per (family, rate), for the ratio column.
    dp_rx = {}
    for r in rows:
        if r["tool"] == "dualperf" and not r.get("error"):
            dp_rx[(r["family"], r["rate"])] = r["received"] / eff_duration(r)

    hdr = ["tool", "fam", "req pkt/s", "sent pkt/s", "recv pkt/s",
           "achieved %", "loss %", "dp/row (recv)", "note"]
    table = []
    for r in rows:
        key = (r["family"], r["rate"])
        if r.get("error"):
            table.append([r["tool"], f"v{r['family']}", _fmt_int(r["rate"]),
                          "-", "-", "-", "-", "-", "ERROR: " + r["error"]])
            continue
        d = eff_duration(r)
        sent_pps = r["sent"] / d
        recv_pps = r["received"] / d
        if r["tool"] == "dualperf":
            ratio = "-"
        elif key in dp_rx and recv_pps > 0:
            ratio = f"{dp_rx[key] / recv_pps:.2f}x"
        else:
            ratio = "n/a"
        table.append([r["tool"], f"v{r['family']}", _fmt_int(r["rate"]),
                      _fmt_int(sent_pps), _fmt_int(recv_pps),
                      _fmt_pct(100.0 * sent_pps / r["rate"]),
                      _fmt_pct(r.get("loss_pct"), 3), ratio,
                      f"tool-reported rx {_fmt_int(r.get('tool_rx_pps'))}/s"
                      + (f"; sending took {r['send_s']:.3f}s, not "
                         f"{r['duration']:g}s" if overran(r) else "")])
    for fam, rate, msg in ([tuple(x.split("\t", 2)) for x in a.missing]
                           if a.missing else []):
        table.append(["dualperf", f"v{fam}", _fmt_int(int(rate)), "-", "-",
                      "-", "-", "-", msg])

    # Sort: family, rate, then tool order as run.
    order = {"ITGSend": 0, "ITGSend-poll": 1, "dualperf": 2}
    table.sort(key=lambda t: (t[1], int(t[2].replace(",", "")),
                              order.get(t[0], 9)))
    widths = [max(len(str(x[i])) for x in table + [hdr])
              for i in range(len(hdr))]
    print()
    print(f"== Single UDP flow, 64-byte payload, loopback, "
          f"{a.duration}s per run ==")
    print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)).rstrip())
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)).rstrip())
    print("(sent/recv pkt/s = packet count / requested duration, or / the "
          "actual sending time if the sender\n ran longer; achieved % = sent "
          "pkt/s / requested; loss % = (sent-received)/sent for D-ITG,\n "
          "received.loss.loss_pct for dualperf; dp/row = dualperf recv pkt/s "
          "divided by this row's,\n same family and rate)")

    # Ceiling and max sustainable rate.
    ceilings = _read_kv_lines(a.ceiling, "ceiling")
    search = _read_kv_lines(a.search, "search")
    print()
    print("== Loopback ceiling vs dualperf max sustainable single-flow rate ==")
    print(f"(sustainable = recv pkt/s >= {100 * SUSTAIN_MIN_RX_FRACTION:.1f}% "
          f"of requested, over the actual sending time if the sender overran,\n"
          f" and <= {SUSTAIN_MAX_LOSS_PCT}% loss; {a.search_duration}s per probe)")
    fams = sorted({c.get("family") for c in ceilings} |
                  {s.get("family") for s in search})
    for fam in fams:
        blk = [c for c in ceilings if c.get("family") == fam
               and c.get("rx") == "block"]
        spn = [c for c in ceilings if c.get("family") == fam
               and c.get("rx") == "spin"]
        # Best of the runs: background load only ever lowers a ceiling.
        ceil = max((float(c["recv_pps"]) for c in blk), default=None)
        line = f"IPv{fam}: ceiling (sendmmsg/recvmmsg x64, blocking rx) "
        line += f"{_fmt_int(ceil)} pkt/s" if ceil else "n/a"
        if len(blk) > 1:
            line += f" (best of {len(blk)})"
        if spn:
            line += ("; busy-poll rx "
                     f"{_fmt_int(max(float(c['recv_pps']) for c in spn))} pkt/s")
        print(line)
        s = [x for x in search if x.get("family") == fam]
        if not s:
            print(f"  dualperf max sustainable: {a.dp_status or 'not measured'}")
            continue
        s = s[-1]
        best = int(s.get("best", "0"))
        qual = s.get("qual", "")
        if best <= 0:
            print(f"  dualperf max sustainable: none of the probed rates "
                  f"(lowest failing: {_fmt_int(int(s.get('fail', '0')))} pkt/s)")
            continue
        pct = f" = {100.0 * best / ceil:.0f}% of ceiling" if ceil else ""
        fail = s.get("fail")
        nxt = (f" (next probe {_fmt_int(int(fail))} pkt/s failed)"
               if fail and fail != "0" else " (highest probed rate)")
        print(f"  dualperf max sustainable: {qual}{_fmt_int(best)} pkt/s"
              f"{pct}{nxt}")
        if ceil and best > ceil:
            print("  note: above the ceiling -- the ceiling runs were slowed by "
                  "other load on the machine; rerun when it is idle")
    return 0


# --------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("free-ports")
    s.add_argument("--count", type=int, default=1)
    s.set_defaults(fn=cmd_free_ports)

    s = sub.add_parser("wait-port")
    s.add_argument("port", type=int)
    s.add_argument("--proto", choices=["tcp", "udp", "any"], default="any")
    s.add_argument("--pid", type=int, default=0)
    s.add_argument("--timeout", type=float, default=15.0)
    s.set_defaults(fn=cmd_wait_port)

    for name, fn in (("ditg-row", cmd_ditg_row),
                     ("dualperf-row", cmd_dualperf_row)):
        s = sub.add_parser(name)
        s.add_argument("--tool", required=True)
        s.add_argument("--family", type=int, required=True)
        s.add_argument("--rate", type=int, required=True)
        s.add_argument("--duration", type=float, required=True)
        s.add_argument("--results")
        if name == "ditg-row":
            s.add_argument("--sendlog", required=True)
            s.add_argument("--recvlog", required=True)
        else:
            s.add_argument("--json", required=True)
            s.add_argument("--verdict", action="store_true",
                           help="prefix PASS/FAIL (sustainable or not)")
        s.set_defaults(fn=fn)

    s = sub.add_parser("error-row")
    s.add_argument("--tool", required=True)
    s.add_argument("--family", type=int, required=True)
    s.add_argument("--rate", type=int, required=True)
    s.add_argument("--duration", type=float, required=True)
    s.add_argument("--results", required=True)
    s.add_argument("--message", required=True)
    s.set_defaults(fn=cmd_error_row)

    s = sub.add_parser("report")
    s.add_argument("--results", required=True)
    s.add_argument("--ceiling")
    s.add_argument("--search")
    s.add_argument("--duration", required=True)
    s.add_argument("--search-duration", default="?")
    s.add_argument("--dp-status", default="")
    s.add_argument("--missing", action="append",
                   help="FAMILY<TAB>RATE<TAB>message row for a run not made")
    s.set_defaults(fn=cmd_report)

    a = p.parse_args()
    if a.cmd == "ditg-row" and not a.results:
        p.error("ditg-row needs --results")
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
