#!/usr/bin/env bash
# bench/soak.sh - dualperf's memory and timing over long single-flow runs, on loopback only.
#
# WHAT IT MEASURES
#   The issue's goal: memory must not grow with the packet count.  For IPv4
#   (127.0.0.1) and IPv6 (::1), one UDP flow of 64-byte probes,
#     dualperf recv --port P --json --sessions 1 [--log recv.dplog]
#     dualperf send ADDR --port P --udp --rate Rpps --size 64 --duration Ns --json [--log send.dplog]
#   each under /usr/bin/time -v, at these points:
#     ref   REF_RATE (30,000) pkt/s for REF_SECONDS (30), no log: the reference
#     soak  SOAK_RATE (300,000) pkt/s for SOAK_SECONDS (300), without and with --log
#     max   the highest sustainable rate for MAX_SECONDS (60), without and with --log;
#           MAX_RATE if set, else a ladder of SEARCH_RATES (250k..2M) for
#           SEARCH_SECONDS (5) each, no log, stopping at the first rate that
#           fails (retried SEARCH_RETRIES times): sustainable = achieved send
#           rate >= 99 % of the requested one and loss <= 0.1 %
#   Then the decode check: `dualperf decode --json` of a receiver log of at
#   least DECODE_RECORDS (100,000,000) records, under /usr/bin/time -v (peak
#   RSS, wall time), its summary compared field by field with the live
#   receiver's `recv --json` flow line.  The log comes from the IPv4 soak run
#   with --log if that holds enough records, else from a dedicated run (the
#   receiver logging, the sender not) of `--count DECODE_RECORDS` packets at the
#   IPv4 highest sustainable rate (however long a sender that falls behind takes).
#
# HOW TO READ THE OUTPUT
#   stderr: progress and the exact commands.  stdout: host facts, then one
#   table row per run (achieved rate, loss, packets received, schedule-error
#   p99 and its ratio to the same family's reference, peak RSS of receiver
#   and sender, outside-window and unlogged counts, "-" where the binary does
#   not report them), the goal lines, and the decode comparison.
#
# USAGE
#   bench/soak.sh        # full run, ~30 min plus the build; needs ~6 GB free in TMPDIR
#   SOAK_SECONDS=3 MAX_SECONDS=3 REF_SECONDS=2 MAX_RATE=200000 DECODE_RECORDS=500000 bench/soak.sh   # smoke test
# Environment knobs [defaults]:
#   REF_RATE [30000] REF_SECONDS [30]  SOAK_RATE [300000] SOAK_SECONDS [300]
#   MAX_RATE [unset: search]  MAX_SECONDS [60]
#   SEARCH_RATES ["250000 300000 350000 400000 450000 500000 600000 700000 850000 1000000 1250000 1500000 2000000"]  SEARCH_SECONDS [5]  SEARCH_RETRIES [1]
#   FAMILIES ["4 6"]  LOG_VARIANTS ["nolog log"]
#   DECODE_RECORDS [100000000] (0: no decode check)  DECODE_MARGIN [5] extra seconds
#   DUALPERF [unset: cargo build --release -p DUALPERF_PKG, binary found via
#            cargo metadata so CARGO_TARGET_DIR is honoured]; copied into the
#            temp dir at the start, so a rebuild during the run does not change it
#   DUALPERF_PKG [cli]  STRICT [0] (1: a goal NOT met exits 1)
#   KEEP_WORK [0]  1: keep the temp dir and every log; otherwise logs are
#            deleted as soon as they are used, and the temp dir (JSON, stderr,
#            time -v output) is kept only when a run failed
#   TMPDIR   where the temp dir and the logs go
# Exit status: 0 every run worked (goals met or not, unless STRICT=1); 1 a
# tool failed, timed out, printed output that cannot be parsed, or there is
# not enough disk space for a log; 2 bad settings.
#
# NETWORK SAFETY: traffic goes only to 127.0.0.1 and ::1.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
BENCHTOOL=(python3 "$HERE/lib/benchtool.py")
SOAK=(python3 "$HERE/lib/soak.py")

REF_RATE=${REF_RATE:-30000}
REF_SECONDS=${REF_SECONDS:-30}
SOAK_RATE=${SOAK_RATE:-300000}
SOAK_SECONDS=${SOAK_SECONDS:-300}
MAX_RATE=${MAX_RATE:-}
MAX_SECONDS=${MAX_SECONDS:-60}
SEARCH_RATES=${SEARCH_RATES:-250000 300000 350000 400000 450000 500000 600000 700000 850000 1000000 1250000 1500000 2000000}
SEARCH_SECONDS=${SEARCH_SECONDS:-5}
SEARCH_RETRIES=${SEARCH_RETRIES:-1}
FAMILIES=${FAMILIES:-4 6}
LOG_VARIANTS=${LOG_VARIANTS:-nolog log}
DECODE_RECORDS=${DECODE_RECORDS:-100000000}
DECODE_MARGIN=${DECODE_MARGIN:-5}
DUALPERF=${DUALPERF:-}
DUALPERF_PKG=${DUALPERF_PKG:-cli}
STRICT=${STRICT:-0}
KEEP_WORK=${KEEP_WORK:-0}
PAYLOAD=64
# Bytes per log record, measured with dualperf 0.1.0 (receiver 40, sender 33;
# the issue quotes 39): only used to check disk space before a logged run.
RECV_REC_BYTES=40
SEND_REC_BYTES=34

exec 3>&2 # progress, also from traps while a command's stderr is redirected
log() { printf '[soak] %s\n' "$*" >&3; }
usage_die() { log "bad setting: $*"; exit 2; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for v in REF_RATE REF_SECONDS SOAK_RATE SOAK_SECONDS MAX_SECONDS SEARCH_SECONDS; do
    is_posint "${!v}" || usage_die "$v must be a positive integer, got '${!v}'"
done
[[ -z $MAX_RATE ]] || is_posint "$MAX_RATE" || usage_die "MAX_RATE must be a positive integer (pkt/s), got '$MAX_RATE'"
[[ $SEARCH_RETRIES =~ ^[0-9]+$ ]] || usage_die "SEARCH_RETRIES must be an integer >= 0"
[[ $DECODE_RECORDS =~ ^[0-9]+$ ]] || usage_die "DECODE_RECORDS must be an integer >= 0"
[[ $DECODE_MARGIN =~ ^[0-9]+$ ]] || usage_die "DECODE_MARGIN must be an integer >= 0 (seconds)"
[[ $STRICT == [01] && $KEEP_WORK == [01] ]] || usage_die "STRICT and KEEP_WORK are 0 or 1"
[[ -n ${FAMILIES// /} ]] || usage_die "FAMILIES is empty"
for f in $FAMILIES; do [[ $f == [46] ]] || usage_die "FAMILIES: 4 and/or 6, got '$f'"; done
[[ -n ${LOG_VARIANTS// /} ]] || usage_die "LOG_VARIANTS is empty"
for v in $LOG_VARIANTS; do [[ $v == nolog || $v == log ]] || usage_die "LOG_VARIANTS: nolog and/or log, got '$v'"; done
if [[ -z $MAX_RATE ]]; then
    [[ -n ${SEARCH_RATES// /} ]] || usage_die "SEARCH_RATES is empty (or set MAX_RATE)"
    for r in $SEARCH_RATES; do is_posint "$r" || usage_die "bad rate '$r' in SEARCH_RATES"; done
fi
[[ -x /usr/bin/time ]] || usage_die "/usr/bin/time (GNU time, for -v) is missing: apt-get install -y time"
command -v python3 >/dev/null || usage_die "python3 is missing"

addr_of() { if [[ $1 == 6 ]]; then echo "::1"; else echo "127.0.0.1"; fi; }
has_word() { [[ " $1 " == *" $2 "* ]]; }

# ---------------------------------------------------------------------------
# temp dir, background processes, cleanup

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dualperf-soak.XXXXXX") || { log "mktemp failed"; exit 1; }
RESULTS=$WORK/results.jsonl
SEARCH_RESULTS=$WORK/search-results.jsonl
SEARCH_OUT=$WORK/search.txt
DECODE_OUT=$WORK/decode.json
: >"$RESULTS"; : >"$SEARCH_RESULTS"; : >"$SEARCH_OUT"
FAIL=0
BG_PIDS=()

# shellcheck source-path=SCRIPTDIR source=lib/procs.sh
. "$HERE/lib/procs.sh"

tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | sed 's/^/    /' >&3; }

# ---------------------------------------------------------------------------
# disk space

free_bytes() { df -Pk "$WORK" | awk 'NR == 2 { printf "%.0f", $4 * 1024 }'; }
gb() { awk -v b="$1" 'BEGIN { printf "%.2f GB", b / 1e9 }'; }

# need_disk BYTES WHAT: 0 if at least 1.5 x BYTES are free where the logs go.
need_disk() {
    local need=$1 what=$2 free
    free=$(free_bytes)
    if ((free * 2 < need * 3)); then
        log "not enough disk space for $what: needs $(gb "$need") (x1.5 = $(gb $((need * 3 / 2)))), $(gb "$free") free in $WORK (set TMPDIR to a larger file system, or lower the durations/DECODE_RECORDS)"
        return 1
    fi
    return 0
}

# ---------------------------------------------------------------------------
# dualperf

DP=$WORK/bin/dualperf
prepare_dualperf() {
    copy_dualperf
    if ! "$DP" recv --help 2>&1 | grep -q -- '--sessions' || ! "$DP" decode --help >/dev/null 2>&1; then
        log "$DP has no 'recv --sessions' or no 'decode'"
        FAIL=1
        exit 1
    fi
}

# ---------------------------------------------------------------------------
# one run

# start_timed, stop_timed and wait_timed (bench/lib/procs.sh) run dualperf under
# /usr/bin/time -v.

# CPU time the hypervisor gave to others while this VM's CPUs wanted to run (steal,
# the 8th field of /proc/stat's cpu line, summed over CPUs): each stolen moment on
# the sender's CPU is a stall its schedule has to catch up.
CLK_TCK=$(getconf CLK_TCK)
STEAL_MS=0
steal_jiffies() {
    local cpu user nice sys idle iowait irq softirq steal rest
    read -r cpu user nice sys idle iowait irq softirq steal rest </proc/stat
    echo "${steal:-0}"
}

RPID=""
RCHILD=""
start_recv() { # dir port [log]
    local d=$1 port=$2 lg=${3:-}
    local cmd=("$DP" recv --port "$port" --json --sessions 1)
    [[ -n $lg ]] && cmd+=(--log "$lg")
    echo "${cmd[*]/#$DP/dualperf}" >"$d/recv.cmd"
    start_timed "$d/recv.time" "$d/recv.json" "$d/recv.err" "${cmd[@]}"
    RPID=$TPID RCHILD=$TCHILD
    "${BENCHTOOL[@]}" wait-port "$port" --proto any --pid "$RPID" 2>>"$d/recv.err" || return 1
    sleep 0.2 # it may bind its data and control sockets in turn
}

# run_point family rate seconds point variant results
#   variant: nolog, log (both sides log), rxlog (the receiver only).
# Sets RUN_DIR and RUN_LINE (the row's summary, starting with PASS, FAIL or
# ERROR); returns 1 on a real error.
RUN_DIR=""
RUN_LINE=""
run_point() {
    local fam=$1 rate=$2 dur=$3 point=$4 variant=$5 results=$6 count=${7:-} addr d port rc msg=
    addr=$(addr_of "$fam")
    d=$WORK/$point-v$fam-$variant-$rate
    [[ -e $d ]] && d=$d-$RANDOM
    mkdir -p "$d"
    RUN_DIR=$d
    # A counted run is judged as lasting count / rate seconds.
    local row_dur=$dur
    [[ -n $count ]] && row_dur=$(((count + rate - 1) / rate))
    local rows=(--point "$point" --family "$fam" --variant "$variant" --rate "$rate"
        --duration "$row_dur" --results "$results")
    local rlog="" slog=""
    [[ $variant == log || $variant == rxlog ]] && rlog=$d/recv.dplog
    [[ $variant == log ]] && slog=$d/send.dplog
    if [[ -n $rlog ]]; then
        local need=$((rate * dur * RECV_REC_BYTES))
        [[ -n $slog ]] && need=$((need + rate * dur * SEND_REC_BYTES))
        need_disk "$need" "the logs of $point v$fam $rate pkt/s x ${dur}s" || msg="not enough disk space for the logs"
    fi
    if [[ -z $msg ]]; then
        if ! port=$("${BENCHTOOL[@]}" free-ports --count 1); then
            msg="no free port"
        elif ! start_recv "$d" "$port" "$rlog"; then
            tail_of "$d/recv.err"
            stop_timed "$RPID" "$RCHILD"
            msg="dualperf recv did not start (log: $d/recv.err)"
        fi
    fi
    if [[ -z $msg ]]; then
        # With a count the flow stops after that many packets, however long a sender
        # that falls behind takes (dur then only sizes the time limit).
        local stop=(--duration "${dur}s")
        [[ -n $count ]] && stop=(--count "$count")
        local cmd=("$DP" send "$addr" --port "$port" --udp --rate "${rate}pps"
            --size "$PAYLOAD" "${stop[@]}" --json)
        [[ -n $slog ]] && cmd+=(--log "$slog")
        echo "${cmd[*]/#$DP/dualperf}" >"$d/send.cmd"
        log "$point IPv$fam $variant ${rate} pkt/s ${dur}s: $(cat "$d/recv.cmd") & ${cmd[*]/#$DP/dualperf}"
        local steal0 steal1
        steal0=$(steal_jiffies)
        start_timed "$d/send.time" "$d/send.json" "$d/send.err" "${cmd[@]}"
        wait_timed $((dur * 2 + 60)) "$TPID" "$TCHILD"
        rc=$?
        steal1=$(steal_jiffies)
        STEAL_MS=$(((steal1 - steal0) * 1000 / CLK_TCK))
        if ((rc != 0)); then
            tail_of "$d/send.err"
            msg="dualperf send exited with status $rc$( ((rc == 124)) && echo ' (timed out)')"
            stop_timed "$RPID" "$RCHILD"
        else
            # a large log may take a while to flush
            wait_timed $((60 + dur / 2)) "$RPID" "$RCHILD"
            rc=$?
            if ((rc != 0)); then
                tail_of "$d/recv.err"
                msg="dualperf recv exited with status $rc$( ((rc == 124)) && echo ' (did not finish its session; stopped)')"
            fi
        fi
    fi
    if [[ -n $msg ]]; then
        "${SOAK[@]}" error-row "${rows[@]}" --message "$msg" >"$d/summary"
        RUN_LINE=$(head -n 1 "$d/summary")
        log "    $RUN_LINE"
        FAIL=1
        return 1
    fi
    "${SOAK[@]}" row "${rows[@]}" --send-json "$d/send.json" --recv-json "$d/recv.json" \
        --send-time "$d/send.time" --recv-time "$d/recv.time" --steal-ms "$STEAL_MS" \
        >"$d/summary" 2>"$d/summary.err" || FAIL=1
    [[ -s $d/summary.err ]] && sed 's/^/    /' "$d/summary.err" >&3
    RUN_LINE=$(head -n 1 "$d/summary")
    log "    $RUN_LINE"
    [[ -n $rlog && -f $rlog ]] && log "    receiver log: $(stat -c %s "$rlog") bytes"
    [[ $RUN_LINE != ERROR* ]]
}

# Logs are removed as soon as they are used, unless KEEP_WORK=1.
drop_logs() { # dir
    [[ $KEEP_WORK == 1 ]] || rm -f "$1/recv.dplog" "$1/send.dplog"
}

# ---------------------------------------------------------------------------
# highest sustainable rate

declare -A MAX_OF=()
probe() { # family rate -> 0 if sustainable (a failure is retried SEARCH_RETRIES times)
    local try
    for ((try = 0; try <= SEARCH_RETRIES; try++)); do
        run_point "$1" "$2" "$SEARCH_SECONDS" search nolog "$SEARCH_RESULTS"
        drop_logs "$RUN_DIR"
        [[ $RUN_LINE == PASS* ]] && return 0
        [[ $RUN_LINE == ERROR* ]] && return 1
    done
    return 1
}

find_max() { # family: sets MAX_OF[family] (0: none of the rates passed)
    local fam=$1 best=0 fail=0 r
    if [[ -n $MAX_RATE ]]; then
        MAX_OF[$fam]=$MAX_RATE
        echo "IPv$fam: MAX_RATE=$MAX_RATE (given, not searched)" >>"$SEARCH_OUT"
        return
    fi
    log "searching the highest sustainable rate, IPv$fam (${SEARCH_SECONDS}s per probe, no log)"
    for r in $SEARCH_RATES; do
        if probe "$fam" "$r"; then best=$r; else
            fail=$r
            break
        fi
    done
    MAX_OF[$fam]=$best
    if ((best == 0)); then
        echo "IPv$fam: none of SEARCH_RATES ($SEARCH_RATES) sustainable; no max point" >>"$SEARCH_OUT"
    elif ((fail == 0)); then
        echo "IPv$fam: >= $best pkt/s (the highest rate probed)" >>"$SEARCH_OUT"
    else
        echo "IPv$fam: $best pkt/s (next probe, $fail pkt/s, failed)" >>"$SEARCH_OUT"
    fi
}

# ---------------------------------------------------------------------------
# decode check

DECODE_STATUS=
DECODE_SRC=""
DECODE_SRC_DESC=""
decode_check() {
    local d src_dir lg records fam rate dur
    if ((DECODE_RECORDS == 0)); then
        DECODE_STATUS="disabled (DECODE_RECORDS=0)"
        return
    fi
    if [[ -n $DECODE_SRC ]]; then
        src_dir=$DECODE_SRC
    else
        fam=4
        has_word "$FAMILIES" 4 || fam=${FAMILIES%% *}
        rate=${MAX_OF[$fam]:-0}
        ((rate > 0)) || rate=$SOAK_RATE
        dur=$(((DECODE_RECORDS + rate - 1) / rate))
        dur=$((dur + DECODE_MARGIN))
        log "decode check: a dedicated run of ${DECODE_RECORDS} packets (--count): IPv$fam $rate pkt/s (about ${dur}s), receiver logging"
        if ! run_point "$fam" "$rate" "$dur" decode rxlog "$RESULTS" "$DECODE_RECORDS"; then
            DECODE_STATUS="not run: the log's run failed ($RUN_LINE)"
            drop_logs "$RUN_DIR"
            return
        fi
        src_dir=$RUN_DIR
        DECODE_SRC_DESC="the receiver log of a dedicated run (IPv$fam, $DECODE_RECORDS packets at $rate pkt/s)"
    fi
    lg=$src_dir/recv.dplog
    records=$("${SOAK[@]}" count --recv-json "$src_dir/recv.json")
    if ((records < DECODE_RECORDS)); then
        DECODE_STATUS="WARNING: the log holds $records records, fewer than DECODE_RECORDS=$DECODE_RECORDS (loss, or a sender that fell behind)"
        log "$DECODE_STATUS"
    fi
    d=$WORK/decode
    mkdir -p "$d"
    local cmd=("$DP" decode "$lg" --json)
    log "decode: /usr/bin/time -v ${cmd[*]/#$DP/dualperf} ($(gb "$(stat -c %s "$lg")"))"
    start_timed "$d/decode.time" "$d/decode.json" "$d/decode.err" "${cmd[@]}"
    wait_timed 7200 "$TPID" "$TCHILD"
    local rc=$?
    if ((rc != 0)); then
        tail_of "$d/decode.err"
        DECODE_STATUS="ERROR: dualperf decode exited with status $rc (log: $d/decode.err)"
        log "$DECODE_STATUS"
        FAIL=1
    else
        "${SOAK[@]}" compare --recv-json "$src_dir/recv.json" --decode-json "$d/decode.json" \
            --decode-time "$d/decode.time" --records "$records" --log-bytes "$(stat -c %s "$lg")" \
            --source "$DECODE_SRC_DESC" --out "$DECODE_OUT" >"$d/summary" || FAIL=1
        log "    $(head -n 1 "$d/summary")"
    fi
    drop_logs "$src_dir"
}

# ---------------------------------------------------------------------------
# main

prepare_dualperf

# Disk space, checked up front for the largest log the run will write (each
# run's logs are deleted once used; the decode log may be the soak log kept).
est_max=${MAX_RATE:-0}
for r in $SEARCH_RATES; do [[ -z $MAX_RATE ]] && ((r > est_max)) && est_max=$r; done
NEED=0
if has_word "$LOG_VARIANTS" log; then
    NEED=$((SOAK_RATE * SOAK_SECONDS * (RECV_REC_BYTES + SEND_REC_BYTES)))
    n=$((est_max * MAX_SECONDS * (RECV_REC_BYTES + SEND_REC_BYTES)))
    ((n > NEED)) && NEED=$n
fi
n=$((DECODE_RECORDS * RECV_REC_BYTES))
if ((SOAK_RATE * SOAK_SECONDS >= DECODE_RECORDS)); then
    n=$((n + SOAK_RATE * SOAK_SECONDS * (RECV_REC_BYTES + SEND_REC_BYTES))) # soak log kept while the next ones run
fi
((n > NEED)) && NEED=$n
if ! need_disk "$NEED" "the largest log of this run"; then
    FAIL=1
    exit 1
fi

CPU_MODEL=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/^MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo)
echo "== bench/soak.sh =="
echo "host: $(uname -n), kernel $(uname -r) ($(uname -m)), $(nproc) CPUs${CPU_MODEL:+ ($CPU_MODEL)}, RAM $MEM, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "dualperf: $("$DP" --version 2>/dev/null) ($(sha256sum "$DP" | cut -c1-12)); work dir $WORK ($(gb "$(free_bytes)") free)"
echo "settings: REF ${REF_RATE}pps x ${REF_SECONDS}s; SOAK ${SOAK_RATE}pps x ${SOAK_SECONDS}s; MAX ${MAX_RATE:-searched over ($SEARCH_RATES), ${SEARCH_SECONDS}s per probe} for ${MAX_SECONDS}s; FAMILIES ($FAMILIES); LOG_VARIANTS ($LOG_VARIANTS); DECODE_RECORDS $DECODE_RECORDS"
log "work dir: $WORK"

for fam in $FAMILIES; do
    run_point "$fam" "$REF_RATE" "$REF_SECONDS" ref nolog "$RESULTS"
    drop_logs "$RUN_DIR"
    for v in $LOG_VARIANTS; do
        run_point "$fam" "$SOAK_RATE" "$SOAK_SECONDS" soak "$v" "$RESULTS"
        ok=$?
        if ((ok == 0)) && [[ $fam == 4 && $v == log && -z $DECODE_SRC ]] && ((DECODE_RECORDS > 0)) &&
            (($("${SOAK[@]}" count --recv-json "$RUN_DIR/recv.json") >= DECODE_RECORDS)); then
            DECODE_SRC=$RUN_DIR
            DECODE_SRC_DESC="the receiver log of the soak run (IPv4, with log)"
            log "    keeping this receiver log for the decode check"
        else
            drop_logs "$RUN_DIR"
        fi
    done
    find_max "$fam"
    if ((${MAX_OF[$fam]} > 0)); then
        for v in $LOG_VARIANTS; do
            run_point "$fam" "${MAX_OF[$fam]}" "$MAX_SECONDS" max "$v" "$RESULTS"
            drop_logs "$RUN_DIR"
        done
    fi
done

decode_check

GOALS=$WORK/report.txt
"${SOAK[@]}" report --results "$RESULTS" --search "$SEARCH_OUT" --soak-rate "$SOAK_RATE" \
    --ref-rate "$REF_RATE" --decode "$DECODE_OUT" --decode-status "$DECODE_STATUS" | tee "$GOALS" || FAIL=1

if ((FAIL)); then
    log "one or more runs failed (see ERROR lines above)"
    exit 1
fi
if [[ $STRICT == 1 ]] && grep -q '^GOAL .*NOT met' "$GOALS"; then
    log "a goal was not met (STRICT=1)"
    exit 1
fi
exit 0
