#!/usr/bin/env bash
# bench/rfc2544-vs-trafgen.sh - the RFC 2544 tester's ceiling against netsniff-ng's trafgen.
#
# WHAT IT MEASURES
#   How many 64-byte frames per second (RFC 2544 §9: 60 bytes handed to the interface,
#   the 4-byte FCS counted in the size) one CPU pushes through a veth pair:
#     trafgen   netsniff-ng's trafgen (AF_PACKET TX ring, qdisc bypassed) on one CPU
#               (taskset -c 0, --cpus 1) in namespace dp-bench43.a, sending an
#               IPv4/UDP frame 198.18.43.1 -> 198.18.43.2 on veth a0; counted as the
#               growth of the peer's (b0 in dp-bench43.b) rx_packets over DURATION s,
#               sampled after a 1 s warm-up while trafgen keeps sending.
#     dualperf  dualperf rfc2544 --self-test --sizes 64 --json under taskset -c 0: the
#               tester's ceiling (an XDP program run by BPF_PROG_TEST_RUN with live
#               frames, counted by an XDP program on the receiving port), read from
#               tester.ceiling[] (frame_size 64, IPv4). The self-test builds its own
#               throwaway veth pair in its own namespaces, like the one trafgen uses.
#   It prints both frames/s and the ratio dualperf/trafgen.
#
# USAGE (root: network namespaces, AF_PACKET, BPF)
#   bench/rfc2544-vs-trafgen.sh                # DURATION=5
#   DURATION=2 bench/rfc2544-vs-trafgen.sh     # smoke test
# Environment knobs [defaults]:
#   DURATION [5] (seconds of trafgen counted)   CPU [0] (the CPU both tools run on)
#   DUALPERF [<target>/release/dualperf]  the binary; built with
#             cargo build --release -p cli when unset
# Exit status: 0 the bench ran (a dualperf without `rfc2544` is reported "not built");
#   1 a measurement failed; 2 bad settings, a missing tool or not root.
#
# NETWORK SAFETY: the frames stay on a veth pair between two namespaces made here
# (dp-bench43.a, dp-bench43.b; 198.18.0.0/15), removed at the end, also on failure.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
die() { echo "bench/rfc2544-vs-trafgen.sh: $*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "needs root (network namespaces, AF_PACKET, BPF)"
for t in ip trafgen taskset jq; do
    command -v "$t" >/dev/null || die "needs $t (trafgen: apt-get install netsniff-ng)"
done
DURATION=${DURATION:-5}
CPU=${CPU:-0}
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION is whole seconds, not '$DURATION'"
[[ $CPU =~ ^[0-9]+$ ]] || die "CPU is a CPU number, not '$CPU'"

NS_A=dp-bench43.a
NS_B=dp-bench43.b
WORK=$(mktemp -d /tmp/rfc2544-vs-trafgen.XXXXXX)
TG_PID=
cleanup() {
    local rc=$?
    if [[ -n $TG_PID ]]; then
        kill -KILL -- "-$TG_PID" 2>/dev/null || true
        wait "$TG_PID" 2>/dev/null || true
    fi
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true
    if [[ $rc == 1 ]]; then echo "bench/rfc2544-vs-trafgen.sh: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# dualperf: the given binary, or a release build; a build without `rfc2544` is "not built".
DP=${DUALPERF:-}
if [[ -z $DP ]]; then
    echo "building dualperf (cargo build --release -p cli)..." >&2
    if (cd "$ROOT" && cargo build --release -q -p cli) >"$WORK/build.out" 2>&1; then
        TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
        DP=$TARGET/release/dualperf
    else
        echo "dualperf did not build: $(tail -n 1 "$WORK/build.out")" >&2
    fi
fi

# The veth pair. b0 gets GRO on so the pair matches the self-test's (NAPI on the peer).
for ns in "$NS_A" "$NS_B"; do
    ip netns del "$ns" 2>/dev/null || true
    ip netns add "$ns"
done
ip -n "$NS_A" link add a0 type veth peer name b0 netns "$NS_B"
ip -n "$NS_A" addr add 198.18.43.1/24 dev a0
ip -n "$NS_B" addr add 198.18.43.2/24 dev b0
ip -n "$NS_A" link set a0 up
ip -n "$NS_B" link set b0 up
ip netns exec "$NS_B" ethtool -K b0 gro on >/dev/null 2>&1 || true
MAC_B=$(ip -n "$NS_B" -j link show b0 | jq -r '.[0].address')
MAC_A=$(ip -n "$NS_A" -j link show a0 | jq -r '.[0].address')
hexmac() { echo "0x$1" | sed 's/:/, 0x/g'; }

# One 60-byte IPv4/UDP frame (64 with FCS): 14 Ethernet + 20 IPv4 + 8 UDP + 18 payload,
# the IPv4 header checksum computed by trafgen, the UDP checksum 0 (none, RFC 768).
cat >"$WORK/frame.cfg" <<EOF
{
  $(hexmac "$MAC_B"), $(hexmac "$MAC_A"), c16(0x0800),
  0x45, 0x00, c16(46), c16(0), c16(0x4000), 64, 17, csumip(14, 33),
  198, 18, 43, 1,  198, 18, 43, 2,
  c16(1024), c16(7), c16(26), c16(0),
  fill(0x00, 18)
}
EOF

rx_b() { ip netns exec "$NS_B" cat /sys/class/net/b0/statistics/rx_packets; }
now_ns() { date +%s%N; }

# (1) trafgen: started, warmed up 1 s, then counted over DURATION s while it still runs.
echo "measuring trafgen (${DURATION} s, CPU $CPU)..." >&2
# In a process group of its own (setsid): trafgen's sending child ignores the SIGINT a
# background job inherits, so the group is stopped with SIGKILL.
setsid ip netns exec "$NS_A" taskset -c "$CPU" trafgen --dev a0 --conf "$WORK/frame.cfg" --cpus 1 \
    --no-cpu-stats --no-sock-mem >"$WORK/trafgen.out" 2>&1 &
TG_PID=$!
sleep 1
kill -0 "$TG_PID" 2>/dev/null || { cat "$WORK/trafgen.out" >&2; echo "trafgen exited early" >&2; exit 1; }
r0=$(rx_b); t0=$(now_ns)
sleep "$DURATION"
r1=$(rx_b); t1=$(now_ns)
kill -KILL -- "-$TG_PID" 2>/dev/null || true
wait "$TG_PID" 2>/dev/null || true
TG_PID=
TG_PPS=$(( (r1 - r0) * 1000000000 / (t1 - t0) ))
ip netns del "$NS_A"; ip netns del "$NS_B"

# (2) dualperf's ceiling: the self-test's tester.ceiling for 64-byte IPv4 frames.
DP_PPS=
DP_WHY=
if [[ -z $DP || ! -x $DP ]]; then
    DP_WHY="not built"
elif ! "$DP" rfc2544 --help >/dev/null 2>&1; then
    DP_WHY="not built (this dualperf has no rfc2544 command)"
else
    echo "measuring dualperf's tester ceiling (rfc2544 --self-test --sizes 64)..." >&2
    if taskset -c "$CPU" "$DP" rfc2544 --self-test --sizes 64 --json >"$WORK/selftest.json" \
        2>"$WORK/selftest.err"; then
        DP_PPS=$(jq -r '[.tester.ceiling[] | select(.frame_size == 64 and .v6 == false) | .fps][0] // empty' \
            "$WORK/selftest.json")
        [[ $DP_PPS =~ ^[0-9]+$ ]] || { echo "no 64-byte IPv4 ceiling in dualperf's JSON" >&2; exit 1; }
    else
        cat "$WORK/selftest.err" >&2
        echo "dualperf rfc2544 --self-test failed" >&2
        exit 1
    fi
fi

mpps() { awk -v p="$1" 'BEGIN { printf "%.2f Mpps", p / 1e6 }'; }
echo "64-byte frames (60 B + FCS) on a veth pair, one CPU ($(uname -r), $(nproc) CPUs):"
printf '  %-9s %12s  %s\n' tool frames/s ""
printf '  %-9s %12s  %s\n' trafgen "$TG_PPS" "$(mpps "$TG_PPS")"
if [[ -n $DP_PPS ]]; then
    printf '  %-9s %12s  %s\n' dualperf "$DP_PPS" "$(mpps "$DP_PPS")"
    awk -v d="$DP_PPS" -v t="$TG_PPS" 'BEGIN { printf "  dualperf/trafgen = %.2f\n", d / t }'
else
    printf '  %-9s %12s\n' dualperf "$DP_WHY"
fi
