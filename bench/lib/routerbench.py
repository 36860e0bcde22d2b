#!/usr/bin/env python3
"""bench/router.sh's driver: dualperf route against the kernel forwarding the same
one-router topology (sender — r1 — receiver), in one run. See bench/router.sh for
what it measures and how to read it. Standard library only; needs root.

Every figure is measured here, in this run: the kernel's forwarding rate, the
router's, their ratio, RTT through each, and the router's longest loop turn.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib

LOSS_MAX = 0.001  # "forwarding rate": the highest offered rate with <= 0.1 % loss
DST = {4: "198.18.2.2", 6: "2001:2:0:2::2"}
RECV_IF = "to-r1"  # the receiver's interface
SINK_MAC = "02:64:70:ff:ff:02"  # the receiver's MAC while it is a sink


def log(msg):
    print(f"router-bench: {msg}", file=sys.stderr, flush=True)


def sh(args, check=True, capture=True, timeout=None):
    r = subprocess.run(args, stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}: {(r.stderr or '').strip()}")
    return r.stdout if capture else ""


class Lab:
    def __init__(self, dualperf, topo_dir, name, cpu):
        self.dp = dualperf
        self.name = name
        text = open(os.path.join(topo_dir, "one-router.toml")).read()
        text = text.replace('name = "one-router"', f'name = "{name}"')
        if cpu is not None:
            text = text.replace('name = "r1"\nkind = "router"\n',
                                f'name = "r1"\nkind = "router"\ncpu = {cpu}\n')
        self.file = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        self.file.write(text)
        self.file.close()
        self.rmac = None

    def ns(self, node):
        return f"dp-{self.name}.{node}"

    def state(self):
        with open(f"/run/dualperf/labs/{self.name}/state.json") as f:
            return json.load(f)

    def up(self):
        sh([self.dp, "lab", "up", self.file.name])
        st = self.state()
        nodes = [n["name"] for n in st["topology"]["nodes"]]
        for link in st["topology"]["links"]:
            for end in link["ends"]:
                if end["ifname"] == RECV_IF:
                    self.rmac = end["mac"]
                if nodes[end["node"]] == "sender":
                    self.sender = end
                if end["ifname"] == "to-sender":
                    self.r1_in_mac = end["mac"]

    def down(self):
        sh([self.dp, "lab", "down", self.name], check=False)
        try:
            os.unlink(self.file.name)
        except OSError:
            pass

    def router_pid(self):
        return next(r["pid"] for r in self.state()["routers"] if r["node"] == "r1")

    def router_stats(self):
        path = next(r["stats"] for r in self.state()["routers"] if r["node"] == "r1")
        with open(path) as f:
            return json.load(f)

    def kernel_forwarding(self):
        """Stop r1's dualperf route and let r1's kernel forward instead: the same
        interfaces, addresses, routes and static neighbours as the router's config."""
        r = next(r for r in self.state()["routers"] if r["node"] == "r1")
        os.kill(r["pid"], 15)
        for _ in range(100):
            if not os.path.exists(f"/proc/{r['pid']}") or \
                    open(f"/proc/{r['pid']}/stat").read().split(") ")[1][0] == "Z":
                break
            time.sleep(0.05)
        with open(r["config"], "rb") as f:
            cfg = tomllib.load(f)
        ns = self.ns("r1")
        ifaces = [(i["name"], i["ipv4"], i["ipv6"], i.get("mac")) for i in cfg["interface"]]
        neigh = [(n["interface"], n["ip"], n["mac"]) for n in cfg.get("neighbor", [])]
        routes = [(x["prefix"], x["via"], x["interface"]) for x in cfg.get("route", [])]
        for s in ["net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"]:
            sh(["ip", "netns", "exec", ns, "sysctl", "-qw", s])
        for name, v4, v6, mac in ifaces:
            if mac:  # the router's MAC, which the lab keeps off the kernel's side
                sh(["ip", "-n", ns, "link", "set", name, "address", mac])
            sh(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=0"])
            sh(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{name}.forwarding=1"])
            sh(["ip", "-n", ns, "addr", "add", v4, "dev", name])
            sh(["ip", "-n", ns, "-6", "addr", "add", v6, "dev", name, "nodad"])
        for name, ip, mac in neigh:
            sh(["ip", "-n", ns, "neigh", "replace", ip, "lladdr", mac, "dev", name, "nud", "permanent"])
        for prefix, via, name in routes:
            sh(["ip", "-n", ns, "route", "add", prefix, "via", via, "dev", name])

    def sink(self, on):
        """While on, the receiver's interface answers to another MAC: frames addressed to
        its lab MAC are PACKET_OTHERHOST and its kernel drops them at the first check of
        ip_rcv/ipv6_rcv. The interface's rx counter still counts every frame that
        crossed the router: the tester's receive port of RFC 2544."""
        mac = SINK_MAC if on else self.rmac
        sh(["ip", "-n", self.ns("receiver"), "link", "set", RECV_IF, "address", mac])

    def rx_packets(self):
        out = sh(["ip", "-n", self.ns("receiver"), "-s", "-j", "link", "show", RECV_IF])
        return json.loads(out)[0]["stats64"]["rx"]["packets"]


def trial(lab, args, family, size, rate, threads, cpus, duration):
    rx0 = lab.rx_packets()
    cmd = ["ip", "netns", "exec", lab.ns("sender"), args.blast, "-a", DST[family],
           "-s", str(size), "-r", str(int(rate)), "-d", str(duration), "-t", str(threads)]
    if cpus:
        cmd += ["-c", cpus]
    if args.sender == "raw":
        src = lab.sender["ipv4"] if family == 4 else lab.sender["ipv6"]
        cmd += ["-R", lab.sender["ifname"], "-M", lab.r1_in_mac, "-S", src]
    out = sh(cmd, timeout=duration + 30)
    m = dict(kv.split("=") for kv in out.split()[1:])
    time.sleep(0.3)  # the router's queues drain
    rx = lab.rx_packets() - rx0
    sent = int(m["sent"])
    took = float(m["duration_s"])
    loss = 1 - rx / sent if sent else 1.0
    return {"rate": rate, "sent": sent, "sent_pps": sent / took, "rx": rx,
            "rx_pps": rx / took, "loss": max(loss, 0.0)}


def search(lab, args, family, size, threads, cpus):
    """The highest offered rate with <= 0.1 % loss: the unpaced maximum first (if it
    loses nothing, the figure is the sender's, and says so), then bisection."""
    d = args.duration
    top = trial(lab, args, family, size, 0, threads, cpus, d)
    log(f"  unpaced: sent {top['sent_pps']:.0f} pps, received {top['rx_pps']:.0f}, loss {100*top['loss']:.3f} %")
    if top["loss"] <= LOSS_MAX:
        return {"pps": top["rx_pps"], "sender_capped": True, "trials": [top]}
    lo, hi = 0.0, top["sent_pps"]
    best = None
    trials = [top]
    # Start from what got through unpaced: usually close below the answer.
    guess = min(top["rx_pps"], hi * 0.98)
    for i in range(args.iterations):
        mid = guess if i == 0 else (lo + hi) / 2
        t = trial(lab, args, family, size, mid, threads, cpus, d)
        trials.append(t)
        reached = t["sent_pps"] >= 0.97 * mid
        ok = t["loss"] <= LOSS_MAX and reached
        log(f"  {mid:.0f} pps: sent {t['sent_pps']:.0f}, loss {100*t['loss']:.3f} % -> {'ok' if ok else 'too fast'}")
        if ok:
            lo = mid
            best = t
        else:
            hi = mid
        if hi - lo < 0.01 * hi:
            break
    if best is None:
        return {"pps": 0.0, "sender_capped": False, "trials": trials}
    return {"pps": best["rx_pps"], "sender_capped": False, "trials": trials}


def rtt(lab, args, family):
    """RTT through the router at 1000 pkt/s: dualperf's round-trip meter, a real
    receiver (the sink is off)."""
    port = "4650"
    recv = subprocess.Popen(["ip", "netns", "exec", lab.ns("receiver"), args.dualperf, "recv",
                             "--port", port], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        time.sleep(0.5)
        out = sh(["ip", "netns", "exec", lab.ns("sender"), args.dualperf, "send", DST[family],
                  "--port", port, "--udp", "--rate", "1000pps", "--size", "64",
                  "--duration", f"{args.rtt_seconds}s", "--meter", "rtt", "--json"],
                 timeout=args.rtt_seconds + 60)
    finally:
        recv.terminate()
        recv.wait(timeout=10)
    doc = json.loads(out)
    r = doc["flows"][0]["rtt"]
    return {"mean_ns": r["delay"]["mean_ns"],
            "p99_ns": r["delay"]["min_ns"] + r["jitter"]["pdv_p99_ns"],
            "lost": r["loss"]["lost"]}


def stall_run(lab, args, family, size, rate, threads, cpus):
    """A long run at half the router's maximum rate; the router's loop record says
    how long its longest turn was (None from a router that does not record it)."""
    # SIGUSR2: the router reads its (empty) QoS file again and starts its counters,
    # the loop's record among them, afresh.
    before = lab.router_stats().get("qos", {}).get("reloads", 0)
    os.kill(lab.router_pid(), 12)
    for _ in range(50):
        time.sleep(0.1)
        if lab.router_stats().get("qos", {}).get("reloads", 0) > before:
            break
    t = trial(lab, args, family, size, rate, threads, cpus, args.stall_seconds)
    os.kill(lab.router_pid(), 10)  # SIGUSR1: write the counters now
    time.sleep(0.6)
    loop = lab.router_stats().get("loop")
    return {"trial": t, "loop": loop}


def isolate(cpu):
    """Move every task that may run on `cpu` and on others too (unbound kernel threads
    such as kdamond and kcompactd, and every process) off `cpu`, as `isolcpus` would;
    returns what to restore. Per-CPU kernel threads (ksoftirqd/N, kworker/N:M) stay."""
    saved = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            allowed = os.sched_getaffinity(int(pid))
            if cpu in allowed and len(allowed) > 1:
                os.sched_setaffinity(int(pid), allowed - {cpu})
                saved.append((int(pid), allowed))
        except OSError:
            pass  # gone, or a kernel thread that may not move
    return saved


def restore(saved):
    for pid, allowed in saved:
        try:
            os.sched_setaffinity(pid, allowed)
        except OSError:
            pass


def fmt_k(pps):
    return f"{pps/1000:.0f}k"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dualperf", required=True)
    ap.add_argument("--blast", required=True)
    ap.add_argument("--topologies", required=True)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--iterations", type=int, default=7)
    ap.add_argument("--rtt-seconds", type=int, default=5)
    ap.add_argument("--stall-seconds", type=int, default=60)
    ap.add_argument("--sizes", default="64,1400")
    ap.add_argument("--families", default="4,6")
    ap.add_argument("--modes", default="unpinned,pinned")
    ap.add_argument("--engines", default="dualperf,kernel")
    ap.add_argument("--json", default=None)
    ap.add_argument("--sender", choices=["raw", "udp"], default="raw")
    ap.add_argument("--isolate", action="store_true")
    args = ap.parse_args()
    ncpu = os.cpu_count() or 1
    sizes = [int(s) for s in args.sizes.split(",")]
    families = [int(f) for f in args.families.split(",")]
    route_help = sh([args.dualperf, "route", "--help"])
    has_cpu = "--cpu" in route_help
    results = {}
    rtts = {}
    stalls = {}
    for mode in args.modes.split(","):
        pinned = mode == "pinned"
        # Unpinned: one sender thread per CPU, wherever the scheduler puts them.
        # Pinned: the sender on CPU 0, the router (and the receiver's softirq, which
        # runs where the router sends) on the last CPU.
        threads = 1 if pinned else ncpu
        cpus = "0" if pinned else None
        for engine in args.engines.split(","):
            lab = Lab(args.dualperf, args.topologies, "rbench",
                      ncpu - 1 if pinned and engine == "dualperf" and has_cpu else None)
            try:
                lab.up()
                if engine == "kernel":
                    lab.kernel_forwarding()
                elif pinned and not has_cpu:
                    sh(["taskset", "-apc", str(ncpu - 1), str(lab.router_pid())])
                for family in families:
                    lab.sink(False)
                    log(f"{mode} {engine} IPv{family}: RTT at 1000 pkt/s")
                    rtts[(mode, engine, family)] = rtt(lab, args, family)
                    lab.sink(True)
                    for size in sizes:
                        log(f"{mode} {engine} IPv{family} {size} B: forwarding rate")
                        results[(mode, engine, family, size)] = search(lab, args, family, size, threads, cpus)
                fam, size = families[0], sizes[-1]
                best = results[(mode, engine, fam, size)]["pps"] if engine == "dualperf" else 0
                if best > 0 and args.stall_seconds > 0:
                    log(f"{mode} {engine}: {args.stall_seconds} s at half the maximum ({fmt_k(best/2)} pps, IPv{fam} {size} B)")
                    stalls[mode] = stall_run(lab, args, fam, size, best / 2, threads, cpus)
                    if pinned and args.isolate:
                        # Again with the router's CPU to itself: what is left is the loop's.
                        saved = isolate(ncpu - 1)
                        try:
                            log(f"{mode} {engine}: again with CPU {ncpu - 1} isolated")
                            stalls[mode + ", CPU isolated"] = stall_run(lab, args, fam, size, best / 2, threads, cpus)
                        finally:
                            restore(saved)
            finally:
                lab.down()
    # The table.
    modes = args.modes.split(",")
    print()
    print("Forwarding rate with <= 0.1 % loss (received pkt/s; * = the sender's limit, not the forwarder's)")
    print(f"senders: {args.sender} ({'AF_PACKET frames' if args.sender == 'raw' else 'UDP sockets'}), "
          f"{ncpu} threads unpinned, 1 thread on CPU 0 pinned")
    print()
    hdr = f"{'family':<7}{'payload':>8}"
    for mode in modes:
        hdr += f"{'kernel ' + mode:>18}{'dualperf ' + mode:>20}"
    hdr += f"{'ratio unpinned':>16}{'ratio pinned':>14}"
    print(hdr)
    rows = []
    for family in families:
        for size in sizes:
            line = f"IPv{family:<3}{size:>8} B"
            row = {"family": family, "size": size}
            kbest = max((results[(m, "kernel", family, size)]["pps"] for m in modes
                         if (m, "kernel", family, size) in results), default=None)
            for mode in modes:
                for engine in ("kernel", "dualperf"):
                    r = results.get((mode, engine, family, size))
                    w = 18 if engine == "kernel" else 20
                    if r is None:
                        line += f"{'-':>{w}}"
                        continue
                    mark = "*" if r["sender_capped"] else " "
                    line += f"{fmt_k(r['pps']) + mark:>{w}}"
                    row[f"{engine}_{mode}_pps"] = round(r["pps"])
                    row[f"{engine}_{mode}_sender_capped"] = r["sender_capped"]
            for mode, w in (("unpinned", 16), ("pinned", 14)):
                r = results.get((mode, "dualperf", family, size))
                if r is None or not kbest:
                    line += f"{'-':>{w}}"
                    continue
                ratio = r["pps"] / kbest
                row[f"ratio_{mode}"] = round(ratio, 3)
                line += f"{100*ratio:>{w-1}.0f}%"
            rows.append(row)
            print(line)
    print()
    print("Ratios divide by the kernel's best figure for that row (unpinned or pinned).")
    if any(r["sender_capped"] for k, r in results.items() if k[1] == "kernel"):
        print("* The kernel's figure is capped by the senders: it forwarded everything they sent.")
    print()
    print("RTT at 1000 pkt/s, 64 B (dualperf send --meter rtt; mean / p99, us)")
    for (mode, engine, family), r in sorted(rtts.items()):
        print(f"  {mode:<9}{engine:<9}IPv{family}: {r['mean_ns']/1000:7.1f} / {r['p99_ns']/1000:7.1f}  (lost {r['lost']})")
    for mode in modes:
        k = [rtts.get((mode, "kernel", f)) for f in families]
        d = [rtts.get((mode, "dualperf", f)) for f in families]
        for f, kk, dd in zip(families, k, d):
            if kk and dd:
                print(f"  {mode} IPv{f}: dualperf's RTT / kernel's = {dd['mean_ns']/kk['mean_ns']:.2f}x (mean), "
                      f"{dd['p99_ns']/kk['p99_ns']:.2f}x (p99)")
    print()
    for mode, s in stalls.items():
        t = s["trial"]
        loop = s["loop"]
        if loop is None:
            print(f"Loop stall ({mode}): this router does not record its loop; "
                  f"the run lost {100*t['loss']:.3f} % at {fmt_k(t['rate'])} pkt/s")
        else:
            print(f"Loop stall ({mode}, {args.stall_seconds} s at {fmt_k(t['rate'])} pkt/s): longest turn "
                  f"{loop['max_turn_ns']/1e6:.3f} ms, longest gap between turns {loop['max_gap_ns']/1e6:.3f} ms, "
                  f"turns over 1 ms: {loop['turns_over_1ms']}, gaps over 1 ms: {loop['gaps_over_1ms']}; "
                  f"loss {100*t['loss']:.4f} %; the scheduler took its CPU {loop.get('involuntary_switches')} times, "
                  f"{(loop.get('runqueue_wait_ns') or 0)/1e6:.1f} ms in all")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "rtt": {f"{m}/{e}/{fa}": v for (m, e, fa), v in rtts.items()},
                       "stalls": stalls,
                       "searches": {f"{m}/{e}/{fa}/{s}": v for (m, e, fa, s), v in results.items()}},
                      f, indent=1)


if __name__ == "__main__":
    main()
