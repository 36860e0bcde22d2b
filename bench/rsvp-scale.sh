#!/usr/bin/env bash
# bench/rsvp-scale.sh - one router holding 10,000 RSVP reservations refreshed every R = 30 s.
#
# WHAT IT MEASURES
#   Issue 42's scale goal: the signalling CPU of one router for 10,000 reservations, under
#   5 % of one core. crates/router/examples/rsvp_scale.rs runs the router in process (its
#   forwarder, the egress policies of a QoS file with a signalled table, its RSVP engine)
#   in virtual time: 10,000 flows set up with Path and Resv from an upstream and a
#   downstream neighbour, which then refresh each flow every [0.5R, 1.5R]; the router
#   answers and refreshes as its own timers say. After a 60 s warm-up, MINUTES (10) of
#   steady state are measured: thread CPU (CLOCK_THREAD_CPUTIME_ID) around every router
#   call. It prints setup CPU per reservation, steady CPU per second (and % of one core),
#   CPU per refresh message, messages per second, and VmRSS growth per reservation; it
#   asserts that the router ends holding exactly FLOWS installed reservations with no
#   timeout, refusal or malformed message (a failed check exits non-zero).
#   Variants, one process each (so VmRSS is each one's own): flow-label (IPv6 FILTER_SPEC
#   C-Type 3, flow-label table), 5-tuple-v4 (C-Type 1) and 5-tuple-v6 (C-Type 2), both into
#   a 5-tuple table. /usr/bin/time -v gives each run's peak RSS and CPU.
#
# USAGE
#   bench/rsvp-scale.sh                          # ~10 s plus the build
#   FLOWS=1000 MINUTES=1 bench/rsvp-scale.sh     # smoke test
# Environment knobs [defaults]: FLOWS [10000] (1-30000)  MINUTES [10]
#   VARIANTS ["flow-label 5-tuple-v4 5-tuple-v6"]
# Exit status: 0 every variant ran and passed its checks (goal met or not); 1 a build,
#   run or check failed; 2 bad settings.
#
# NETWORK SAFETY: no traffic at all; everything happens in one process.

set -u -o pipefail
cd "$(dirname "$0")/.."

FLOWS=${FLOWS:-10000}
MINUTES=${MINUTES:-10}
VARIANTS=${VARIANTS:-flow-label 5-tuple-v4 5-tuple-v6}
case "$FLOWS$MINUTES" in *[!0-9]*|'') echo "rsvp-scale: FLOWS and MINUTES must be whole numbers" >&2; exit 2 ;; esac
[ -x /usr/bin/time ] || { echo "rsvp-scale: needs GNU time (apt-get install -y time)" >&2; exit 2; }

echo "building: cargo build --release -p router --example rsvp_scale" >&2
cargo build --quiet --release -p router --example rsvp_scale || exit 1
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || exit 1
bin="$target/release/examples/rsvp_scale"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
status=0
for v in $VARIANTS; do
    echo "running: $bin $v --flows $FLOWS --minutes $MINUTES (under /usr/bin/time -v)" >&2
    if ! /usr/bin/time -v -o "$work/time.txt" "$bin" "$v" --flows "$FLOWS" --minutes "$MINUTES"; then
        echo "rsvp-scale: $v failed" >&2
        cat "$work/time.txt" >&2
        status=1
        continue
    fi
    awk -F': ' '
        /Maximum resident set size/ { rss = $2 }
        /User time/ { user = $2 }
        /System time/ { sys = $2 }
        /Elapsed \(wall clock\)/ { wall = $2 }
        END { printf "  process (time -v): peak RSS %.1f MiB, user %s s, system %s s, wall %s\n", rss / 1024, user, sys, wall }
    ' "$work/time.txt"
done
exit $status
