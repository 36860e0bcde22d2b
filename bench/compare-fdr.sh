#!/usr/bin/env bash
# bench/compare-fdr.sh - how often `dualperf compare` finds a difference where there is none.
#
# WHAT IT MEASURES
#   The lab plans/topologies/truth.toml (sender — r1 — r2 — receiver, nothing shaped or
#   injected: both families cross the same routers, links and queues) is the complete null:
#   every row of a battery should say "≈". The verdicts hold a 5 % false discovery rate per
#   battery (Benjamini–Hochberg), and under the complete null that bounds the chance that a
#   battery shows ANY discovery by 5 %. The bench runs N quick batteries and prints the
#   share of batteries with at least one discovery (a row whose verdict is "significant"),
#   with its 95 % interval (Wilson), N and the date; also how many rows were tested and
#   found, per table.
#
#   How a battery runs (MODE):
#     host  the lab is brought up once, an agent runs on `receiver`, and each battery is
#           `dualperf compare receiver --quick --json` run on `sender` through
#           `dualperf lab exec` (the two-machine form, `compare HOST`);
#     lab   each battery is `dualperf compare --lab --topology truth.toml --quick --json`,
#           which builds the lab, runs through it and removes it.
#   MODE=auto (the default) takes host when `dualperf compare --help` shows a HOST argument.
#
# USAGE (root: network namespaces; not part of CI: 50 batteries take about an hour)
#   bench/compare-fdr.sh                 # N = 50
#   N=2 bench/compare-fdr.sh             # smoke test, a few minutes
# Environment knobs [defaults]:
#   N [50]              batteries
#   MODE [auto]         host, lab or auto (above)
#   DUALPERF [<target>/release/dualperf]  the binary (cargo build --release -p cli)
#   TOPOLOGY [plans/topologies/truth.toml]
#   ARGS [--quick]      compare's battery options (e.g. "--quick --no-games")
#   KEEP_WORK [0]       1: keep the temp dir (every battery's JSON and stderr)
# Exit status: 0 the bench ran (whatever share it found); 1 a battery failed;
# 2 bad settings or not root.
#
# NETWORK SAFETY: traffic stays inside the lab's namespaces (198.18.0.0/15 and
# 2001:2::/48); the lab, the agent and the temp dir are removed at the end, also on failure.

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
die() { echo "bench/compare-fdr.sh: $*" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "needs root (network namespaces)"
for t in ip python3; do
    command -v "$t" >/dev/null || die "needs $t"
done
N=${N:-50}
[[ $N =~ ^[1-9][0-9]*$ ]] || die "N must be a positive integer, not '$N'"
MODE=${MODE:-auto}
TOPOLOGY=${TOPOLOGY:-$ROOT/plans/topologies/truth.toml}
[[ -f $TOPOLOGY ]] || die "no topology $TOPOLOGY"
read -r -a BATTERY <<<"${ARGS:---quick}"
DP=${DUALPERF:-${CARGO_TARGET_DIR:-$ROOT/target}/release/dualperf}
[[ -x $DP ]] || die "no $DP (cargo build --release -p cli, or DUALPERF=...)"

WORK=$(mktemp -d /tmp/compare-fdr.XXXXXX)
LAB=fdr-$$
AGENT_PID=
cleanup() {
    local rc=$?
    if [[ -n $AGENT_PID ]]; then
        kill -TERM "$AGENT_PID" 2>/dev/null || true
        wait "$AGENT_PID" 2>/dev/null || true
    fi
    if [[ $MODE == host ]]; then
        "$DP" -q lab down "$LAB" >/dev/null 2>&1 || true
    fi
    if [[ ${KEEP_WORK:-0} == 1 || $rc == 1 ]]; then
        echo "bench/compare-fdr.sh: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [[ $MODE == auto ]]; then
    if "$DP" compare --help 2>/dev/null | grep -q '\[HOST\]'; then MODE=host; else MODE=lab; fi
fi
[[ $MODE == host || $MODE == lab ]] || die "MODE is host, lab or auto, not '$MODE'"

# The topology under a name of this run's own, so a lab of the shipped name is left alone.
sed -E "0,/^name *= *\"[^\"]*\"/s//name = \"$LAB\"/" "$TOPOLOGY" >"$WORK/topology.toml"
grep -q "^name = \"$LAB\"" "$WORK/topology.toml" || die "$TOPOLOGY has no top-level name"

if [[ $MODE == host ]]; then
    "$DP" -q lab up "$WORK/topology.toml" >"$WORK/lab-up.out" 2>&1 ||
        { cat "$WORK/lab-up.out" >&2; exit 1; }
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/agent.key"
    "$DP" lab exec "$LAB" receiver -- "$DP" agent --key-file "$WORK/agent.key" \
        >"$WORK/agent.out" 2>"$WORK/agent.err" &
    AGENT_PID=$!
    for _ in $(seq 50); do
        grep -q "listening" "$WORK/agent.err" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "listening" "$WORK/agent.err" || { cat "$WORK/agent.err" >&2; exit 1; }
    DUALPERF_KEY=$(cat "$WORK/agent.key")
    export DUALPERF_KEY
fi

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for i in $(seq "$N"); do
    out="$WORK/battery-$i"
    if [[ $MODE == host ]]; then
        cmd=("$DP" lab exec "$LAB" sender -- "$DP" compare receiver "${BATTERY[@]}" --json
            --dir "$out.dir")
    else
        cmd=("$DP" compare --lab --topology "$WORK/topology.toml" "${BATTERY[@]}" --json
            --dir "$out.dir")
    fi
    t0=$SECONDS
    if ! "${cmd[@]}" >"$out.json" 2>"$out.err"; then
        echo "battery $i failed: ${cmd[*]}" >&2
        tail -5 "$out.err" >&2
        exit 1
    fi
    echo "battery $i/$N: $((SECONDS - t0)) s" >&2
    rm -rf "$out.dir"
done

python3 - "$WORK" "$N" "$MODE" "$started" "${BATTERY[*]}" <<'EOF'
import json, math, sys
from datetime import datetime, timezone
work, n, mode, started, battery = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
any_found, rows, per_table = 0, 0, {}
for i in range(1, n + 1):
    doc = json.load(open(f"{work}/battery-{i}.json"))
    found = 0
    for t in doc["tables"]:
        s = per_table.setdefault(t["title"], [0, 0, 0])
        for r in t["rows"]:
            c = r.get("comparison") or {}
            v = c.get("verdict")
            if v in ("significant", "not_significant"):
                s[0] += 1
                rows += 1
            if v == "significant":
                s[1] += 1
                found += 1
            elif v not in ("not_significant",):
                s[2] += 1
    any_found += found > 0
share = any_found / n
z = 1.96
den = 1 + z * z / n
mid = (share + z * z / (2 * n)) / den
half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / den
now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print(f"compare false verdicts, {now} (started {started})")
print(f"  mode {mode}, battery: compare {battery}, topology truth (nothing injected)")
print(f"  batteries with any discovery: {any_found} of {n} = {share:.1%} "
      f"(95 % interval {max(0, mid - half):.1%} to {min(1, mid + half):.1%}; "
      f"the verdicts' 5 % FDR bounds it by 5 %)")
print(f"  rows tested {rows}, found {sum(s[1] for s in per_table.values())}")
for title, (tested, found, other) in per_table.items():
    note = f", {other} without a verdict" if other else ""
    print(f"    {title}: {found} of {tested}{note}")
EOF
