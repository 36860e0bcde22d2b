#!/usr/bin/env bash
# bench/bulk-vs-iperf3.sh - dualperf's bulk mode (TCP and UDP) vs iperf3, on loopback only.
#
# WHAT IT MEASURES
#   For IPv4 (127.0.0.1) and IPv6 (::1), the receiver-side payload throughput of
#   bulk transfers of DURATION seconds, each tool on a fresh receiver on a free
#   port, stopped after the run:
#   TCP, each configuration in CONFIGS (default: 1 stream cubic, 1 stream bbr,
#   1 stream cubic paced at 10 Gbit/s, 4 parallel streams cubic):
#     iperf3    iperf3 -s -p P -1  +  iperf3 -c ADDR -p P -t D -J -P N -C CC -l SIZE [-b NG]
#     dualperf  dualperf recv --port P  +  dualperf send ADDR --port P --tcp --bulk
#               [--parallel N] --congestion CC --size SIZE --duration Ds --json [--rate Ngbit]
#   UDP, each configuration in UDP_CONFIGS (default: 1400- and 64-byte datagrams,
#   each without and with GSO, and 1400 bytes without GSO, the receiver skipping the
#   copy of the payload), one flow, unpaced (as fast as the sender can):
#     iperf3    iperf3 -s -p P -1  +  iperf3 -c ADDR -p P -u -b 0 -l BYTES -t D -J [--gsro]
#     dualperf  dualperf recv --port P [--skip-rx-copy]  +  dualperf send ADDR --port P
#               --udp --bulk --size BYTES --duration Ds --json [--no-gso]
#   GSO: dualperf turns UDP GSO on by default in bulk mode and off with --no-gso;
#   a build whose `send --help` has no --no-gso has no GSO: its "GSO" rows then run
#   it without (the cell is marked *, so the row still shows how far it is from
#   iperf3 with GSO), or, when no iperf3 has --gsro either, not at all (n/a).
#   iperf3 uses GSO only with --gsro (3.21 on; it also turns on GRO in its
#   receiver); an iperf3 whose --help has no --gsro is not run in the GSO rows
#   (n/a: its figure without GSO is in the row above).  The skip-rx-copy rows
#   (@skip) run dualperf without GSO, its receiver copying only the head of each
#   datagram out of the kernel (recv --skip-rx-copy, MSG_TRUNC).  iperf3 is not
#   run there (n/a): its UDP --skip-rx-copy miscounts (3.21+: the receiver counts
#   12 bytes and no datagram for each datagram, as net.c's Nrecv_no_select
#   returns the bytes copied, not the datagram's length).  No goal: the report
#   prints dualperf's rate there against each iperf3's copying row instead.
#   The loopback ceiling: in every UDP row without GSO (size up to 2048 B), each
#   repetition also runs bench/ceiling/ceiling.c (built with cc -O2): one C
#   process, a sendmmsg sender and a recvmmsg receiver thread, batches of 64,
#   connected socket, no metering, -s BYTES, for DURATION s after a 0.5 s
#   warm-up (-T in the skip-rx-copy rows: its receiver too copies only each
#   datagram's head).  It is what batching alone gets through this host's
#   loopback; the report prints it beside the table, against each tool.
#   A dualperf that
#   refuses --udp --bulk without --rate (no unpaced UDP yet) is given
#   --rate UDP_PACED_RATE, a rate beyond what loopback carries (cell marked +).
#   The tools alternate (iperf3, [iperf3 of IPERF3,] dualperf, iperf3, ...) REPS
#   times per configuration, so slow drift of the machine favours none of them.
#   Goals (issue 22), each against every iperf3 in the same run: one TCP
#   stream >= 1.0x; a paced stream the same rate for no more sender CPU;
#   several streams ahead; UDP 1400 B >= 1.5x without GSO and >= 1.0x iperf3
#   --gsro with it (64 B rows: no goal, shown against 90 %).
#
# HOW TO READ THE OUTPUT
#   stdout: one line per run, then a legend of the tools (A = iperf3 on PATH,
#   B = the iperf3 of IPERF3, dp = dualperf, with versions) and one table for TCP
#   and one for UDP: one row per (family, config) with each tool's median
#   throughput (min-max), for UDP its loss % and delivered datagrams per second
#   (Mpkt/s), the ratio dualperf/each iperf3, each tool's CPU use sender/receiver
#   (user+system time / wall time, %, 100 = one core) and the verdict.
#   Throughput is receiver-side payload bit/s: iperf3 end.sum_received.bits_per_second
#   (bytes / test duration, TCP and UDP alike), dualperf
#   sum.received.bitrate_bps (bytes / first->last message); for 10 s runs the two
#   definitions differ by far less than 1 %.  UDP loss = datagrams not received /
#   sent, as each tool's receiver counts them.  CPU: iperf3 from its own JSON
#   (host_total = client = sender, remote_total = server = receiver); dualperf's
#   sender from bash `times`, its receiver from /proc/PID/stat.  The paced TCP row
#   (1x cubic @10G) compares the senders' CPU at the same rate.
#   stderr: progress and the exact commands.
#
# USAGE
#   bench/bulk-vs-iperf3.sh   # full run: 2 families x (4 TCP + 4 UDP configs) x 3 reps
#                             # x 2 tools x 10 s, less the n/a GSO runs: ~13-15 min;
#                             # with IPERF3 (3 tools) ~23 min
#   DURATION=2 REPS=1 FAMILIES=4 bench/bulk-vs-iperf3.sh      # smoke test (~1 min)
#   IPERF3=/tmp/iperf3-current/bin/iperf3 bench/bulk-vs-iperf3.sh   # three tools
#   UDP_CONFIGS= bench/bulk-vs-iperf3.sh                      # TCP only
#   CONFIGS= UDP_CONFIGS="1400 1400@gso" bench/bulk-vs-iperf3.sh    # UDP 1400 only
# A current iperf3 (for IPERF3=; Debian's 3.12 has no --gsro), built outside the repo
# from a checkout of github.com/esnet/iperf (needs gcc and make; no root):
#   cd iperf && ./configure --prefix=/tmp/iperf3-current && make -j2 && make install
# Environment knobs [defaults]:
#   DURATION [10]  seconds per run (integer)
#   REPS [3]       runs per tool and configuration
#   FAMILIES ["4 6"]
#   CONFIGS ["1:cubic 1:bbr 1:cubic@10g 4:cubic"]  TCP: STREAMS:CONGESTION_CONTROL[@GBITg],
#                  each passed to both tools (-P/-C, --parallel/--congestion);
#                  @GBITg caps each stream (iperf3 -b NG, dualperf --rate Ngbit), so the
#                  row compares what both tools deliver, and the CPU they spend, for the
#                  same offered rate; empty: no TCP rows
#   UDP_CONFIGS ["1400 1400@skip 1400@gso 64 64@gso"]  UDP: BYTES[@gso|@skip], payload
#                  bytes per datagram (16-65000), @gso with GSO, @skip with the
#                  receivers' skip-rx-copy (see above); empty: no UDP rows
#   SIZE [131072]  TCP bytes per write (iperf3 -l, dualperf --size; iperf3's default)
#   INTERVAL []    e.g. 1s: also pass --interval to dualperf (per-interval
#                  min-max is shown in its run lines)
#   IPERF3 []      path of a second iperf3 binary: every config then runs three tools
#                  (iperf3 on PATH, this one, dualperf), labelled by `--version`
#   UDP_PACED_RATE [100gbit]  --rate given to a dualperf without unpaced UDP bulk
#   DUALPERF [$CARGO_TARGET_DIR or <repo>/target, then /release/dualperf]
#                  copied to the temp dir at start, so that a rebuild during
#                  the bench does not affect it (build it first yourself)
#   CEILING [1]    0: no loopback ceiling runs
#   STRICT [0]     1: a failed verdict makes the exit status 1
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
CONFIGS=${CONFIGS-1:cubic 1:bbr 1:cubic@10g 4:cubic}
UDP_CONFIGS=${UDP_CONFIGS-1400 1400@skip 1400@gso 64 64@gso}
SIZE=${SIZE:-131072}
INTERVAL=${INTERVAL:-}
IPERF3=${IPERF3:-}
UDP_PACED_RATE=${UDP_PACED_RATE:-100gbit}
DUALPERF=${DUALPERF:-${CARGO_TARGET_DIR:-$HERE/../target}/release/dualperf}
STRICT=${STRICT:-0}
CEILING=${CEILING:-1}
KEEP_WORK=${KEEP_WORK:-0}

exec 3>&2 # progress, also from traps while a command's stderr is redirected
log() { printf '[bulk-vs-iperf3] %s\n' "$*" >&3; }
usage_die() { log "bad setting: $*"; exit 2; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_posint "$DURATION" || usage_die "DURATION must be a positive integer (seconds), got '$DURATION'"
is_posint "$REPS" || usage_die "REPS must be a positive integer, got '$REPS'"
is_posint "$SIZE" || usage_die "SIZE must be a positive integer (bytes), got '$SIZE'"
[[ -z $INTERVAL || $INTERVAL =~ ^[0-9]+(\.[0-9]+)?(ms|s)$ ]] || usage_die "INTERVAL like 1s or 500ms, got '$INTERVAL'"
[[ $UDP_PACED_RATE =~ ^[1-9][0-9]*(gbit|mbit|pps)$ ]] || usage_die "UDP_PACED_RATE like 100gbit, got '$UDP_PACED_RATE'"
[[ $STRICT == [01] && $KEEP_WORK == [01] && $CEILING == [01] ]] || usage_die "STRICT, KEEP_WORK and CEILING are 0 or 1"
[[ -n ${FAMILIES// /} ]] || usage_die "FAMILIES is empty"
for f in $FAMILIES; do [[ $f == [46] ]] || usage_die "FAMILIES: 4 and/or 6, got '$f'"; done
[[ -n ${CONFIGS// /}${UDP_CONFIGS// /} ]] || usage_die "CONFIGS and UDP_CONFIGS are both empty"
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
for c in $UDP_CONFIGS; do
    if ! [[ $c =~ ^([1-9][0-9]*)(@gso|@skip)?$ ]] || ((BASH_REMATCH[1] < 16 || BASH_REMATCH[1] > 65000)); then
        usage_die "UDP_CONFIGS entries are BYTES[@gso|@skip] with 16 <= BYTES <= 65000, like 1400, 64@gso or 1400@skip, got '$c'"
    fi
done
[[ -x $DUALPERF ]] || usage_die "DUALPERF=$DUALPERF is not an executable file"
if [[ -n $IPERF3 ]]; then
    [[ -x $IPERF3 && ! -d $IPERF3 ]] || usage_die "IPERF3=$IPERF3 is not an executable file"
    "$IPERF3" --version >/dev/null 2>&1 || usage_die "IPERF3=$IPERF3: '--version' fails"
fi

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
# prerequisites and the tools

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
DP_GSO=0     # 1: `send --no-gso` exists, i.e. bulk UDP uses GSO unless given it
DP_UNPACED=0 # 1: `send --udp --bulk` runs without --rate (unpaced)
DP_SKIPRX=0  # 1: `recv --skip-rx-copy` exists
prepare_dualperf() {
    mkdir -p "$WORK/bin"
    cp "$DUALPERF" "$DP" || { log "cannot copy $DUALPERF"; exit 1; }
    if ! "$DP" send --help 2>&1 | grep -q -- '--bulk'; then
        log "$DUALPERF has no 'send --bulk' (bulk mode not built yet?)"
        exit 1
    fi
    "$DP" send --help 2>&1 | grep -q -- '--no-gso' && DP_GSO=1
    "$DP" recv --help 2>&1 | grep -q -- '--skip-rx-copy' && DP_SKIPRX=1
    [[ -n ${UDP_CONFIGS// /} ]] || return 0
    # Whether unpaced UDP bulk is accepted: its option check refuses it at once
    # otherwise.  Accepted, it tries a port where nothing listens, on loopback.
    local port
    port=$("${BENCHTOOL[@]}" free-ports --count 1) || { log "no free port"; exit 1; }
    timeout 10 "$DP" send 127.0.0.1 --port "$port" --udp --bulk --size 1400 --duration 1s \
        --connect-timeout 1s --json >"$WORK/probe.out" 2>&1
    grep -q -- 'needs --rate' "$WORK/probe.out" || DP_UNPACED=1
}

# TOOLS: in the order they alternate.  BIN: the binary; LABEL: for the report;
# GSRO: 1 if that iperf3 has --gsro.
declare -A BIN LABEL GSRO
TOOLS=()
ANY_GSRO=0 # 1: some iperf3 has --gsro
setup_tools() {
    local t v
    BIN[iperf3]=$(command -v iperf3)
    TOOLS=(iperf3)
    [[ -n $IPERF3 ]] && BIN[iperf3-alt]=$IPERF3 && TOOLS+=(iperf3-alt)
    for t in "${TOOLS[@]}"; do
        GSRO[$t]=0
        "${BIN[$t]}" --help 2>&1 | grep -q -- '--gsro' && GSRO[$t]=1 ANY_GSRO=1
        v=$("${BIN[$t]}" --version 2>/dev/null | head -n 1)
        LABEL[$t]="${v:-iperf3, version unknown} (${BIN[$t]}; --gsro: $( ((GSRO[$t])) && echo yes || echo no))"
    done
    TOOLS+=(dualperf)
    BIN[dualperf]=$DP
    v="$("$DP" --version 2>/dev/null) (copy of $DUALPERF; UDP GSO: "
    v+="$( ((DP_GSO)) && echo "on, --no-gso to turn it off" || echo "not in this build")"
    v+="; unpaced UDP bulk: $( ((DP_UNPACED)) && echo yes || echo "no, --rate $UDP_PACED_RATE")"
    v+="; recv --skip-rx-copy: $( ((DP_SKIPRX)) && echo yes || echo no))"
    LABEL[dualperf]=$v
}

# ---------------------------------------------------------------------------
# one run

# The configuration of run_one, set by the main loop:
#   C_PROTO tcp|udp; TCP: C_N streams, C_CC, C_CAP (Gbit/s per stream or empty);
#   UDP: C_USIZE payload bytes, C_GSO 0|1, C_SKIP 0|1 (the receivers' skip-rx-copy).
#   C_LABEL names the row, C_SLUG its files.
C_PROTO='' C_N=1 C_CC='' C_CAP='' C_USIZE='' C_GSO=0 C_SKIP=0 C_LABEL='' C_SLUG=''

# run_one tool family rep: one receiver, one sender, one result row.
run_one() {
    local tool=$1 fam=$2 rep=$3 addr d port rpid rc bin
    local srv cli cpu0 cpu1 r0 r1 w0 w1 cpu_snd cpu_rcv marks=()
    addr=$(addr_of "$fam")
    bin=${BIN[$tool]}
    d=$WORK/v$fam-$C_SLUG-$rep-$tool
    mkdir -p "$d"
    local err=(--tool "$tool" --family "$fam" --proto "$C_PROTO" --config "$C_LABEL"
        --rep "$rep" --results "$RESULTS")
    if [[ $tool != dualperf ]]; then
        srv=("$bin" -s -p PORT -1)
        if [[ $C_PROTO == tcp ]]; then
            cli=("$bin" -c "$addr" -p PORT -t "$DURATION" -J -P "$C_N" -C "$C_CC" -l "$SIZE")
            [[ -n $C_CAP ]] && cli+=(-b "${C_CAP}G")
        else
            cli=("$bin" -c "$addr" -p PORT -u -b 0 -l "$C_USIZE" -t "$DURATION" -J)
            if ((C_GSO)); then
                if ((!GSRO[$tool])); then
                    "${BULK[@]}" skip-row "${err[@]}" --message "this iperf3 has no --gsro"
                    return 0
                fi
                cli+=(--gsro)
            fi
            if ((C_SKIP)); then
                "${BULK[@]}" skip-row "${err[@]}" --message \
                    "iperf3's UDP --skip-rx-copy counts 12 bytes and no datagram per datagram"
                return 0
            fi
        fi
    else
        srv=("$DP" recv --port PORT)
        cli=("$DP" send "$addr" --port PORT)
        if [[ $C_PROTO == tcp ]]; then
            cli+=(--tcp --bulk --congestion "$C_CC" --size "$SIZE" --duration "${DURATION}s" --json)
            ((C_N > 1)) && cli+=(--parallel "$C_N")
            [[ -n $C_CAP ]] && cli+=(--rate "${C_CAP}gbit")
        else
            cli+=(--udp --bulk --size "$C_USIZE" --duration "${DURATION}s" --json)
            ((DP_UNPACED)) || { cli+=(--rate "$UDP_PACED_RATE"); marks+=(--mark paced); }
            if ((C_SKIP)); then
                if ((!DP_SKIPRX)); then
                    "${BULK[@]}" skip-row "${err[@]}" --message "this dualperf has no recv --skip-rx-copy"
                    return 0
                fi
                srv+=(--skip-rx-copy)
            fi
            if ((DP_GSO)); then
                ((C_GSO)) || cli+=(--no-gso)
            elif ((C_GSO)); then
                if ((!ANY_GSRO)); then
                    "${BULK[@]}" skip-row "${err[@]}" --message \
                        "no GSO in this dualperf and no iperf3 with --gsro: nothing to compare"
                    return 0
                fi
                marks+=(--mark nogso)
            fi
        fi
        [[ -n $INTERVAL ]] && cli+=(--interval "$INTERVAL")
    fi
    if ! port=$("${BENCHTOOL[@]}" free-ports --count 1); then
        "${BULK[@]}" error-row "${err[@]}" "${marks[@]}" --message "no free port"
        FAIL=1
        return
    fi
    srv=("${srv[@]/#PORT/$port}") cli=("${cli[@]/#PORT/$port}")
    "${srv[@]}" >"$d/server.out" 2>&1 &
    rpid=$!
    BG_PIDS+=("$rpid")
    if ! "${BENCHTOOL[@]}" wait-port "$port" --proto tcp --pid "$rpid" 2>>"$d/server.out"; then
        tail_of "$d/server.out"
        stop_pid "$rpid"
        "${BULK[@]}" error-row "${err[@]}" "${marks[@]}" --message "receiver did not start (log: $d/server.out)"
        FAIL=1
        return
    fi
    [[ $tool == dualperf ]] && sleep 0.2 # it may bind its other sockets in turn
    log "IPv$fam $C_LABEL rep $rep: ${cli[*]/#$DP/dualperf}"
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
    if [[ $tool != dualperf ]]; then # the one-off server exits by itself
        local i
        for ((i = 0; i < 50; i++)); do alive "$rpid" || break; nap 0.1; done
    fi
    stop_pid "$rpid"
    if ((rc != 0)); then
        tail_of "$d/client.err"
        [[ $tool != dualperf ]] && tail_of "$d/client.json" 3
        "${BULK[@]}" error-row "${err[@]}" "${marks[@]}" --message \
            "$tool client exited with status $rc$( ((rc == 124)) && echo ' (timed out)') (stderr: $d/client.err)"
        FAIL=1
        return
    fi
    "${BULK[@]}" row "${err[@]}" "${marks[@]}" --json "$d/client.json" --parallel "$C_N" \
        --cc "$C_CC" --size "${C_USIZE:-0}" --gso "$C_GSO" --cpu-snd "$cpu_snd" --cpu-rcv "$cpu_rcv" || FAIL=1
    [[ -s $d/client.err ]] && log "  $tool stderr: $(head -c 300 "$d/client.err" | tr '\n' ' ')"
    return 0
}

# run_ceiling family rep: the loopback ceiling of the current UDP config (see the
# header), as a "ceiling" result row; nothing for GSO configs or larger datagrams.
CEILING_BIN=
run_ceiling() {
    local fam=$1 rep=$2 d args=()
    [[ -n $CEILING_BIN ]] && ((!C_GSO && C_USIZE <= 2048)) || return 0
    d=$WORK/v$fam-$C_SLUG-$rep-ceiling
    args=("-$fam" -s "$C_USIZE" -d "$DURATION" -w 0.5)
    ((C_SKIP)) && args+=(-T)
    log "IPv$fam $C_LABEL rep $rep: ceiling ${args[*]}"
    if ! run_limited $((DURATION + 30)) "$CEILING_BIN" "${args[@]}" >"$d.out" 2>"$d.err"; then
        tail_of "$d.err"
        "${BULK[@]}" error-row --tool ceiling --family "$fam" --proto udp --config "$C_LABEL" \
            --rep "$rep" --results "$RESULTS" --message "ceiling program failed (stderr: $d.err)"
        FAIL=1
        return 0
    fi
    "${BULK[@]}" ceiling-row --family "$fam" --config "$C_LABEL" --rep "$rep" \
        --results "$RESULTS" --size "$C_USIZE" --line-file "$d.out" || FAIL=1
}

# ---------------------------------------------------------------------------
# main

ensure_iperf3
prepare_dualperf
setup_tools
if ((CEILING)) && [[ -n ${UDP_CONFIGS// /} ]]; then
    CEILING_BIN=$WORK/bin/ceiling
    compile_ceiling "$CEILING_BIN" "$WORK/cc.log" || { CEILING_BIN=; FAIL=1; }
fi
log "work dir: $WORK; DURATION=${DURATION}s REPS=$REPS FAMILIES=($FAMILIES) CONFIGS=($CONFIGS) UDP_CONFIGS=($UDP_CONFIGS) SIZE=$SIZE"
for t in "${TOOLS[@]}"; do log "$t: ${LABEL[$t]}"; done
read -ra fams <<<"$FAMILIES"
read -ra cfgs <<<"$CONFIGS"
read -ra ucfgs <<<"$UDP_CONFIGS"
log "${#fams[@]} families x $((${#cfgs[@]} + ${#ucfgs[@]})) configs x $REPS reps x ${#TOOLS[@]} tools = $((${#fams[@]} * (${#cfgs[@]} + ${#ucfgs[@]}) * REPS * ${#TOOLS[@]})) runs of ${DURATION}s at most (an iperf3 without --gsro skips the GSO configs)"

for fam in $FAMILIES; do
    for c in $CONFIGS; do
        C_PROTO=tcp C_N=${c%%:*} rest=${c#*:} C_USIZE='' C_GSO=0
        C_CC=${rest%%@*} C_CAP=""
        [[ $rest == *@* ]] && C_CAP=${rest#*@} && C_CAP=${C_CAP%g}
        C_LABEL="${C_N}x $C_CC${C_CAP:+ @${C_CAP}G}"
        C_SLUG=tcp-$C_N-$C_CC${C_CAP:+-$C_CAP}
        for ((rep = 1; rep <= REPS; rep++)); do
            for t in "${TOOLS[@]}"; do run_one "$t" "$fam" "$rep"; done
        done
    done
    for c in $UDP_CONFIGS; do
        C_PROTO=udp C_N=1 C_CC='' C_CAP='' C_USIZE=${c%@*} C_GSO=0 C_SKIP=0
        [[ $c == *@gso ]] && C_GSO=1
        [[ $c == *@skip ]] && C_SKIP=1
        C_LABEL="$C_USIZE B$( ((C_GSO)) && echo ' GSO')$( ((C_SKIP)) && echo ' skip-rx-copy')"
        C_SLUG=udp-$C_USIZE$( ((C_GSO)) && echo '-gso')$( ((C_SKIP)) && echo '-skip')
        for ((rep = 1; rep <= REPS; rep++)); do
            for t in "${TOOLS[@]}"; do run_one "$t" "$fam" "$rep"; done
            run_ceiling "$fam" "$rep"
        done
    done
done

labels=()
for t in "${TOOLS[@]}"; do labels+=(--tool-label "$t=${LABEL[$t]}"); done
"${BULK[@]}" report --results "$RESULTS" --duration "$DURATION" --reps "$REPS" \
    --udp-paced-rate "$UDP_PACED_RATE" "${labels[@]}"
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
    log "STRICT=1: at least one configuration failed its verdict"
    exit 1
fi
exit 0
