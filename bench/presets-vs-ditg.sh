#!/usr/bin/env bash
# bench/presets-vs-ditg.sh - dualperf's traffic presets vs D-ITG's, on loopback.
#
# WHAT IT DOES
#   For every preset (VoIP: g711.1 g711.2 g723.1 g729.2 g729.3 x {RTP, CRTP} x
#   {no VAD, D-ITG VAD}; applications: CSa CSi Quake3 DNS Telnet) and every
#   family (IPv4 127.0.0.1, IPv6 ::1) it runs, for DURATION seconds,
#     ITGSend -a ADDR -Sdp SIG -rp DATA -t MS -l sendlog -x recvlog <preset>
#       e.g. <preset> = VoIP -x G.711.1 -h RTP -VAD | CSa | Telnet
#     dualperf send ADDR --port P --duration Ns --seed SEED --json --log send.dplog
#       <preset> e.g. --voip g711.1 --voip-header rtp --vad ditg | --app csa
#   each against its own fresh receiver (ITGRecv -Sp SIG, dualperf recv --port P)
#   on free ports.  The two tools' runs of one preset run CONCURRENTLY (they are
#   low-rate flows, at most ~150 pkt/s), which halves the wall time.
#   The preset table, the model values, the parsers and the statistics live in
#   bench/lib/presets.py; bench/lib/benchtool.py provides ports and readiness.
#
# HOW TO READ THE OUTPUT (stdout; progress goes to stderr)
#   All figures are sender side, from each tool's per-packet send records
#   (ITGDec -l on ITGSend's log; the Tx records of dualperf's --log, checked
#   against flows[0].sent.packets/bytes of its JSON):
#     pkt/s = (packets - 1) / (last - first send time): equals the model rate
#             for an on-time sender, whatever the run length;
#     B     = bytes / packets;  kbit/s = pkt/s x B x 8 / 1000.
#   Receiver-side packet counts are shown for both tools as a sanity column.
#   Verdicts: VoIP bit rates and DNS's packet rate against D-ITG's model, pass
#   within TOL % (0.5); stochastic quantities (CSa, CSi, Quake3, Telnet, and DNS
#   sizes) dualperf vs D-ITG and vs the model mean where it is finite, pass
#   when |difference| <= K x SE, SE from the run's own data (batch means,
#   per-packet sizes).  The last line is the pass/fail summary.
#
# USAGE
#   bench/presets-vs-ditg.sh                                # ~11 min
#   DURATION=2 PRESETS="g711.1-rtp csa" bench/presets-vs-ditg.sh   # smoke, ~15 s
# Knobs (environment, defaults in brackets):
#   DURATION [10] s per run   FAMILIES ["4 6"]   PRESETS [all 25; see
#   `python3 bench/lib/presets.py list`]   SEED [1] dualperf --seed
#   K [3] sigmas for stochastic verdicts   TOL [0.5] % for constant-rate ones
#   DUALPERF [target/release/dualperf] binary, copied to the temp dir first
#   KEEP_WORK [0] 1: keep the temp dir (logs, JSON) - also kept on errors
#   STRICT [0] 1: verdict failures make the exit status 1
# Exit status: 0 it ran (verdict failures are reported; with STRICT=1 they
# give 1); 1 a real error (a tool crashed or timed out, output could not be
# parsed, a prerequisite is missing); 2 bad settings.
#
# NETWORK SAFETY: traffic goes only to 127.0.0.1 and ::1.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
BENCHTOOL=(python3 "$HERE/lib/benchtool.py")
PRESETS_PY=(python3 "$HERE/lib/presets.py")

DURATION=${DURATION:-10}
FAMILIES=${FAMILIES:-4 6}
PRESETS=${PRESETS:-}
SEED=${SEED:-1}
K=${K:-3}
TOL=${TOL:-0.5}
DUALPERF=${DUALPERF:-$REPO_ROOT/target/release/dualperf}
KEEP_WORK=${KEEP_WORK:-0}
STRICT=${STRICT:-0}

# Progress goes to the script's stderr via fd 3, so that it reaches the
# terminal even while a command's output is redirected.
exec 3>&2
log() { printf '[presets-vs-ditg] %s\n' "$*" >&3; }
usage_die() { log "usage error: $*"; exit 2; }

# ---------------------------------------------------------------------------
# settings

[[ $DURATION =~ ^[1-9][0-9]*$ ]] || usage_die "DURATION must be a positive integer (s), got '$DURATION'"
[[ $SEED =~ ^[0-9]+$ ]] || usage_die "SEED must be a non-negative integer, got '$SEED'"
[[ $K =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_die "K must be a positive number, got '$K'"
[[ $TOL =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_die "TOL must be a positive number, got '$TOL'"
[[ $STRICT == [01] && $KEEP_WORK == [01] ]] || usage_die "STRICT and KEEP_WORK are 0 or 1"
[[ -n ${FAMILIES// /} ]] || usage_die "FAMILIES is empty"
for f in $FAMILIES; do [[ $f == [46] ]] || usage_die "FAMILIES: 4 and/or 6, got '$f'"; done
mapfile -t ALL_PRESETS < <("${PRESETS_PY[@]}" list) || { log "presets.py list failed"; exit 1; }
((${#ALL_PRESETS[@]} > 0)) || { log "presets.py list printed nothing"; exit 1; }
if [[ -z ${PRESETS// /} ]]; then
    PRESETS="${ALL_PRESETS[*]}"
else
    for p in $PRESETS; do
        [[ " ${ALL_PRESETS[*]} " == *" $p "* ]] ||
            usage_die "unknown preset '$p'; known: ${ALL_PRESETS[*]}"
    done
fi

addr_of() { if [[ $1 == 6 ]]; then echo "::1"; else echo "127.0.0.1"; fi; }

# ---------------------------------------------------------------------------
# temp dir, background processes, cleanup

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dualperf-presets.XXXXXX") || { log "mktemp failed"; exit 1; }
RESULTS=$WORK/results.jsonl
: >"$RESULTS"
FAIL=0
BG_PIDS=()

# shellcheck source-path=SCRIPTDIR source=lib/procs.sh
. "$HERE/lib/procs.sh"

# Start a command in the background, tracked for cleanup; the pid is left
# in BG.  Redirections are the caller's (they apply to this function).
BG=
start_bg() {
    "$@" &
    BG=$!
    BG_PIDS+=("$BG")
}

# Wait for a tracked background command; its exit status is returned.
wait_bg() {
    local rc
    wait "$1"
    rc=$?
    forget_pid "$1"
    return "$rc"
}


tail_of() { tail -n "${2:-5}" "$1" 2>/dev/null | tr -d '\r' | sed 's/^/    /' >&3; }

status_msg() { # what rc -> text
    if (($2 == 124 || $2 == 137)); then echo "$1 timed out"; else echo "$1 exited with status $2"; fi
}

# ---------------------------------------------------------------------------
# prerequisites

check_prereqs() {
    local t
    for t in ITGSend ITGRecv ITGDec python3 timeout; do
        command -v "$t" >/dev/null || { log "$t not found (D-ITG: apt-get install -y d-itg)"; exit 1; }
    done
    # The binary is rebuilt now and again by other work: copy it so that one
    # binary is used for the whole run.
    [[ -x $DUALPERF ]] || { log "dualperf binary not found or not executable: $DUALPERF"; exit 1; }
    mkdir -p "$WORK/bin"
    cp "$DUALPERF" "$WORK/bin/dualperf" || { log "cannot copy $DUALPERF"; exit 1; }
    DP=$WORK/bin/dualperf
    "$DP" --version >&3 2>&1 || true
    "${PRESETS_PY[@]}" selftest >&3 || { log "presets.py selftest failed"; exit 1; }
}

# ---------------------------------------------------------------------------
# one preset on one family: both tools at once

run_pair() { # family preset
    local fam=$1 preset=$2 addr d ports sig data dport
    local ritg rdp sitg sdp rc ditg_err="" dp_err=""
    addr=$(addr_of "$fam")
    d=$WORK/$preset-v$fam
    mkdir -p "$d"
    local -a ditg_args dp_args
    mapfile -t ditg_args < <("${PRESETS_PY[@]}" args "$preset" ditg)
    mapfile -t dp_args < <("${PRESETS_PY[@]}" args "$preset" dualperf)
    if ! ports=$("${BENCHTOOL[@]}" free-ports --count 3); then
        log "no free ports"
        FAIL=1
        return
    fi
    read -r sig data dport <<<"$ports"

    # Receivers first; a sender is started only if its receiver is listening.
    start_bg ITGRecv -Sp "$sig" >"$d/itgrecv.out" 2>&1
    ritg=$BG
    start_bg "$DP" recv --port "$dport" >"$d/recv.out" 2>&1
    rdp=$BG
    if ! "${BENCHTOOL[@]}" wait-port "$sig" --proto tcp --pid "$ritg"; then
        tail_of "$d/itgrecv.out"
        ditg_err="ITGRecv did not start"
    fi
    if ! "${BENCHTOOL[@]}" wait-port "$dport" --proto tcp --pid "$rdp"; then
        tail_of "$d/recv.out"
        dp_err="dualperf recv did not start"
    fi

    local limit=$((DURATION * 3 + 30)) dcmd pcmd
    dcmd=(ITGSend -a "$addr" -Sdp "$sig" -rp "$data" -t $((DURATION * 1000))
        -l "$d/sendlog" -x "$d/recvlog" "${ditg_args[@]}")
    pcmd=("$DP" send "$addr" --port "$dport" --duration "${DURATION}s" --seed "$SEED"
        --json --log "$d/send.dplog" "${dp_args[@]}")
    log "$preset IPv$fam: ${dcmd[*]}  ||  dualperf ${pcmd[*]:2}"
    sitg='' sdp=''
    if [[ -z $ditg_err ]]; then
        start_bg timeout --kill-after=5 "$limit" "${dcmd[@]}" >"$d/itgsend.out" 2>&1
        sitg=$BG
    fi
    if [[ -z $dp_err ]]; then
        start_bg timeout --kill-after=5 "$limit" "${pcmd[@]}" >"$d/send.json" 2>"$d/send.err"
        sdp=$BG
    fi
    if [[ -n $sitg ]]; then
        wait_bg "$sitg"
        rc=$?
        if ((rc != 0)); then
            tail_of "$d/itgsend.out"
            ditg_err=$(status_msg ITGSend "$rc")
        fi
    fi
    if [[ -n $sdp ]]; then
        wait_bg "$sdp"
        rc=$?
        if ((rc != 0)); then
            tail_of "$d/send.err"
            dp_err=$(status_msg "dualperf send" "$rc")
        fi
    fi
    wait_stable "$d/recvlog"
    stop_pid "$ritg"
    stop_pid "$rdp"

    # Parse both, append a result row; prints a one-line summary.
    if ! "${PRESETS_PY[@]}" row --preset "$preset" --family "$fam" --duration "$DURATION" \
        --ditg-dir "$d" --dp-json "$d/send.json" --dp-log "$d/send.dplog" \
        --results "$RESULTS" --ditg-error "$ditg_err" --dualperf-error "$dp_err" \
        2>&1 | sed 's/^/    /' >&3; then
        FAIL=1
    fi
}

# ---------------------------------------------------------------------------
# main

check_prereqs
n_presets=$(wc -w <<<"$PRESETS")
n_fams=$(wc -w <<<"$FAMILIES")
log "work dir: $WORK; DURATION=${DURATION}s FAMILIES=($FAMILIES) SEED=$SEED K=$K TOL=$TOL%"
log "$n_presets presets x $n_fams families, both tools concurrently: about" \
    "$((n_presets * n_fams * (DURATION + 3) / 60 + 1)) min"
for fam in $FAMILIES; do
    for preset in $PRESETS; do
        run_pair "$fam" "$preset"
    done
done

"${PRESETS_PY[@]}" report --results "$RESULTS" --k "$K" --tol "$TOL"
rc=$?
case $rc in
0) ;;
3) if [[ $STRICT == 1 ]]; then
       log "verdict failures (STRICT=1): exit 1"
       exit 1
   fi ;;
*) FAIL=1 ;;
esac
if ((FAIL)); then
    log "one or more runs failed or could not be parsed (see ERROR lines)"
    exit 1
fi
exit 0
