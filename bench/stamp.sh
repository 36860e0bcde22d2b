#!/usr/bin/env bash
# bench/stamp.sh - dualperf's STAMP Session-Reflector and Session-Sender
# against stamp-suite's, on loopback only.
#
# WHAT IT MEASURES
#   For IPv4 (127.0.0.1) and IPv6 (::1), with 64-byte STAMP test packets
#   (the 44-octet unauthenticated base packet and an Extra Padding TLV to 64
#   octets: dualperf `--size 64`, stamp-suite `--extra-padding 16`):
#     reflector  the highest rate each reflector answers with <= 0.1 %
#                round-trip loss, the load always from dualperf's sender:
#                  dualperf recv --port 0 --stamp --stamp-port P --stamp-max-pps 0 --json
#                  stamp-suite -i -S ADDR -o P --output-format json
#                and, as load,
#                  dualperf send ADDR --port P --stamp --size 64 --rate Rpps
#                    --duration Ds --json
#     sender     the highest rate each Session-Sender achieves against
#                dualperf's reflector (as above) with <= 0.1 % loss:
#                  dualperf send ... (as above)
#                  stamp-suite -r ADDR -S ADDR -p P -d Ius -c N --duration D
#                    -L 1 --extra-padding 16 --output-format json
#                stamp-suite's interval has microsecond resolution, so its
#                rates are 1,000,000 / I pkt/s (I whole microseconds).
#     ceiling    bench/ceiling/ceiling.c (as vs-ditg.sh): one unpaced
#                sendmmsg sender and one blocking recvmmsg receiver, 64-byte
#                UDP, before and after each family's searches, the better
#                kept; each reflector's rate is shown as a share of it (the
#                issue's goal).  Beside it `ceiling -G`, the same with each
#                batch of 64 sent as one UDP GSO message: dualperf's sender
#                and reflector send so on loopback, so their rates can pass
#                the first ceiling; the share of this one is like for like.
#   Every step runs STAMP_STEP_SECONDS (5) with a fresh reflector on a free
#   port, under /usr/bin/time -v (peak RSS).  A step passes when round-trip
#   loss (sent - answered) / sent <= 0.1 % and the sender achieved >= 99 %
#   of the rate asked: dualperf sent.packets / max(D, its sending span);
#   stamp-suite packets_sent / D (its --duration stops the sending at D, so a
#   sender that falls behind sends fewer packets; the wall time around the
#   process, start-up and the wait for the last replies included, is logged
#   beside it).  A search starts at STAMP_START_PPS, doubles the rate until a
#   step fails or STAMP_MAX_PPS passes, then bisects STAMP_BISECT_STEPS times
#   (1,000 pkt/s steps; whole microseconds for stamp-suite's sender) between
#   the last pass and the first failure.  A failing step is retried
#   STAMP_RETRIES times first (a passing attempt wins), so one burst of
#   other load does not end a search.  dualperf's sender against dualperf's
#   reflector is one search, the dualperf figure of both comparisons; per
#   family it runs between stamp-suite's reflector search and stamp-suite's
#   sender search (in the opposite order for the next family), so that each
#   pair compared is measured back to back.
#
# HOW TO READ THE OUTPUT
#   stderr: progress, every command, one line per step (PASS/FAIL, sent,
#   answered, loss, achieved rate; the reflector's own counters, kernel drops
#   at its socket, the machine's UDP receive-buffer errors during the step,
#   its RSS).  stdout: host and settings, then one markdown table per run:
#   per family the ceiling, each reflector's highest rate, its share of the
#   ceiling, the first rate that failed and why (short of the rate asked, or
#   loss, and where the kernel dropped the lost packets when its counters
#   account for them: the reflector's socket or the sender's), each
#   reflector's peak RSS
#   (the largest of its steps), each sender's highest rate and what it
#   achieved there, with the ratio dualperf / stamp-suite, then one GOAL line
#   per family (dualperf ahead on both; its reflector >= 80 % of the
#   ceiling).  Sender and reflector share this machine's CPUs: loopback rates
#   move with anything else running; compare figures of one invocation.
#
# USAGE
#   bench/stamp.sh                                # ~7 min with 2 families + build
#   STAMP_STEP_SECONDS=2 bench/stamp.sh           # shorter steps, ~4.5 min
#   STAMP_FAMILIES=4 STAMP_MAX_PPS=400000 bench/stamp.sh
#   python3 bench/lib/stampbench.py selftest      # the helper's own checks
# Environment knobs [defaults]:
#   STAMP_FAMILIES ["4 6"]   STAMP_STEP_SECONDS [5]
#   STAMP_START_PPS [50000]  STAMP_MAX_PPS [1600000] search cap
#   STAMP_BISECT_STEPS [3]   STAMP_RETRIES [1]
#   STAMP_CEILING_SECONDS [STAMP_STEP_SECONDS]
#   STAMP_SUITE [unset: stamp-suite on PATH or in ~/.cargo/bin, else
#       `cargo install stamp-suite --locked`]
#   STAMP_SUITE_REFLECTOR_OPTS [""] extra options of stamp-suite's reflector
#       (e.g. "--reflector-queue-capacity 65536"; default: its defaults)
#   DUALPERF [unset: cargo build --release -p DUALPERF_PKG, binary found via
#       cargo metadata so CARGO_TARGET_DIR is honoured]; copied into the temp
#       dir either way   DUALPERF_PKG [cli]
#   KEEP_WORK [0] 1: keep the temp dir (per step the commands, JSON, stderr,
#       time -v output); it is kept anyway when a step failed with an error
# Needs: python3, cc, GNU time (`apt-get install -y time` if missing),
# cargo.  Exit status: 0 every step ran (goals met or not); 1 a tool
# crashed, timed out or printed output that cannot be parsed, or a
# prerequisite could not be built or installed (the table is still printed);
# 2 bad settings.
#
# NETWORK SAFETY: traffic goes only to 127.0.0.1 and ::1.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
BENCHTOOL=(python3 "$HERE/lib/benchtool.py")
SB=(python3 "$HERE/lib/stampbench.py")

STAMP_FAMILIES=${STAMP_FAMILIES:-4 6}
STAMP_STEP_SECONDS=${STAMP_STEP_SECONDS:-5}
STAMP_START_PPS=${STAMP_START_PPS:-50000}
STAMP_MAX_PPS=${STAMP_MAX_PPS:-1600000}
STAMP_BISECT_STEPS=${STAMP_BISECT_STEPS:-3}
STAMP_RETRIES=${STAMP_RETRIES:-1}
STAMP_CEILING_SECONDS=${STAMP_CEILING_SECONDS:-$STAMP_STEP_SECONDS}
STAMP_SUITE=${STAMP_SUITE:-}
STAMP_SUITE_REFLECTOR_OPTS=${STAMP_SUITE_REFLECTOR_OPTS:-}
DUALPERF=${DUALPERF:-}
DUALPERF_PKG=${DUALPERF_PKG:-cli}
KEEP_WORK=${KEEP_WORK:-0}
SIZE=64                 # octets of every test packet
SS_PADDING=$((SIZE - 44 - 4)) # stamp-suite: Extra Padding TLV value octets

exec 3>&2 # progress, also from traps while a command's stderr is redirected
log() { printf '[stamp] %s\n' "$*" >&3; }
usage_die() { log "bad setting: $*"; exit 2; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for v in STAMP_STEP_SECONDS STAMP_START_PPS STAMP_MAX_PPS STAMP_CEILING_SECONDS; do
    is_posint "${!v}" || usage_die "$v must be a positive integer, got '${!v}'"
done
for v in STAMP_BISECT_STEPS STAMP_RETRIES; do
    [[ ${!v} =~ ^[0-9]+$ ]] || usage_die "$v must be an integer >= 0, got '${!v}'"
done
((STAMP_START_PPS <= STAMP_MAX_PPS)) || usage_die "STAMP_START_PPS > STAMP_MAX_PPS"
[[ -n ${STAMP_FAMILIES// /} ]] || usage_die "STAMP_FAMILIES is empty"
for f in $STAMP_FAMILIES; do [[ $f == [46] ]] || usage_die "STAMP_FAMILIES: 4 and/or 6, got '$f'"; done
[[ $KEEP_WORK == [01] ]] || usage_die "KEEP_WORK is 0 or 1"
command -v python3 >/dev/null || usage_die "python3 is missing"

addr_of() { if [[ $1 == 6 ]]; then echo "::1"; else echo "127.0.0.1"; fi; }

# ---------------------------------------------------------------------------
# temp dir, background processes, cleanup

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dualperf-stamp.XXXXXX") || { log "mktemp failed"; exit 1; }
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
FAIL=0
BG_PIDS=()

# shellcheck source-path=SCRIPTDIR source=lib/procs.sh
. "$HERE/lib/procs.sh"

# procs.sh's helpers are written for scripts without `set -e` (a `wait` on a
# stopped process returns its signal status): this script calls them where
# a failure does not end it (after `||`, in `if`), and its cleanup runs
# without -e so that one failed `kill` or `wait` cannot stop it half-way.
on_exit() {
    local rc=$?
    set +e
    (exit "$rc")
    cleanup
}
trap on_exit EXIT

tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | tr -d '\r' | sed 's/^/    /' >&3 || true; }

# ---------------------------------------------------------------------------
# prerequisites

# apt_install (and SUDO): bench/lib/procs.sh.

ensure_tools() {
    if [[ ! -x /usr/bin/time ]]; then
        apt_install time || { FAIL=1; exit 1; }
    fi
    command -v cc >/dev/null || { log "cc is missing (the ceiling program)"; FAIL=1; exit 1; }
    "${SB[@]}" selftest >&3 || { log "stampbench.py selftest failed"; FAIL=1; exit 1; }
}

SS=$WORK/bin/stamp-suite
prepare_stamp_suite() {
    local src=$STAMP_SUITE
    if [[ -z $src ]]; then
        src=$(command -v stamp-suite || true)
        [[ -z $src && -x ${CARGO_HOME:-$HOME/.cargo}/bin/stamp-suite ]] &&
            src=${CARGO_HOME:-$HOME/.cargo}/bin/stamp-suite
    fi
    if [[ -z $src ]]; then
        command -v cargo >/dev/null || { log "stamp-suite not found and no cargo to install it"; FAIL=1; exit 1; }
        log "stamp-suite not found: cargo install stamp-suite --locked ..."
        if ! run_limited 7200 cargo install stamp-suite --locked >"$WORK/cargo-install.log" 2>&1; then
            log "cargo install stamp-suite --locked failed; last lines:"
            tail_of "$WORK/cargo-install.log" 15
            FAIL=1
            exit 1
        fi
        src=${CARGO_HOME:-$HOME/.cargo}/bin/stamp-suite
    fi
    [[ -x $src ]] || { log "no stamp-suite binary at $src"; FAIL=1; exit 1; }
    mkdir -p "$WORK/bin"
    cp "$src" "$SS" || { log "cannot copy $src"; FAIL=1; exit 1; }
    local h
    h=$("$SS" --help 2>&1 || true)
    if [[ $h != *--extra-padding* || $h != *--is-reflector* || $h != *--duration* ]]; then
        log "$src has no --extra-padding, --is-reflector or --duration"
        FAIL=1
        exit 1
    fi
    log "stamp-suite: $src (copied to $SS), $("$SS" --version 2>&1 || true)"
}

DP=$WORK/bin/dualperf
prepare_dualperf() {
    copy_dualperf || exit 1
    local h
    h=$("$DP" send --help 2>&1 || true)
    [[ $h == *--stamp* ]] || { log "$DP has no 'send --stamp'"; FAIL=1; exit 1; }
    h=$("$DP" recv --help 2>&1 || true)
    [[ $h == *--stamp-max-pps* ]] || { log "$DP has no 'recv --stamp-max-pps'"; FAIL=1; exit 1; }
}

CEILING_BIN=$WORK/bin/ceiling
build_ceiling() {
    compile_ceiling "$CEILING_BIN" "$WORK/cc.log" || { CEILING_BIN=; FAIL=1; }
}

# ---------------------------------------------------------------------------
# one step: a reflector on a free port, a sender for STAMP_STEP_SECONDS

STEP_N=0
VERDICT=
# run_step kind tool reflector sender family rate -> VERDICT PASS|FAIL|ERROR
run_step() {
    local kind=$1 tool=$2 refl=$3 sender=$4 fam=$5 rate=$6
    local dur=$STAMP_STEP_SECONDS addr d port rpid="" rchild="" msg="" rc=0
    local t0 t1 wall="" drops="" rcv0 rcv1 rcvbuf=""
    addr=$(addr_of "$fam")
    STEP_N=$((STEP_N + 1))
    d=$WORK/$(printf '%03d' "$STEP_N")-$kind-$tool-v$fam-$rate
    mkdir -p "$d"
    VERDICT=ERROR
    if ! port=$("${BENCHTOOL[@]}" free-ports --count 1 2>>"$d/ports.err"); then
        msg="no free port"
    else
        local rcmd
        if [[ $refl == dualperf ]]; then
            rcmd=("$DP" recv --port 0 --stamp --stamp-port "$port" --stamp-max-pps 0 --json)
        else
            # shellcheck disable=SC2206 # the options are split as words on purpose
            rcmd=("$SS" -i -S "$addr" -o "$port" --output-format json $STAMP_SUITE_REFLECTOR_OPTS)
        fi
        echo "${rcmd[*]/#$WORK\/bin\//}" >"$d/reflector.cmd"
        start_timed "$d/reflector.time" "$d/reflector.out" "$d/reflector.err" "${rcmd[@]}" || true
        rpid=$TPID rchild=$TCHILD
        if ! "${BENCHTOOL[@]}" wait-port "$port" --proto udp --pid "${rchild:-$rpid}" 2>>"$d/reflector.err"; then
            tail_of "$d/reflector.err"
            msg="$refl's reflector did not start (log: $d/reflector.err)"
        fi
    fi
    if [[ -z $msg ]]; then
        local scmd
        if [[ $sender == dualperf ]]; then
            scmd=("$DP" send "$addr" --port "$port" --stamp --size "$SIZE"
                --rate "${rate}pps" --duration "${dur}s" --json)
        else
            local us=$(((1000000 + rate / 2) / rate))
            scmd=("$SS" -r "$addr" -S "$addr" -p "$port" -d "${us}us"
                -c $((dur * 1000000 / us)) --duration "$dur" -L 1
                --extra-padding "$SS_PADDING" --output-format json)
        fi
        echo "${scmd[*]/#$WORK\/bin\//}" >"$d/sender.cmd"
        log "$kind $tool IPv$fam $rate pkt/s: $(cat "$d/reflector.cmd") & $(cat "$d/sender.cmd")"
        rcv0=$("${SB[@]}" rcvbuf-errors 2>/dev/null || echo "")
        t0=${EPOCHREALTIME/./}
        run_limited $((dur * 3 + 30)) "${scmd[@]}" >"$d/sender.out" 2>"$d/sender.err" || rc=$?
        t1=${EPOCHREALTIME/./}
        wall=$(printf '%d.%06d' $(((t1 - t0) / 1000000)) $(((t1 - t0) % 1000000)))
        rcv1=$("${SB[@]}" rcvbuf-errors 2>/dev/null || echo "")
        [[ -n $rcv0 && -n $rcv1 ]] && rcvbuf=$((rcv1 - rcv0))
        drops=$("${SB[@]}" port-drops "$port" 2>/dev/null || echo "")
        if ((rc != 0)); then
            tail_of "$d/sender.err"
            msg="$sender's sender exited with status $rc"
            if ((rc == 124)); then msg+=" (timed out)"; fi
        fi
    fi
    if [[ -n $rpid ]]; then
        stop_timed "$rpid" "$rchild" || true
    fi
    local args=(--kind "$kind" --tool "$tool" --reflector "$refl" --sender "$sender"
        --family "$fam" --rate "$rate" --duration "$dur" --send-out "$d/sender.out"
        --reflector-time "$d/reflector.time" --reflector-out "$d/reflector.out"
        --results "$RESULTS")
    [[ -n $wall ]] && args+=(--wall "$wall")
    [[ -n $drops ]] && args+=(--port-drops "$drops")
    [[ -n $rcvbuf ]] && args+=(--rcvbuf-errors "$rcvbuf")
    [[ -n $msg ]] && args+=(--error "$msg")
    local out
    if ! out=$("${SB[@]}" step "${args[@]}" 2>&1); then
        log "    stampbench.py step failed: $out"
        FAIL=1
        VERDICT=ERROR
        return 0
    fi
    log "    $out"
    VERDICT=${out%% *}
    if [[ $VERDICT == ERROR ]]; then
        FAIL=1
        tail_of "$d/sender.err"
    fi
    return 0
}

# probe kind tool reflector sender family rate -> VERDICT; a failing step is
# retried STAMP_RETRIES times (a passing attempt wins).
probe() {
    local try
    for ((try = 0; try <= STAMP_RETRIES; try++)); do
        run_step "$@"
        [[ $VERDICT == FAIL ]] || return 0
    done
}

# The rate a tool can be asked for nearest to $2: stamp-suite's sender takes
# whole microseconds of interval.
quantize() { # kind-tool rate
    local r=$2 us
    if [[ $1 == sender-stamp-suite ]]; then
        us=$(((1000000 + r / 2) / r))
        ((us >= 1)) || us=1
        echo $(((1000000 + us / 2) / us))
    else
        echo "$r"
    fi
}

# search kind tool: the highest rate that passes, by doubling, then bisection.
search() {
    local kind=$1 tool=$2 fam=$3 refl sender key r next best=0 fail=0 capped=0 lo hi mid i
    if [[ $kind == reflector ]]; then refl=$tool sender=dualperf; else refl=dualperf sender=$tool; fi
    key=$kind-$tool
    log "search: $kind $tool IPv$fam (reflector $refl, sender $sender; ${STAMP_STEP_SECONDS}s per step)"
    r=$(quantize "$key" "$STAMP_START_PPS")
    while :; do
        probe "$kind" "$tool" "$refl" "$sender" "$fam" "$r"
        if [[ $VERDICT == ERROR ]]; then
            fail=$r
            break
        elif [[ $VERDICT == PASS ]]; then
            best=$r
            next=$((r * 2))
            ((next <= STAMP_MAX_PPS)) || next=$STAMP_MAX_PPS
            next=$(quantize "$key" "$next")
            if ((next <= r)); then
                capped=1
                break
            fi
            r=$next
        else
            fail=$r
            break
        fi
    done
    if [[ $VERDICT != ERROR ]] && ((fail > 0)); then
        lo=$best hi=$fail
        for ((i = 0; i < STAMP_BISECT_STEPS; i++)); do
            mid=$(((lo + hi) / 2))
            [[ $key == sender-stamp-suite ]] || mid=$((mid / 1000 * 1000))
            mid=$(quantize "$key" "$mid")
            ((mid > lo && mid < hi)) || break
            probe "$kind" "$tool" "$refl" "$sender" "$fam" "$mid"
            [[ $VERDICT == ERROR ]] && break
            if [[ $VERDICT == PASS ]]; then lo=$mid best=$mid; else hi=$mid fail=$mid; fi
        done
    fi
    printf '{"type": "search", "kind": "%s", "tool": "%s", "family": %s, "best": %s, "fail": %s, "capped": %s}\n' \
        "$kind" "$tool" "$fam" "$best" "$fail" "$([[ $capped == 1 ]] && echo true || echo false)" >>"$RESULTS"
    log "search: $kind $tool IPv$fam: highest passing rate $best pkt/s$( ((capped)) && echo ' (the cap)')"
}

run_ceiling() { # family [-G]
    local fam=$1 gso=${2:-} f out
    [[ -n $CEILING_BIN ]] || return 0
    STEP_N=$((STEP_N + 1))
    f=$WORK/$(printf '%03d' "$STEP_N")-ceiling-v$fam${gso:+-gso}.txt
    log "ceiling IPv$fam: ceiling -$fam $gso -d $STAMP_CEILING_SECONDS -b 64 -s $SIZE"
    if ! run_limited $((STAMP_CEILING_SECONDS + 30)) "$CEILING_BIN" "-$fam" ${gso:+"$gso"} \
        -d "$STAMP_CEILING_SECONDS" -b 64 -s "$SIZE" >"$f" 2>"$f.err"; then
        log "ceiling program failed (IPv$fam):"
        tail_of "$f.err"
        FAIL=1
        return 0
    fi
    if out=$("${SB[@]}" ceiling --family "$fam" --file "$f" --results "$RESULTS" 2>&1); then
        log "    $out"
    else
        log "    $out"
        FAIL=1
    fi
}

# ---------------------------------------------------------------------------
# main

ensure_tools
prepare_dualperf
prepare_stamp_suite
build_ceiling

NPROC=$(nproc)
CPU_MODEL=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "== bench/stamp.sh =="
echo "host: $(uname -n), kernel $(uname -r) ($(uname -m)), $NPROC CPUs${CPU_MODEL:+ ($CPU_MODEL)}, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "dualperf: $("$DP" --version 2>/dev/null || true) ($(sha256sum "$DP" | cut -c1-12)); $("$SS" --version 2>/dev/null || true)"
echo "settings: STAMP_FAMILIES ($STAMP_FAMILIES); ${STAMP_STEP_SECONDS}s per step; start $STAMP_START_PPS pkt/s, doubling up to STAMP_MAX_PPS $STAMP_MAX_PPS, $STAMP_BISECT_STEPS bisection steps, a failed step retried $STAMP_RETRIES time(s); ceiling ${STAMP_CEILING_SECONDS}s; stamp-suite reflector options: ${STAMP_SUITE_REFLECTOR_OPTS:-(defaults)}"
log "work dir: $WORK"

# dualperf's sender against dualperf's reflector is one search (kind
# reflector, tool dualperf), the figure of both comparisons; it runs between
# the two stamp-suite searches, whose order alternates by family.
ORDER=(reflector sender)
for fam in $STAMP_FAMILIES; do
    run_ceiling "$fam"
    run_ceiling "$fam" -G
    search "${ORDER[0]}" stamp-suite "$fam"
    search reflector dualperf "$fam"
    search "${ORDER[1]}" stamp-suite "$fam"
    run_ceiling "$fam"
    run_ceiling "$fam" -G
    ORDER=("${ORDER[1]}" "${ORDER[0]}")
done

echo
"${SB[@]}" report --results "$RESULTS" --step-seconds "$STAMP_STEP_SECONDS" || FAIL=1

if ((FAIL)); then
    log "one or more steps failed with an error (see ERROR lines above)"
    exit 1
fi
exit 0
