#!/usr/bin/env python3
"""Stand-in for the dualperf CLI, only for testing bench/vs-ditg.sh itself.

    DUALPERF=bench/lib/mock_dualperf.py DURATION=2 bench/vs-ditg.sh

Implements just the two invocations the script makes:
  recv --port P        bind UDP [::]:P (dual-stack), count datagrams
  send ADDR --port P --udp --rate Npps --size S --duration Ts --json
                       send paced UDP datagrams to ADDR:P (loopback only),
                       print the JSON contract on stdout
The receiver publishes its count through a file in $MOCK_STATE_DIR (default
the temp dir), standing in for dualperf's control channel.  Pure Python, so
it tops out at roughly 100-200k pkt/s: good for exercising the search.
MOCK_MODE selects a failure to exercise the error paths:
  ok (default) | badjson (missing received.loss) | notjson | crash | hang |
  recvfail (recv exits before binding) | overrun (sends every packet even
  when behind schedule, like dualperf does, instead of stopping on time)
"""
import json
import os
import signal
import socket
import sys
import tempfile
import time

LOOPBACK = {"127.0.0.1", "::1"}
mode = os.environ.get("MOCK_MODE", "ok")
args = sys.argv[1:]


def opt(name):
    if name not in args:
        sys.exit(f"mock_dualperf: missing {name}")
    return args[args.index(name) + 1]


port = int(opt("--port"))
state = os.path.join(os.environ.get("MOCK_STATE_DIR", tempfile.gettempdir()),
                     f"mock_dualperf.{port}")

if args[0] == "recv":
    if mode == "recvfail":
        sys.exit("mock_dualperf recv: cannot bind (MOCK_MODE=recvfail)")

    def bye(*_):
        try:
            os.unlink(state)
        except OSError:
            pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGINT, bye)
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("::", port))
    s.settimeout(0.05)
    n, last = 0, 0.0
    while True:
        try:
            s.recv(2048)
            n += 1
        except socket.timeout:
            pass
        now = time.monotonic()
        if now - last > 0.05:
            with open(state + ".tmp", "w") as f:
                f.write(str(n))
            os.replace(state + ".tmp", state)
            last = now

elif args[0] == "send":
    addr = args[1]
    if addr not in LOOPBACK:
        sys.exit("mock_dualperf: loopback destinations only")
    rate = int(opt("--rate").removesuffix("pps"))
    dur = float(opt("--duration").removesuffix("s"))
    size = int(opt("--size"))
    if mode == "hang":
        time.sleep(3600)
    if mode == "crash":
        sys.exit("mock_dualperf send: panicked (MOCK_MODE=crash)")
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.connect((addr, port))
    buf, total, sent = b"x" * size, int(rate * dur), 0
    t0 = time.monotonic()
    while sent < total:
        el = time.monotonic() - t0
        if el > dur and mode != "overrun":
            break
        due = min(int(el * rate) + 1, total)
        while sent < due:
            s.send(buf)
            sent += 1
    send_s = time.monotonic() - t0
    time.sleep(0.3)
    try:
        with open(state) as f:
            recv = int(f.read())
    except (OSError, ValueError):
        recv = 0
    lost = max(sent - recv, 0)
    doc = {"flows": [{
        "id": 0,
        "sent": {"packets": sent, "rate_pps": sent / send_s,
                 "duration_ns": int(send_s * 1e9)},
        "received": {"packets": recv, "unique_packets": recv,
                     "rate_pps": recv / dur,
                     "loss": {"lost": lost,
                              "loss_pct": 100.0 * lost / sent if sent else 0.0}},
    }]}
    if mode == "badjson":
        del doc["flows"][0]["received"]["loss"]
    if mode == "notjson":
        print("hello, not json")
        sys.exit(0)
    print(json.dumps(doc, indent=2))
else:
    sys.exit(f"mock_dualperf: unknown command {args[0]!r}")
