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
