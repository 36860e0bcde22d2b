# bench/lib/procs.sh - the background processes of a bench script, and its cleanup.
# Sourced by the bench scripts after they define log(), WORK, KEEP_WORK, FAIL and
# BG_PIDS=(). Every process a script starts is tracked in BG_PIDS and stopped on exit,
# interrupt or termination; the work dir is removed unless KEEP_WORK=1 or a run failed.
# shellcheck shell=bash

# Waiting starts no process: a bench that polls with `sleep` and `sed` forks several
# times a second, and each fork takes a CPU from the tools being measured for a moment
# (on a 2-core host, a visible part of a flow's schedule-error p99).

# Whether a pid is a live (not zombie) process (bash builtins only).
alive() {
    local st
    { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
    st=${st##*) }
    [[ -n $st && ${st:0:1} != Z && ${st:0:1} != X ]]
}

# nap SECONDS: sleep without starting a process (a read timeout on a pipe nobody
# writes to).
exec {NAP_FD}<> <(:)
nap() { read -r -t "$1" -u "$NAP_FD" _ || true; }

forget_pid() {
    local p keep=()
    for p in "${BG_PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
    BG_PIDS=("${keep[@]}")
}

# Stop one process we started: TERM, up to 5 s grace, then KILL; reap it.
stop_pid() {
    local pid=$1 i
    if alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 50; i++)); do alive "$pid" || break; nap 0.1; done
        if alive "$pid"; then
            log "pid $pid ignored SIGTERM, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null
        fi
    fi
    wait "$pid" 2>/dev/null
    forget_pid "$pid"
}

# shellcheck disable=SC2317 # invoked via trap
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${BG_PIDS[@]}"; do stop_pid "$pid"; done
    if [[ $KEEP_WORK == 1 || $FAIL != 0 ]]; then
        log "work dir kept (logs, raw outputs): $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# Run a command with a time limit, in the background so that the traps fire at once on
# INT/TERM (timeout(1) is its own process-group leader, so it is tracked and stopped
# explicitly). Redirections are the caller's.
run_limited() {
    local limit=$1 pid rc
    shift
    timeout --kill-after=5 "$limit" "$@" &
    pid=$!
    BG_PIDS+=("$pid")
    wait "$pid"
    rc=$?
    forget_pid "$pid"
    return "$rc"
}

# Wait until a file stops growing (ITGRecv writes its log when the flow ends); at most 10 s.
wait_stable() {
    local f=$1 prev=-1 cur i
    for ((i = 0; i < 40; i++)); do
        cur=$(stat -c %s "$f" 2>/dev/null || echo 0)
        [[ $cur == "$prev" ]] && return 0
        prev=$cur
        sleep 0.25
    done
}

# A process run under /usr/bin/time -v, which does not pass a TERM on to its
# child: both pids are tracked (the child's first, so the trap stops it before
# /usr/bin/time), and a time limit is kept by wait_timed rather than timeout(1).
TPID=""
TCHILD=""
start_timed() { # timefile stdout stderr cmd...
    local tf=$1 out=$2 er=$3 i
    shift 3
    /usr/bin/time -v -o "$tf" "$@" >"$out" 2>"$er" &
    TPID=$!
    TCHILD=""
    for ((i = 0; i < 100; i++)); do
        TCHILD=""
        { read -r TCHILD <"/proc/$TPID/task/$TPID/children"; } 2>/dev/null
        TCHILD=${TCHILD%% *}
        [[ -n $TCHILD ]] && break
        alive "$TPID" || break
        nap 0.02
    done
    [[ -n $TCHILD ]] && BG_PIDS+=("$TCHILD")
    BG_PIDS+=("$TPID")
}

stop_timed() { # tpid child
    [[ -n $2 ]] && stop_pid "$2"
    stop_pid "$1"
}

# Wait at most LIMIT s for a start_timed process to exit; stop it if it does
# not.  Returns its exit status (124 if it was stopped).
wait_timed() { # limit tpid child
    local limit=$1 tpid=$2 child=$3 i rc
    # Polled with builtins only (see bench/lib/procs.sh): no process starts mid-run.
    for ((i = 0; i < limit * 5; i++)); do alive "$tpid" || break; nap 0.2; done
    if alive "$tpid"; then
        stop_timed "$tpid" "$child"
        return 124
    fi
    wait "$tpid" 2>/dev/null
    rc=$?
    forget_pid "$tpid"
    [[ -n $child ]] && forget_pid "$child"
    return "$rc"
}

# Build dualperf (cargo build --release -p $DUALPERF_PKG from $REPO_ROOT, the binary
# found via cargo metadata so CARGO_TARGET_DIR is honoured), or take $DUALPERF, and
# copy it to $DP. Uses log, tail_of, run_limited, FAIL and WORK of the calling script;
# a failure is fatal (exit 1).
copy_dualperf() {
    local src=$DUALPERF
    if [[ -z $src ]]; then
        command -v cargo >/dev/null || { log "cargo not found (or set DUALPERF)"; FAIL=1; exit 1; }
        log "building dualperf: (cd $REPO_ROOT && cargo build --release -p $DUALPERF_PKG) ..."
        local rc tdir
        pushd "$REPO_ROOT" >/dev/null || exit 1
        run_limited 7200 cargo build --release -p "$DUALPERF_PKG" >"$WORK/cargo-build.log" 2>&1
        rc=$?
        tdir=$(cargo_target_dir)
        popd >/dev/null || exit 1
        if ((rc != 0)); then
            log "cargo build --release -p $DUALPERF_PKG failed (exit $rc); last lines:"
            tail_of "$WORK/cargo-build.log" 15
            log "(a prebuilt binary can be given with DUALPERF=path)"
            FAIL=1
            exit 1
        fi
        src=$tdir/release/dualperf
    fi
    [[ -x $src ]] || { log "no dualperf binary at $src"; FAIL=1; exit 1; }
    mkdir -p "$WORK/bin"
    cp "$src" "$DP" || { log "cannot copy $src"; FAIL=1; exit 1; }
    log "dualperf: $src (copied to $DP)"
}

# Cargo's target directory for the workspace at $REPO_ROOT (cargo metadata, so
# CARGO_TARGET_DIR and config files are honoured; the default if that fails).
cargo_target_dir() {
    local tdir
    tdir=$(cd "$REPO_ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null)
    if [[ -z $tdir ]]; then
        tdir=${CARGO_TARGET_DIR:-target}
        [[ $tdir == /* ]] || tdir=$REPO_ROOT/$tdir
    fi
    echo "$tdir"
}

# Compile bench/ceiling/ceiling.c (the loopback ceiling program) to $1, the
# compiler's output to $2; on failure its last lines go to the log and the
# status is 1.
compile_ceiling() { # out log
    log "building the ceiling program (cc -O2 bench/ceiling/ceiling.c)"
    mkdir -p "$(dirname "$1")"
    if ! cc -O2 -Wall -Wextra -pthread -o "$1" "$HERE/ceiling/ceiling.c" >"$2" 2>&1; then
        log "cc failed:"
        tail_of "$2" 20
        return 1
    fi
}

# Install Debian package $1 (apt-get install -y, with one apt-get update if that fails),
# as root or through sudo. Uses the sourcing script's log, tail_of and $WORK.
SUDO=()
[[ $(id -u) == 0 ]] || SUDO=(sudo)
apt_install() { # package: apt-get install, with one apt-get update if that fails
    log "installing $1 from Debian (apt-get install -y $1)"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get install -y "$1" >>"$WORK/apt.log" 2>&1 && return 0
    log "apt-get install failed, running apt-get update once and retrying"
    { "${SUDO[@]}" apt-get update && "${SUDO[@]}" apt-get install -y "$1"; } >>"$WORK/apt.log" 2>&1 && return 0
    log "could not install $1:"
    tail_of "$WORK/apt.log" 10
    return 1
}
