#!/usr/bin/env bash
# bench/bottleneck.sh - bulk TCP through the lab's 10 Mbit/s bottleneck: dualperf vs iperf3.
#
# WHAT IT MEASURES
#   The lab plans/topologies/two-hop.toml (sender — r1 — r2 — receiver; r1 → r2 is a
#   10 Mbit/s link) is brought up once. For IPv4 (198.18.4.2) and IPv6 (2001:2:0:4::2),
#   REPS times each, alternating so slow drift of the machine favours neither tool:
#     dualperf  dualperf recv --sessions 1  +  dualperf send ADDR --tcp --bulk
#               --duration Ds --json   (flows[0].received: bytes after the first
#                                       message / first->last message span)
#     iperf3    iperf3 -s -1  +  iperf3 -c ADDR -t D -J
#                                               (end.sum_received.bits_per_second)
#   Both are receiver-side payload bit/s. The link carries 10 Mbit/s of frames; the
#   payload share of a full-size TCP segment is 1448/1514 B (IPv4, timestamps on) and
#   1428/1514 B (IPv6), so a tool that keeps the bottleneck full gets about 9.56 and
#   9.43 Mbit/s. The table prints each tool's median (min-max), its share of that
#   ceiling, and dualperf/iperf3.
#
#   It replaces the lab test that asserted "at least 9 Mbit/s": a figure that holds only
#   when the host keeps up, so it lives here (the test keeps what holds on any host:
#   every byte sent arrives, and no tool exceeds the link).
#
# USAGE (root: network namespaces; iperf3 on PATH)
#   bench/bottleneck.sh                      # REPS=5, DURATION=4
#   REPS=1 DURATION=2 bench/bottleneck.sh    # smoke test
# Environment knobs [defaults]:
#   REPS [5]  DURATION [4] (seconds)
#   DUALPERF [<target>/release/dualperf]  the binary (cargo build --release -p cli)
# Exit status: 0 the bench ran; 1 a run failed; 2 bad settings or not root.
#
# NETWORK SAFETY: traffic stays inside the lab's namespaces (198.18.0.0/15 and
# 2001:2::/48); the lab and every process it started are removed at the end, also on
# failure.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
die() { echo "bench/bottleneck.sh: $*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "needs root (network namespaces)"
for t in ip iperf3 python3; do
    command -v "$t" >/dev/null || die "needs $t"
done
REPS=${REPS:-5}
DURATION=${DURATION:-4}
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, not '$REPS'"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION is whole seconds, not '$DURATION'"
DP=${DUALPERF:-${CARGO_TARGET_DIR:-$ROOT/target}/release/dualperf}
[[ -x $DP ]] || die "no $DP (cargo build --release -p cli, or DUALPERF=...)"

WORK=$(mktemp -d /tmp/bottleneck.XXXXXX)
LAB=bn-$$
RX_PID=
cleanup() {
    local rc=$?
    if [[ -n $RX_PID ]]; then
        kill -TERM "$RX_PID" 2>/dev/null || true
        wait "$RX_PID" 2>/dev/null || true
    fi
    "$DP" -q lab down "$LAB" >/dev/null 2>&1 || true
    if [[ $rc == 1 ]]; then echo "bench/bottleneck.sh: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

sed -E "0,/^name *= *\"[^\"]*\"/s//name = \"$LAB\"/" "$ROOT/plans/topologies/two-hop.toml" \
    >"$WORK/topology.toml"
"$DP" -q lab up "$WORK/topology.toml" >"$WORK/lab-up.out" 2>&1 ||
    { cat "$WORK/lab-up.out" >&2; exit 1; }
RX_NS=dp-$LAB.receiver
TX_NS=dp-$LAB.sender

# The receiver is up when its port is bound in its namespace.
wait_bound() {
    for _ in $(seq 100); do
        ip netns exec "$RX_NS" ss -Htln | grep -q ":$1 " && return 0
        sleep 0.05
    done
    echo "no listener on port $1" >&2
    return 1
}

run_dualperf() { # ADDR OUT
    "$DP" lab exec "$LAB" receiver -- "$DP" recv --sessions 1 \
        >/dev/null 2>"$WORK/recv.err" &
    RX_PID=$!
    wait_bound 4646 || { cat "$WORK/recv.err" >&2; return 1; }
    "$DP" lab exec "$LAB" sender -- "$DP" send "$1" --tcp --bulk \
        --duration "${DURATION}s" --json >"$2"
    wait "$RX_PID"
    RX_PID=
}

run_iperf3() { # ADDR OUT
    ip netns exec "$RX_NS" iperf3 -s -1 >/dev/null 2>&1 &
    RX_PID=$!
    wait_bound 5201
    ip netns exec "$TX_NS" iperf3 -c "$1" -t "$DURATION" -J >"$2"
    wait "$RX_PID"
    RX_PID=
}

for rep in $(seq "$REPS"); do
    for fam in v4 v6; do
        if [[ $fam == v4 ]]; then addr=198.18.4.2; else addr=2001:2:0:4::2; fi
        run_dualperf "$addr" "$WORK/dualperf-$fam-$rep.json" || exit 1
        run_iperf3 "$addr" "$WORK/iperf3-$fam-$rep.json" || exit 1
        echo "rep $rep/$REPS $fam done" >&2
    done
done

python3 - "$WORK" "$REPS" "$DURATION" "$("$DP" --version)" "$(iperf3 --version | head -1)" <<'EOF'
import json, statistics, sys
from datetime import datetime, timezone
work, reps, dur, dpv, ipv = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
# Payload bit/s of a full bottleneck: 10 Mbit/s of 1514-byte frames, MSS 1448 (IPv4,
# 20 + 20 + 12 B of IP, TCP, timestamps) or 1428 (IPv6, 40 + 20 + 12).
ceiling = {"v4": 10e6 * 1448 / 1514, "v6": 10e6 * 1428 / 1514}
def rate(tool, fam, rep):
    doc = json.load(open(f"{work}/{tool}-{fam}-{rep}.json"))
    if tool == "dualperf":
        # Payload that arrived after the first message, over the first->last span:
        # what iperf3's bytes / test time estimates. (received.bitrate_bps divides
        # all N messages by N-1 gaps, as D-ITG; with 128 KiB messages at 10 Mbit/s
        # that reads ~5 % high over 2 s.)
        r = doc["flows"][0]["received"]
        n = r["packets"]
        return r["bytes"] * (n - 1) / n * 8e9 / r["duration_ns"]
    return doc["end"]["sum_received"]["bits_per_second"]
now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print(f"bulk TCP through the 10 Mbit/s bottleneck (two-hop lab), {now}")
print(f"  {reps} x {dur} s per tool and family, alternating; {dpv}; {ipv}")
print(f"  {'family':6} {'tool':8} {'median Mbit/s':>13} {'min-max':>13} {'of ceiling':>10}")
for fam in ("v4", "v6"):
    med = {}
    for tool in ("dualperf", "iperf3"):
        xs = [rate(tool, fam, r) / 1e6 for r in range(1, reps + 1)]
        med[tool] = statistics.median(xs)
        print(f"  {fam:6} {tool:8} {med[tool]:13.2f} {min(xs):6.2f}-{max(xs):<6.2f} "
              f"{med[tool] * 1e6 / ceiling[fam]:10.1%}")
    print(f"  {fam:6} dualperf/iperf3 = {med['dualperf'] / med['iperf3']:.3f}")
EOF
