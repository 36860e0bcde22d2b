#!/usr/bin/env bash
# bench/bulk-vs-iperf3.sh - dualperf's bulk TCP mode vs iperf3, on loopback only.
#
# WHAT IT MEASURES
#   For IPv4 (127.0.0.1) and IPv6 (::1) and each configuration in CONFIGS
#   (default: 1 stream cubic, 4 parallel streams cubic, 1 stream bbr), the
#   TCP payload throughput of an unpaced bulk transfer of DURATION seconds:
#     iperf3    iperf3 -s -p P -1  +  iperf3 -c ADDR -p P -t D -J -P N -C CC -l SIZE
#     dualperf  dualperf recv --port P  +  dualperf send ADDR --port P --tcp --bulk
#               [--parallel N] --congestion CC --size SIZE --duration Ds --json
#   Each run gets a fresh receiver on a free port, stopped after the run.  The
#   two tools alternate (iperf3, dualperf, iperf3, dualperf, ...) REPS times
#   per configuration, so slow drift of the machine does not favour one tool.
#   Acceptance (issue): dualperf within 10 % of iperf3 in the same run.
#
# HOW TO READ THE OUTPUT
#   stdout: one line per run, then the table.  Throughput is receiver-side
#   payload bit/s: iperf3 end.sum_received.bits_per_second (bytes / test
#   duration), dualperf sum.received.bitrate_bps (bytes / first->last message);
#   for 10 s runs the two definitions differ by far less than 1 %.  Each run
#   line also shows the sender-side rate and CPU use as user+system time /
#   wall time (iperf3: its own JSON host_total and remote_total; dualperf:
#   the sender from bash `times`, the receiver from /proc/PID/stat).
#   stderr: progress and the exact commands.
#
# USAGE
#   bench/bulk-vs-iperf3.sh                  # full run: 2 x 4 x 3 x 2 x 10 s, ~9 min
#   DURATION=2 REPS=1 bench/bulk-vs-iperf3.sh   # smoke test (~1 min)
# Environment knobs [defaults]:
#   DURATION [10]  seconds per run (integer)
#   REPS [3]       runs per tool and configuration
#   FAMILIES ["4 6"]
#   CONFIGS ["1:cubic 1:bbr 1:cubic@10g 4:cubic"]  STREAMS:CONGESTION_CONTROL[@GBIT],
#                  each passed to both tools (-P/-C, --parallel/--congestion);
#                  @GBIT caps each stream (iperf3 -b NG, dualperf --rate Ngbit), so the
#                  row compares what both tools report for the same offered rate
#                  passed to both tools (-P/-C, --parallel/--congestion)
#   SIZE [131072]  bytes per write (iperf3 -l, dualperf --size; iperf3's default)
#   INTERVAL []    e.g. 1s: also pass --interval to dualperf (per-interval
#                  min-max is shown in its run lines)
#   DUALPERF [$CARGO_TARGET_DIR or <repo>/target, then /release/dualperf]
#                  copied to the temp dir at start, so that a rebuild during
#                  the bench does not affect it (build it first yourself)
#   STRICT [0]     1: a verdict outside 10 % makes the exit status 1
#   KEEP_WORK [0]  1: keep the temp dir (raw JSON, stderr of every command);
#                  it is always kept when a run failed
# Exit status: 0 the bench ran (whatever the verdicts, unless STRICT=1);
# 1 a tool failed, timed out or printed output that cannot be parsed (the
# table is still printed); 2 bad settings.
#
# NETWORK SAFETY: traffic goes only to 127.0.0.1 and ::1.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCHTOOL=(python3 "$HERE/lib/benchtool.py")
BULK=(python3 "$HERE/lib/bulk.py")

DURATION=${DURATION:-10}
REPS=${REPS:-3}
FAMILIES=${FAMILIES:-4 6}
CONFIGS=${CONFIGS:-1:cubic 1:bbr 1:cubic@10g 4:cubic}
SIZE=${SIZE:-131072}
INTERVAL=${INTERVAL:-}
DUALPERF=${DUALPERF:-${CARGO_TARGET_DIR:-$HERE/../target}/release/dualperf}
STRICT=${STRICT:-0}
KEEP_WORK=${KEEP_WORK:-0}

exec 3>&2 # progress, also from traps while a command's stderr is redirected
log() { printf '[bulk-vs-iperf3] %s\n' "$*" >&3; }
usage_die() { log "bad setting: $*"; exit 2; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_posint "$DURATION" || usage_die "DURATION must be a positive integer (seconds), got '$DURATION'"
is_posint "$REPS" || usage_die "REPS must be a positive integer, got '$REPS'"
is_posint "$SIZE" || usage_die "SIZE must be a positive integer (bytes), got '$SIZE'"
[[ -z $INTERVAL || $INTERVAL =~ ^[0-9]+(\.[0-9]+)?(ms|s)$ ]] || usage_die "INTERVAL like 1s or 500ms, got '$INTERVAL'"
[[ $STRICT == [01] && $KEEP_WORK == [01] ]] || usage_die "STRICT and KEEP_WORK are 0 or 1"
[[ -n ${FAMILIES// /} ]] || usage_die "FAMILIES is empty"
for f in $FAMILIES; do [[ $f == [46] ]] || usage_die "FAMILIES: 4 and/or 6, got '$f'"; done
[[ -n ${CONFIGS// /} ]] || usage_die "CONFIGS is empty"
AVAIL_CC=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)
for c in $CONFIGS; do
    [[ $c =~ ^([1-9][0-9]?):([a-z0-9_]+)(@[1-9][0-9]*g)?$ ]] || usage_die "CONFIGS entries are STREAMS:CC[@GBITg] like 4:cubic or 1:cubic@10g, got '$c'"
    cc=${BASH_REMATCH[2]}
    if [[ " $AVAIL_CC " != *" $cc "* ]]; then
        modprobe "tcp_$cc" 2>/dev/null
        AVAIL_CC=$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)
        [[ " $AVAIL_CC " == *" $cc "* ]] || usage_die "congestion control '$cc' not available here ($AVAIL_CC)"
    fi
done
[[ -x $DUALPERF ]] || usage_die "DUALPERF=$DUALPERF is not an executable file"

addr_of() { if [[ $1 == 6 ]]; then echo "::1"; else echo "127.0.0.1"; fi; }

# ---------------------------------------------------------------------------
# temp dir, background processes, cleanup

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dualperf-bulk.XXXXXX") || { log "mktemp failed"; exit 1; }
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
FAIL=0
BG_PIDS=()

# shellcheck source-path=SCRIPTDIR source=lib/procs.sh
. "$HERE/lib/procs.sh"

tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | sed 's/^/    /' >&3; }

# CHILD_CPU = CPU seconds (user+system) of this shell's reaped children, from
# `times`; call it directly, not in $(...): a subshell has its own counters.
CHILD_CPU=
children_cpu() {
    times >"$WORK/times"
    CHILD_CPU=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }; print t }' "$WORK/times")
}
proc_cpu() { # pid -> CPU seconds so far (utime+stime), or empty
    sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '{ print ($12 + $13) / hz }'
}
pct_of() { awk -v a="$1" -v b="$2" -v w="$3" 'BEGIN { if (a != "" && b != "" && w > 0) printf "%.1f", 100 * (b - a) / w }'; }

# ---------------------------------------------------------------------------
# prerequisites

ensure_iperf3() {
    command -v iperf3 >/dev/null && return 0
    local sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    log "iperf3 not found: installing it from Debian"
    export DEBIAN_FRONTEND=noninteractive
    if ! "${sudo[@]}" apt-get install -y iperf3 >"$WORK/apt.log" 2>&1; then
        log "apt-get install failed, running apt-get update once and retrying"
        { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y iperf3; } >>"$WORK/apt.log" 2>&1
    fi
    command -v iperf3 >/dev/null || { log "could not install iperf3:"; tail_of "$WORK/apt.log" 10; FAIL=1; exit 1; }
}

DP=$WORK/bin/dualperf
prepare_dualperf() {
    mkdir -p "$WORK/bin"
    cp "$DUALPERF" "$DP" || { log "cannot copy $DUALPERF"; exit 1; }
    if ! "$DP" send --help 2>&1 | grep -q -- '--bulk'; then
        log "$DUALPERF has no 'send --bulk' (bulk TCP mode not built yet?)"
        exit 1
    fi
}

# ---------------------------------------------------------------------------
# one run

# run_one tool family streams cc rep [gbit]: one receiver, one sender, one result row.
run_one() {
    local tool=$1 fam=$2 n=$3 cc=$4 rep=$5 cap=${6:-} addr d port rpid rc label
    local srv cli cpu0 cpu1 r0 r1 w0 w1 cpu_snd cpu_rcv
    addr=$(addr_of "$fam")
    label="${n}x $cc${cap:+ @${cap}G}"
    d=$WORK/v$fam-$n-$cc${cap:+-$cap}-$rep-$tool
    mkdir -p "$d"
    local err=(--tool "$tool" --family "$fam" --config "$label" --rep "$rep" --results "$RESULTS")
    if ! port=$("${BENCHTOOL[@]}" free-ports --count 1); then
        "${BULK[@]}" error-row "${err[@]}" --message "no free port"
        FAIL=1
        return
    fi
    if [[ $tool == iperf3 ]]; then
        srv=(iperf3 -s -p "$port" -1)
        cli=(iperf3 -c "$addr" -p "$port" -t "$DURATION" -J -P "$n" -C "$cc" -l "$SIZE")
        [[ -n $cap ]] && cli+=(-b "${cap}G")
    else
        srv=("$DP" recv --port "$port")
        cli=("$DP" send "$addr" --port "$port" --tcp --bulk --congestion "$cc"
            --size "$SIZE" --duration "${DURATION}s" --json)
        ((n > 1)) && cli+=(--parallel "$n")
        [[ -n $cap ]] && cli+=(--rate "${cap}gbit")
        [[ -n $INTERVAL ]] && cli+=(--interval "$INTERVAL")
    fi
    "${srv[@]}" >"$d/server.out" 2>&1 &
    rpid=$!
    BG_PIDS+=("$rpid")
    if ! "${BENCHTOOL[@]}" wait-port "$port" --proto tcp --pid "$rpid" 2>>"$d/server.out"; then
        tail_of "$d/server.out"
        stop_pid "$rpid"
        "${BULK[@]}" error-row "${err[@]}" --message "receiver did not start (log: $d/server.out)"
        FAIL=1
        return
    fi
    [[ $tool == dualperf ]] && sleep 0.2 # it may bind its other sockets in turn
    log "IPv$fam $label rep $rep: ${cli[*]/#$DP/dualperf}"
    children_cpu
    cpu0=$CHILD_CPU r0=$(proc_cpu "$rpid") w0=$EPOCHREALTIME
    run_limited $((DURATION + 30)) "${cli[@]}" >"$d/client.json" 2>"$d/client.err"
    rc=$?
    children_cpu
    cpu1=$CHILD_CPU r1=$(proc_cpu "$rpid") w1=$EPOCHREALTIME
    local wall
    wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')
    # iperf3's server may exit (and be reaped) before the client: its CPU
    # would be counted too, so iperf3's own figures are used instead.
    cpu_snd=$(pct_of "$cpu0" "$cpu1" "$wall") cpu_rcv=$(pct_of "$r0" "$r1" "$wall")
    if [[ $tool == iperf3 ]]; then # the one-off server exits by itself
        local i
        for ((i = 0; i < 50; i++)); do alive "$rpid" || break; sleep 0.1; done
    fi
    stop_pid "$rpid"
    if ((rc != 0)); then
        tail_of "$d/client.err"
        [[ $tool == iperf3 ]] && tail_of "$d/client.json" 3
        "${BULK[@]}" error-row "${err[@]}" --message \
            "$tool client exited with status $rc$( ((rc == 124)) && echo ' (timed out)') (stderr: $d/client.err)"
        FAIL=1
        return
    fi
    "${BULK[@]}" row "${err[@]}" --json "$d/client.json" --parallel "$n" --cc "$cc" \
        --cpu-snd "$cpu_snd" --cpu-rcv "$cpu_rcv" || FAIL=1
    [[ -s $d/client.err ]] && log "  $tool stderr: $(head -c 300 "$d/client.err" | tr '\n' ' ')"
    return 0
}

# ---------------------------------------------------------------------------
# main

ensure_iperf3
prepare_dualperf
log "work dir: $WORK; DURATION=${DURATION}s REPS=$REPS FAMILIES=($FAMILIES) CONFIGS=($CONFIGS) SIZE=$SIZE"
log "$(iperf3 --version 2>/dev/null | head -n 1); dualperf: $("$DP" --version 2>/dev/null) (copy of $DUALPERF)"
read -ra fams <<<"$FAMILIES"
read -ra cfgs <<<"$CONFIGS"
log "${#fams[@]} families x ${#cfgs[@]} configs x $REPS reps x 2 tools = $((${#fams[@]} * ${#cfgs[@]} * REPS * 2)) runs of ${DURATION}s"

for fam in $FAMILIES; do
    for c in $CONFIGS; do
        n=${c%%:*} rest=${c#*:}
        cc=${rest%%@*} cap=""
        [[ $rest == *@* ]] && cap=${rest#*@} && cap=${cap%g}
        for ((rep = 1; rep <= REPS; rep++)); do
            run_one iperf3 "$fam" "$n" "$cc" "$rep" "$cap"
            run_one dualperf "$fam" "$n" "$cc" "$rep" "$cap"
        done
    done
done

"${BULK[@]}" report --results "$RESULTS" --duration "$DURATION" --reps "$REPS"
rc=$?
if ((rc != 0 && rc != 3)); then
    log "report failed (exit $rc)"
    FAIL=1
fi
if ((FAIL)); then
    log "one or more runs failed (see ERROR lines above)"
    exit 1
fi
if ((rc == 3 && STRICT == 1)); then
    log "STRICT=1: at least one configuration is not within 10 % of iperf3"
    exit 1
fi
exit 0
