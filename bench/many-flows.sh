#!/usr/bin/env bash
# bench/many-flows.sh - dualperf with thousands of concurrent flows, and D-ITG
# with as many as it can, on loopback only (the acceptance list of issue 15).
#
# WHAT IT MEASURES
#   For IPv4 (127.0.0.1) and IPv6 (::1), each dualperf run a fresh
#     dualperf recv --port P --sessions 1            (default --threads = CPUs)
#     dualperf send ADDR --port P ... --duration Ns --json
#   both under /usr/bin/time -v (peak RSS, CPU), in these cases (CASES):
#     big        FLOWS_BIG (10,000) UDP flows x 50 pkt/s x 160 B, DURATION s:
#                  --rate 50pps --size 160 --calls FLOWS_BIG
#                goals: delivered >= 99.9 %, the median flow's schedule-error
#                p99 <= 100 us, the worst flow's p99 <= 1 ms
#     voip       G.711.1 RTP calls, VOIP_CALLS (1,000 and 2,000), DURATION s:
#                  --voip g711.1 --calls N
#     tcp        TCP_FLOWS (1,000) TCP flows x 10 pkt/s x 160 B, DURATION s:
#                  --tcp --rate 10pps --size 160 --calls TCP_FLOWS
#     ditg       on-time delivery against D-ITG, DITG_FLOWS (100 and 1,000) UDP
#                flows x 50 pkt/s x 160 B for DITG_DURATION s (default
#                min(DURATION, 30)):
#                  dualperf: --rate 50pps --size 160 --calls N
#                  D-ITG:    ITGSend in multi-flow (script) mode, one line
#                            per flow:
#                    -a ADDR -Sdp SIGg -rp DATAg -T UDP -C 50 -c 160 -t MS
#                  in groups of DITG_GROUP (20) flows, each group its own
#                    ITGRecv -Sp SIGg   and   ITGSend SCRIPTg -l send.log -x recv.log
#                  all groups at once; the flows of a group share the data
#                  port DATAg (D-ITG's "multiport" build shares the socket).
#                  Why groups: D-ITG 2.8.1 keeps flows in arrays of 400
#                  (MAX_NUM_THREAD; here ITGSend crashed with SIGSEGV at
#                  once with 500 or more script lines); ITGRecv sleeps 1 s per
#                  flow it closes, one after another per signalling
#                  connection (1,000 flows in one ITGSend: 1,000 s to finish;
#                  a group of G: ~G s); and one ITGRecv serving 50 ITGSend
#                  processes at once failed (bind errors, "Cannot create a
#                  DATAGRAM socket", then it stops every flow).  The ports
#                  come from below the ephemeral range (ITGRecv binds a data
#                  port only when its flow starts, when ITGSend already holds
#                  up to 1,000 ephemeral source ports).
#     multicore  the aggregate of 16 flows run flat out against one flow, for
#                MC_DURATION s (min(DURATION, 10)), UDP, 64 B:
#                  ceiling.c (bench/ceiling, blocking receiver; as vs-ditg.sh)
#                  dualperf 1 flow:   --rate SINGLE_RATE (1,000,000)pps --size 64
#                  dualperf 16 flows: --rate MC_RATE (100,000)pps --size 64
#                                     --calls 16, with the default sender
#                                     threads (one per 1,000,000 pkt/s asked, at most one per CPU) and --threads 1
#                "does a second core help?" = 16 flows' received pkt/s with
#                the default threads / with --threads 1 (yes at >= 1.10x).
#
#   On-time delivery (ditg case), the same definition for both tools:
#     a packet is on time when it left at most 1 ms after its flow's schedule;
#     on-time delivered = packets received that were sent on time; reported
#     as a share of the packets planned (flows x 50 x DITG_DURATION), so a
#     sender that falls behind and sends fewer scores lower.
#     D-ITG:    per flow, decoded with `ITGDec LOG -l out.txt` (one text line
#               per packet: Flow>F Seq>S Src>A/P Dest>A/P txTime>H:M:S.us
#               rxTime>... Size>B, a time of day printed "%u:%u:%lf", e.g.
#               17:2:11.532818); schedule_k = tx of the first packet +
#               (seq_k - seq_first) x 20 ms; on time iff
#               tx_k - schedule_k <= 1 ms (early packets are on time);
#               delivered = (flow, seq) in the ITGRecv log (same decoding).
#               ITGSend's gaps run long (20.08 ms for 20 ms with 100 flows,
#               20.3-22 ms with 1,000), so its error grows with every packet
#               and only a flow's first ~10 packets are on time: the figure
#               falls as DITG_DURATION grows (1,000 flows: 1.1 % at 3 s,
#               0.1 % at 30 s).
#     dualperf: per flow, late = flows[i].sent.schedule_error.late_packets
#               (more than late_threshold_ns = 1 ms after the deadline);
#               on-time delivered >= max(0, received - late) (printed) and
#               <= min(received, sent - late); equal when nothing was lost.
#
# HOW TO READ THE OUTPUT
#   stderr: progress and every command.  stdout: host and settings, then
#   three tables -
#     many flows (big, voip, tcp): sent / planned %, delivered % (received /
#       sent), on time % (sent <= 1 ms late / sent), the median, p90 and
#       worst flow's schedule-error p99 in us, peak RSS of sender and
#       receiver, CPU % of each, the CPU time the hypervisor stole from this
#       VM while the sender ran (steal ms, /proc/stat: on a VM, a vCPU taken
#       away for a millisecond makes every packet due in that millisecond
#       late, and a host whose stalls recur every 100 ms hits the same 50
#       pkt/s flows each time), notes (flows that received nothing, a
#       sender that ran past its duration, JSON inconsistencies), then one
#       GOAL line per family for the big case (met / NOT met), and one per
#       run for the memory goal of issue 14 (peak RSS of each side < 64 MB
#       + 16 KB per flow);
#     on-time delivery: per tool, family and flow count, then
#       "on time delivered, N flows, IPvF: dualperf X %, D-ITG Y %, ratio Zx";
#     16 flows vs one: received pkt/s of each run, x 1 flow, x ceiling, then
#       "does a second core help?".
#   Loopback figures on this 2-core VM move with anything else running
#   (the host line shows the load); compare rows of one invocation.
#
# USAGE
#   bench/many-flows.sh                              # full run, ~17 min + build
#   DURATION=3 FLOWS_BIG=2000 bench/many-flows.sh    # smoke test, ~3 min
#   DURATION=5 bench/many-flows.sh                   # real flow counts, ~4.5 min
#   CASES="ditg" FAMILIES=4 bench/many-flows.sh      # one case, one family
#   Full-run estimate (2 families; the DURATION=5 run took 272 s, of which
#   120 s sending): big 2 x ~75 s, voip 4 x ~65 s, tcp 2 x ~65 s, ditg
#   2 x ~180 s (dualperf 100 and 1,000 flows x 30 s; D-ITG 100 flows ~45 s,
#   1,000 flows ~110 s: 30 s + ~25 s to close + decoding 2 x 1.4M records),
#   multicore 2 x ~60 s (senders asked for too much overrun): ~17 min.
# Environment knobs [defaults]:
#   DURATION [60] s of the big, voip and tcp runs   FAMILIES ["4 6"]
#   CASES ["big voip tcp ditg multicore"]
#   FLOWS_BIG [10000]   VOIP_CALLS ["1000 2000"]   TCP_FLOWS [1000]
#   DITG [1] (0: the ditg case runs dualperf only)   DITG_FLOWS ["100 1000"]
#   DITG_DURATION [min(DURATION,30)]   DITG_GROUP [20] flows per ITGSend
#   DITG_FLOW_OPTS [""] extra options on every script line (e.g. "-poll")
#   MC_DURATION [min(DURATION,10)]   MC_FLOWS [16]   MC_RATE [100000] pkt/s
#   per flow   SINGLE_RATE [1000000] pkt/s
#   DUALPERF [unset: cargo build --release -p DUALPERF_PKG, binary found via
#            cargo metadata so CARGO_TARGET_DIR is honoured]; either way
#            copied into the temp dir, so a rebuild during the run does not
#            change it
#   DUALPERF_PKG [cli]   STRICT [0] (1: a GOAL NOT met exits 1)
#   KEEP_WORK [0] 1: keep the temp dir (JSON, stderr, time -v, D-ITG logs
#            and their text decodings); it is kept anyway when a run failed
# Needs: python3, GNU time (/usr/bin/time; `apt-get install -y time` if
# missing), cc (multicore), D-ITG (`apt-get install -y d-itg` if missing).
# Exit status: 0 every run worked (goals met or not, unless STRICT=1); 1 a
# tool failed, timed out or printed output that cannot be parsed, or a
# prerequisite could not be installed or built; 2 bad settings.
#
# NETWORK SAFETY: traffic goes only to 127.0.0.1 and ::1.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
BENCHTOOL=(python3 "$HERE/lib/benchtool.py")
MF=(python3 "$HERE/lib/manyflows.py")

min() { if (($1 < $2)); then echo "$1"; else echo "$2"; fi; }

DURATION=${DURATION:-60}
FAMILIES=${FAMILIES:-4 6}
CASES=${CASES:-big voip tcp ditg multicore}
FLOWS_BIG=${FLOWS_BIG:-10000}
VOIP_CALLS=${VOIP_CALLS:-1000 2000}
TCP_FLOWS=${TCP_FLOWS:-1000}
DITG=${DITG:-1}
DITG_FLOWS=${DITG_FLOWS:-100 1000}
DITG_GROUP=${DITG_GROUP:-20}
DITG_FLOW_OPTS=${DITG_FLOW_OPTS:-}
MC_FLOWS=${MC_FLOWS:-16}
MC_RATE=${MC_RATE:-100000}
SINGLE_RATE=${SINGLE_RATE:-1000000}
DUALPERF=${DUALPERF:-}
DUALPERF_PKG=${DUALPERF_PKG:-cli}
STRICT=${STRICT:-0}
KEEP_WORK=${KEEP_WORK:-0}
RATE=50   # pkt/s per flow: big and ditg
SIZE=160  # payload bytes: big, tcp and ditg
TCP_RATE=10

exec 3>&2 # progress, also from traps while a command's stderr is redirected
log() { printf '[many-flows] %s\n' "$*" >&3; }
usage_die() { log "bad setting: $*"; exit 2; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_posint "$DURATION" || usage_die "DURATION must be a positive integer (s), got '$DURATION'"
DITG_DURATION=${DITG_DURATION:-$(min "$DURATION" 30)}
MC_DURATION=${MC_DURATION:-$(min "$DURATION" 10)}
for v in DITG_DURATION MC_DURATION FLOWS_BIG TCP_FLOWS DITG_GROUP MC_FLOWS MC_RATE SINGLE_RATE; do
    is_posint "${!v}" || usage_die "$v must be a positive integer, got '${!v}'"
done
((DITG_GROUP <= 250)) || usage_die "DITG_GROUP must be <= 250 (D-ITG 2.8.1 keeps at most 400 flows per process)"
for n in $VOIP_CALLS $DITG_FLOWS; do is_posint "$n" || usage_die "bad flow count '$n'"; done
[[ -n ${FAMILIES// /} ]] || usage_die "FAMILIES is empty"
for f in $FAMILIES; do [[ $f == [46] ]] || usage_die "FAMILIES: 4 and/or 6, got '$f'"; done
[[ -n ${CASES// /} ]] || usage_die "CASES is empty"
for c in $CASES; do
    [[ " big voip tcp ditg multicore " == *" $c "* ]] || usage_die "CASES: big voip tcp ditg multicore, got '$c'"
done
[[ $DITG == [01] && $STRICT == [01] && $KEEP_WORK == [01] ]] || usage_die "DITG, STRICT and KEEP_WORK are 0 or 1"
command -v python3 >/dev/null || usage_die "python3 is missing"

addr_of() { if [[ $1 == 6 ]]; then echo "::1"; else echo "127.0.0.1"; fi; }
has_case() { [[ " $CASES " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------
# temp dir, background processes, cleanup

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dualperf-many-flows.XXXXXX") || { log "mktemp failed"; exit 1; }
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
FAIL=0
BG_PIDS=()

# shellcheck source-path=SCRIPTDIR source=lib/procs.sh
. "$HERE/lib/procs.sh"

tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | tr -d '\r' | sed 's/^/    /' >&3; }

# CPU time the hypervisor gave to others while this VM's CPUs wanted to run (steal,
# the 8th field of /proc/stat's cpu line, summed over CPUs, in ticks of 1/CLK_TCK s):
# a vCPU stolen from the sender for a moment makes the packets due in it late.
CLK_TCK=$(getconf CLK_TCK)
steal_jiffies() {
    local cpu user nice sys idle iowait irq softirq steal rest
    read -r cpu user nice sys idle iowait irq softirq steal rest </proc/stat
    echo "${steal:-0}"
}

# ---------------------------------------------------------------------------
# prerequisites

# apt_install (and SUDO): bench/lib/procs.sh.

ensure_tools() {
    if [[ ! -x /usr/bin/time ]]; then
        apt_install time || { FAIL=1; exit 1; }
    fi
    if has_case ditg && [[ $DITG == 1 ]] &&
        ! { command -v ITGSend && command -v ITGRecv && command -v ITGDec; } >/dev/null; then
        apt_install d-itg || { FAIL=1; exit 1; }
    fi
    "${MF[@]}" selftest >&3 || { log "manyflows.py selftest failed"; FAIL=1; exit 1; }
}

DP=$WORK/bin/dualperf
prepare_dualperf() {
    copy_dualperf
    local h
    h=$("$DP" send --help 2>&1)
    if [[ $h != *--calls* || $h != *--threads* ]]; then
        log "$DP has no 'send --calls' or no 'send --threads'"
        FAIL=1
        exit 1
    fi
    "$DP" recv --help 2>&1 | grep -q -- '--sessions' || { log "$DP has no 'recv --sessions'"; FAIL=1; exit 1; }
}

CEILING_BIN=$WORK/bin/ceiling
build_ceiling() {
    compile_ceiling "$CEILING_BIN" "$WORK/cc.log" || { CEILING_BIN=; return 1; }
}

# ---------------------------------------------------------------------------
# processes under /usr/bin/time -v

# start_timed, stop_timed and wait_timed: bench/lib/procs.sh.

status_msg() { # what rc
    if (($2 == 124)); then echo "$1 timed out (stopped)"; else echo "$1 exited with status $2"; fi
}

# ---------------------------------------------------------------------------
# one dualperf run

FLAT_OUT=0 # 1: the flows ask for more than can be sent (multicore)

# run_dp case label family flows duration rate -- send-args...
#   rate: requested pkt/s per flow, for the report (may be "-").
# Appends a row to RESULTS; returns 1 on a real error.
run_dp() {
    local case=$1 label=$2 fam=$3 flows=$4 dur=$5 rate=$6 addr d port rc msg=""
    shift 7
    addr=$(addr_of "$fam")
    d=$WORK/$case-$label-v$fam
    mkdir -p "$d"
    local row=(--case "$case" --label "$label" --family "$fam" --flows "$flows"
        --duration "$dur" --results "$RESULTS")
    [[ $rate != - ]] && row+=(--rate "$rate")
    local rpid="" rchild="" recv_msg="" steal_ms=""
    if ! port=$("${BENCHTOOL[@]}" free-ports --count 1); then
        msg="no free port"
    else
        local rcmd=("$DP" recv --port "$port" --sessions 1)
        echo "${rcmd[*]/#$DP/dualperf}" >"$d/recv.cmd"
        start_timed "$d/recv.time" "$d/recv.out" "$d/recv.err" "${rcmd[@]}"
        rpid=$TPID rchild=$TCHILD
        if ! "${BENCHTOOL[@]}" wait-port "$port" --proto any --pid "$rpid" 2>>"$d/recv.err"; then
            tail_of "$d/recv.err"
            stop_timed "$rpid" "$rchild"
            msg="dualperf recv did not start (log: $d/recv.err)"
        else
            nap 0.2 # it may bind its data and control sockets in turn
        fi
    fi
    if [[ -z $msg ]]; then
        local cmd=("$DP" send "$addr" --port "$port" "$@" --duration "${dur}s" --json)
        echo "${cmd[*]/#$DP/dualperf}" >"$d/send.cmd"
        log "$case $label IPv$fam: $(cat "$d/recv.cmd") & ${cmd[*]/#$DP/dualperf}"
        local steal0
        steal0=$(steal_jiffies)
        start_timed "$d/send.time" "$d/send.json" "$d/send.err" "${cmd[@]}"
        # Setting up thousands of flows, and a sender that falls behind, take
        # a while beyond the duration.
        wait_timed $((dur * 3 + 120 + flows / 50)) "$TPID" "$TCHILD"
        rc=$?
        steal_ms=$((($(steal_jiffies) - steal0) * 1000 / CLK_TCK))
        if ((rc != 0)); then
            tail_of "$d/send.err"
            msg=$(status_msg "dualperf send" "$rc")
            stop_timed "$rpid" "$rchild"
        else
            wait_timed 60 "$rpid" "$rchild"
            rc=$?
            if ((rc != 0)); then
                tail_of "$d/recv.err"
                recv_msg="$(status_msg "dualperf recv" "$rc") after the session"
            fi
        fi
    fi
    local out
    if [[ -n $msg ]]; then
        out=$("${MF[@]}" error-row "${row[@]}" --tool dualperf --message "$msg")
        log "    $out"
        FAIL=1
        return 1
    fi
    local times=(--send-time "$d/send.time" --steal-ms "$steal_ms")
    ((FLAT_OUT)) && times+=(--flat-out)
    [[ -n $recv_msg ]] && times+=(--recv-error "$recv_msg")
    [[ -s $d/recv.time ]] && times+=(--recv-time "$d/recv.time")
    out=$("${MF[@]}" dp-row "${row[@]}" --send-json "$d/send.json" "${times[@]}" 2>&1)
    rc=$?
    log "    $out"
    ((rc == 0)) || { FAIL=1; return 1; }
}

# ---------------------------------------------------------------------------
# one D-ITG run: FLOWS flows in groups of DITG_GROUP, one ITGSend per group

run_ditg() { # family flows
    local fam=$1 flows=$2 addr d ngroups ports g i n rc msg=""
    addr=$(addr_of "$fam")
    d=$WORK/ditg-D-ITG-$flows-v$fam
    mkdir -p "$d"
    ngroups=$(((flows + DITG_GROUP - 1) / DITG_GROUP))
    local row=(--case ditg --label "$flows" --family "$fam" --flows "$flows"
        --duration "$DITG_DURATION" --rate "$RATE" --results "$RESULTS")
    # Per group a signalling and a data port, below the ephemeral range (see
    # manyflows.py ports).
    ports=$("${MF[@]}" ports --count $((2 * ngroups))) || msg="no free ports"
    local -a pa=($ports) gdirs=() rpids=() spids=()
    local ms=$((DITG_DURATION * 1000))
    local line="-a $addr -Sdp SIG -rp DATA -T UDP -C $RATE -c $SIZE -t $ms${DITG_FLOW_OPTS:+ $DITG_FLOW_OPTS}"
    if [[ -z $msg ]]; then
        log "ditg D-ITG IPv$fam: $flows flows as $ngroups x (ITGRecv -Sp SIG & ITGSend SCRIPT -l send.log -x recv.log), script lines '$line'"
        for ((g = 0; g < ngroups; g++)); do
            local gd=$d/g$g
            mkdir -p "$gd"
            gdirs+=("$gd")
            (cd "$gd" && exec ITGRecv -Sp "${pa[2 * g]}") >"$gd/itgrecv.out" 2>&1 &
            rpids+=($!)
            BG_PIDS+=($!)
        done
        for ((g = 0; g < ngroups; g++)); do
            if ! "${BENCHTOOL[@]}" wait-port "${pa[2 * g]}" --proto tcp --pid "${rpids[g]}" 2>>"${gdirs[g]}/itgrecv.out"; then
                tail_of "${gdirs[g]}/itgrecv.out"
                msg="ITGRecv of group $g did not start (log: ${gdirs[g]}/itgrecv.out)"
                break
            fi
        done
    fi
    if [[ -z $msg ]]; then
        local limit=$((DITG_DURATION + 2 * DITG_GROUP + 120))
        for ((g = 0; g < ngroups; g++)); do
            local gd=${gdirs[g]} gl=${line/SIG/${pa[2 * g]}}
            gl=${gl/DATA/${pa[2 * g + 1]}}
            n=$((flows - g * DITG_GROUP))
            ((n > DITG_GROUP)) && n=$DITG_GROUP
            for ((i = 0; i < n; i++)); do echo "$gl"; done >"$gd/script"
            (cd "$gd" && exec timeout --kill-after=5 "$limit" ITGSend "$gd/script" \
                -l "$gd/send.log" -x "$gd/recv.log") >"$gd/itgsend.out" 2>&1 &
            spids+=($!)
            BG_PIDS+=($!)
        done
        local bad=0 first_bad=""
        for ((g = 0; g < ngroups; g++)); do
            wait "${spids[g]}"
            rc=$?
            forget_pid "${spids[g]}"
            if ((rc != 0)); then
                bad=$((bad + 1))
                [[ -z $first_bad ]] && first_bad="group $g: $(status_msg ITGSend "$rc"), $(tr -d '|\\/-' <"${gdirs[g]}/itgsend.out" | grep -m 1 ERROR)"
            fi
        done
        # An ITGSend exits once its ITGRecv has acknowledged (and logged) its flows.
        n=0
        for ((g = 0; g < ngroups; g++)); do
            n=$((n + $(grep -c '^Finish on' "${gdirs[g]}/itgrecv.out")))
        done
        log "    ITGRecv closed $n flows"
        if ((bad)); then
            msg="$bad of $ngroups ITGSend processes failed ($first_bad; logs in $d)"
        fi
    fi
    for ((g = 0; g < ${#rpids[@]}; g++)); do stop_pid "${rpids[g]}"; done
    local out
    if [[ -n $msg ]]; then
        out=$("${MF[@]}" error-row "${row[@]}" --tool D-ITG --message "$msg")
        log "    $out"
        FAIL=1
        return 1
    fi
    local keep=()
    [[ $KEEP_WORK == 1 ]] && keep=(--keep-text)
    log "    decoding $((2 * ngroups)) D-ITG logs (ITGDec LOG -l LOG.txt)"
    out=$("${MF[@]}" ditg-row "${row[@]}" --groups "${gdirs[@]}" "${keep[@]}" 2>&1)
    rc=$?
    log "    $out"
    ((rc == 0)) || { FAIL=1; return 1; }
    [[ $KEEP_WORK == 1 ]] || rm -f "$d"/g*/send.log "$d"/g*/recv.log
}

# ---------------------------------------------------------------------------
# the ceiling program

run_ceiling() { # family
    local fam=$1 d=$WORK/multicore-ceiling-v$fam out
    mkdir -p "$d"
    local row=(--case multicore --label ceiling --family "$fam" --flows 1
        --duration "$MC_DURATION" --results "$RESULTS")
    if [[ -z $CEILING_BIN ]]; then
        out=$("${MF[@]}" error-row "${row[@]}" --tool ceiling.c --message "ceiling.c did not build")
        log "    $out"
        FAIL=1
        return 1
    fi
    local cmd=("$CEILING_BIN" "-$fam" -d "$MC_DURATION" -b 64 -s 64)
    log "multicore ceiling IPv$fam: ceiling ${cmd[*]:1}"
    if ! run_limited $((MC_DURATION + 30)) "${cmd[@]}" >"$d/ceiling.txt" 2>"$d/ceiling.err"; then
        tail_of "$d/ceiling.err"
        out=$("${MF[@]}" error-row "${row[@]}" --tool ceiling.c --message "ceiling program failed")
        log "    $out"
        FAIL=1
        return 1
    fi
    out=$("${MF[@]}" ceiling-row "${row[@]}" --file "$d/ceiling.txt" 2>&1) || FAIL=1
    log "    $out"
}

# ---------------------------------------------------------------------------
# main

ensure_tools
prepare_dualperf
has_case multicore && build_ceiling

NPROC=$(nproc)
CPU_MODEL=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/^MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo)
echo "== bench/many-flows.sh =="
echo "host: $(uname -n), kernel $(uname -r) ($(uname -m)), $NPROC CPUs${CPU_MODEL:+ ($CPU_MODEL)}, RAM $MEM, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "dualperf: $("$DP" --version 2>/dev/null) ($(sha256sum "$DP" | cut -c1-12))$(has_case ditg && [[ $DITG == 1 ]] && echo "; $(ITGSend -h 2>&1 | head -n 1)")"
echo "settings: CASES ($CASES); FAMILIES ($FAMILIES); DURATION ${DURATION}s; FLOWS_BIG $FLOWS_BIG; VOIP_CALLS ($VOIP_CALLS); TCP_FLOWS $TCP_FLOWS; DITG $DITG, DITG_FLOWS ($DITG_FLOWS) for ${DITG_DURATION}s in groups of $DITG_GROUP; MC ${MC_FLOWS} x ${MC_RATE}pps vs 1 x ${SINGLE_RATE}pps for ${MC_DURATION}s"
log "work dir: $WORK"

for fam in $FAMILIES; do
    if has_case big; then
        run_dp big "udp$FLOWS_BIG" "$fam" "$FLOWS_BIG" "$DURATION" "$RATE" -- \
            --rate "${RATE}pps" --size "$SIZE" --calls "$FLOWS_BIG"
    fi
    if has_case voip; then
        for n in $VOIP_CALLS; do
            run_dp voip "g711.1x$n" "$fam" "$n" "$DURATION" - -- --voip g711.1 --calls "$n"
        done
    fi
    if has_case tcp; then
        run_dp tcp "tcp${TCP_FLOWS}" "$fam" "$TCP_FLOWS" "$DURATION" "$TCP_RATE" -- \
            --tcp --rate "${TCP_RATE}pps" --size "$SIZE" --calls "$TCP_FLOWS"
    fi
    if has_case ditg; then
        for n in $DITG_FLOWS; do
            run_dp ditg "$n" "$fam" "$n" "$DITG_DURATION" "$RATE" -- \
                --rate "${RATE}pps" --size "$SIZE" --calls "$n"
            [[ $DITG == 1 ]] && run_ditg "$fam" "$n"
        done
    fi
    if has_case multicore; then
        run_ceiling "$fam"
        FLAT_OUT=1
        run_dp multicore 1flow "$fam" 1 "$MC_DURATION" "$SINGLE_RATE" -- \
            --rate "${SINGLE_RATE}pps" --size 64
        run_dp multicore 16flows "$fam" "$MC_FLOWS" "$MC_DURATION" "$MC_RATE" -- \
            --rate "${MC_RATE}pps" --size 64 --calls "$MC_FLOWS"
        run_dp multicore 16flows-t1 "$fam" "$MC_FLOWS" "$MC_DURATION" "$MC_RATE" -- \
            --rate "${MC_RATE}pps" --size 64 --calls "$MC_FLOWS" --threads 1
        FLAT_OUT=0
    fi
done

GOALS=$WORK/goals.txt
"${MF[@]}" report --results "$RESULTS" --nproc "$NPROC" --goals-out "$GOALS" || FAIL=1

if ((FAIL)); then
    log "one or more runs failed (see ERROR lines above)"
    exit 1
fi
if [[ $STRICT == 1 ]] && grep -q 'NOT met' "$GOALS"; then
    log "a goal was not met (STRICT=1)"
    exit 1
fi
exit 0
