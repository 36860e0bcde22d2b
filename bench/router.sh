#!/usr/bin/env bash
# bench/router.sh - dualperf route against the kernel forwarding the same topology.
#
# WHAT IT MEASURES
#   In the namespace lab plans/topologies/one-router.toml (sender — r1 — receiver, no
#   emulation), for IPv4 and IPv6 and 64 B and 1400 B UDP payloads:
#     - the forwarding rate: the highest offered rate with <= 0.1 % loss, found by
#       bisection (2 s trials) below the senders' unpaced maximum. Frames are counted
#       where they arrive, on the receiver's interface (RFC 2544's receive port): while
#       rates are measured the receiver answers to another MAC, so its kernel drops
#       each frame at the first check of ip_rcv and the receiving application is not
#       what is measured;
#     - through r1's `dualperf route` as the lab starts it, and through r1's kernel
#       (dualperf route stopped; forwarding sysctls on; the same addresses, routes and
#       static neighbours), and the ratio dualperf / kernel (the kernel's best figure);
#     - the senders are bench/router/blast.c: by default (SENDER=raw) whole frames
#       through AF_PACKET, the same UDP datagrams the sender's stack would build but
#       several times cheaper to send, so the forwarder rather than the sender is what
#       runs out; SENDER=udp sends through UDP sockets;
#     - unpinned (one sender thread per CPU) and pinned (one
#       sender thread on CPU 0, the router on the last CPU: topology key cpu, or
#       taskset for a dualperf without it). A figure the senders could not push past
#       (nothing lost at their unpaced maximum) is marked '*': it is the senders'
#       limit, not the forwarder's;
#     - RTT through each at 1000 pkt/s (dualperf send --meter rtt to dualperf recv,
#       64 B; mean and p99);
#     - the router's longest loop turn during a STALL_SECONDS run at half its maximum
#       rate (IPv4, 1400 B), from its stats file (`loop`).
#
# USAGE (root; builds bench/router/blast with cc)
#   bench/router.sh                                  # everything, ~12 min
#   STALL_SECONDS=5 ITERATIONS=3 bench/router.sh     # smoke test
# Environment knobs [defaults]:
#   DUALPERF [<repo>/target/release/dualperf]  copied to the temp dir first
#   DURATION [2]        seconds per trial
#   ITERATIONS [7]      bisection steps per search
#   STALL_SECONDS [60]  the loop-stall run (0 skips it)
#   SIZES ["64,1400"]  FAMILIES ["4,6"]  MODES ["unpinned,pinned"]
#   ENGINES ["dualperf,kernel"]
#   SENDER [raw]        raw (AF_PACKET frames) or udp (UDP sockets)
#   ISOLATE [1]         1: after the pinned stall run, a second one with the router's
#                       CPU to itself (every task that may move is moved off it for
#                       the run, as isolcpus would; restored after): what stalls are
#                       left there are the loop's own, or per-CPU kernel threads'
#   JSON []             also write the results as JSON to this file
# Exit status: 0 the bench ran; 1 a step failed; 2 bad settings or not root.
#
# NETWORK SAFETY: traffic stays inside the lab's namespaces (198.18.0.0/15 and
# 2001:2::/48); the lab is removed at the end, also on failure.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
if [[ $(id -u) != 0 ]]; then
    echo "bench/router.sh: needs root (network namespaces)" >&2
    exit 2
fi
for t in ip sysctl taskset cc python3; do
    command -v "$t" >/dev/null || { echo "bench/router.sh: needs $t" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/router-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
SRC_DP=${DUALPERF:-${CARGO_TARGET_DIR:-$ROOT/target}/release/dualperf}
[[ -x $SRC_DP ]] || { echo "bench/router.sh: no $SRC_DP (cargo build --release)" >&2; exit 2; }
cp "$SRC_DP" "$WORK/dualperf"
cc -O2 -Wall -Wextra -pthread -o "$WORK/blast" "$HERE/router/blast.c"
isolate=()
[[ ${ISOLATE:-1} == 1 ]] && isolate=(--isolate)
json_args=()
[[ -n ${JSON:-} ]] && json_args=(--json "$JSON")
python3 "$HERE/lib/routerbench.py" --dualperf "$WORK/dualperf" --blast "$WORK/blast" \
    --topologies "$ROOT/plans/topologies" --duration "${DURATION:-2}" \
    --iterations "${ITERATIONS:-7}" --stall-seconds "${STALL_SECONDS:-60}" \
    --sizes "${SIZES:-64,1400}" --families "${FAMILIES:-4,6}" \
    --modes "${MODES:-unpinned,pinned}" --engines "${ENGINES:-dualperf,kernel}" \
    --sender "${SENDER:-raw}" "${isolate[@]}" "${json_args[@]}"
