#!/usr/bin/env bash
# test_redis.sh - Debian's redis-server, with its stock /etc/redis/redis.conf
# (only what would collide or write outside a temporary directory is
# overridden: port, daemonize, log, pid file, dir, saving), under a
# closed-loop load, recorded with needle record -p in every scenario.
# redis-server has five threads: the event loop (asleep in epoll_wait),
# three bio threads (futex) and jemalloc's background thread, which blocks
# every signal.  setCommand runs once per SET: SETs are kept out of the
# load, so that N SETs sent while attached are exactly N calls.
set -u
SRV=redis
. "$(dirname "$0")/lib.sh"
need redis-server

port=$(free_port)
mkdir -p "$T/redis"
redis-server /etc/redis/redis.conf --port "$port" --daemonize no --supervised no --logfile "" \
	--pidfile "$T/redis/redis.pid" --dir "$T/redis" --save "" --appendonly no \
	>"$T/redis/output" 2>&1 &
pid=$!
srv_track "$pid"
check "$SRV: redis-server answers on 127.0.0.1:$port" wait_port "$port"
kill -0 "$pid" 2>/dev/null || { sed 's/^/      /' "$T/redis/output"; exit 1; }
echo "      redis-server pid $pid, threads: $(for t in /proc/$pid/task/*; do cat "$t/comm"; done | tr '\n' ' ')"

load_start redis "$port" 4
state_save before "$pid"
output_save "$T/redis/output" output.before
eintr_start "$pid"
load_phase # phase 1: attached to, again and again
attach_suite "$pid" incrCommand write hgetCommand incrCommand
load_phase # phase 2: after
sleep 0.5
# needle record -p killed with SIGKILL while it records: the agent
# detaches on its own.  jemalloc's thread, which blocks every signal,
# can only be held by needle record, now gone: the agent's batch must
# not stand waiting for an answer with the event loop stopped (2 s at
# every such kill, before).  Phase 3, from the kill on.
record_bg killed "$pid"
if record_ready killed; then
	sleep 0.5
	load_phase # phase 3: killed
	kill -KILL "$(record_pid killed)"
	wait_for test -e "$T/killed.rc"
	sleep 3
fi
load_phase # phase 4
eintr_stop
state_check before first "$pid"
load_stop
killed_max=$(awk '$1 == "phase" && $2 == 3 {print $NF}' "$LOAD_OUT")
check "$SRV: record -p killed: no request waits a second in the 3 s after (slowest ${killed_max:-none} ms)" \
	awk -v m="${killed_max:-1e9}" 'BEGIN { exit !(m < 1000) }'

count_calls "$pid" redis "$port" setCommand 1000
# --estimate-return: not one return of the server hooked, the same count.
count_calls "$pid" redis "$port" setCommand 1000 -F setCommand --estimate-return
check_eq "$SRV: answers after the detaches" "$(python3 "$LOAD_PY" count redis "$port" 20)" "ok 20 failed 0"
output_check "$T/redis/output" output.before
check "$SRV: redis-server alive at the end" kill -0 "$pid"
