#!/usr/bin/env bash
# test_memcached.sh - Debian's memcached (the options of its stock
# /etc/memcached.conf but -d, the log, the user and the port: a port of
# its own on 127.0.0.1, UDP off), under a closed-loop set/get load,
# recorded with needle record -p in every scenario.  Its threads: the
# listener and 4 workers asleep in epoll_wait (libevent), the log, LRU,
# slab and hash maintainers in nanosleep or futex.
#
# Debian's memcached is stripped and exports none of its functions, so
# needle names them func_0xADDR@memcached and -F cannot name them.  Calls
# counted exactly: sendmsg (the C library's, one per reply; -F sendmsg),
# and, for Debian 12's build (1.6.18-1+deb12u1, the Build ID below),
# process_command_ascii at 0x25ae0, one call per command line, found in
# the call tree: it finds the line's end (memchr), compares the command
# name (strcmp) and calls process_get_command (0x20cf0) for a get.
set -u
SRV=memcached
. "$(dirname "$0")/lib.sh"
need memcached
DEB12_BUILD_ID=cb4951e778913a1598cb9fa92e8c377dfc545320

port=$(free_port)
mkdir -p "$T/mc"
memcached -p "$port" -l 127.0.0.1 -U 0 -m 64 -t 4 -u root >"$T/mc/stdout" 2>"$T/mc/stderr" &
pid=$!
srv_track "$pid"
check "$SRV: memcached answers on 127.0.0.1:$port" wait_port "$port"
kill -0 "$pid" 2>/dev/null || { sed 's/^/      /' "$T/mc/stderr"; exit 1; }
echo "      memcached pid $pid, threads: $(for t in /proc/$pid/task/*; do cat "$t/comm"; done | tr '\n' ' ')"

load_start memcached "$port" 4
state_save before "$pid"
output_save "$T/mc/stderr" stderr.before
eintr_start "$pid"
load_phase
# sendmsg: each reply of the load; recv... the C library's functions
# have DWARF (libc6-dbg) for --auto-args.
attach_suite "$pid" sendmsg sendmsg read sendmsg
load_phase
sleep 0.5
eintr_stop
state_check before first "$pid"
load_stop

count_calls "$pid" memcached "$port" sendmsg 1000
if [ "$(readelf -n /usr/bin/memcached | awk '/Build ID/ {print $3}')" = "$DEB12_BUILD_ID" ]; then
	# No -F can name it: the whole program recorded.
	count_calls "$pid" memcached "$port" 'func_0x25ae0@memcached' 1000 --duration=30
else
	echo "      memcached is not Debian 12's build $DEB12_BUILD_ID: process_command_ascii not counted"
fi
check_eq "$SRV: answers after the detaches" "$(python3 "$LOAD_PY" count memcached "$port" 20)" "ok 20 failed 0"
output_check "$T/mc/stderr" stderr.before
check "$SRV: memcached alive at the end" kill -0 "$pid"
