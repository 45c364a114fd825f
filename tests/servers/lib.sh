# lib.sh - shared by the server tests (tests/servers/test_*.sh): Debian's
# own servers, as packaged, started here on loopback ports of their own,
# put under a closed-loop load whose every reply is checked, and recorded
# with `needle record -p` while they serve.  Checks print PASS:/FAIL:
# lines through check/check_eq of tests/lib.sh.
#
# Nothing here depends on the packaged system services (they may be
# running or not): every server runs from a temporary directory, on a port
# found free, and is killed when the script exits, however it exits.
#
# Environment:
#   NEEDLE_BUILD      the build directory (default: build/ of this tree)
#   SERVERS_ATTACH_S  seconds of each timed attach (default 1)
#   SERVERS_METRICS   a file to append one line per attach and per load
#                     phase to (bench/bench_servers.sh reads it)
set -u
SRV_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${NEEDLE_BUILD:=$(cd "$SRV_HERE/../../build" && pwd)}"
export NEEDLE_BUILD
# shellcheck source=../lib.sh
. "$SRV_HERE/../lib.sh"
# The servers were not built for needle: record what needle's default
# (--sites=all) finds, as a user of the packaged binary would.
unset NEEDLE_SITES
LOAD_PY="$SRV_HERE/load.py"
ATTACH_S=${SERVERS_ATTACH_S:-1}
METRICS=${SERVERS_METRICS:-/dev/null}
SRV=${SRV:-server}

# ---- cleanup: every process started here is killed on exit ----
SRV_PIDS=()
srv_on_exit() { :; } # a script may redefine it (pg_ctl stop)
srv_cleanup() {
	local p
	srv_on_exit
	for p in "${SRV_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	sleep 0.3
	for p in "${SRV_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap srv_cleanup EXIT
trap 'exit 130' INT TERM HUP
# srv_track PID...: kill PID when the script exits.
srv_track() { SRV_PIDS+=("$@"); }

# need CMD...: each must be installed (scripts/setup.sh installs them);
# a missing one is one FAIL and the end of the script.
need() {
	local c
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1 && [ ! -x "$c" ]; then
			fail "$SRV: $c is installed (scripts/setup.sh)"
			exit 1
		fi
	done
}

# free_port: a TCP port of 127.0.0.1 that nothing listens on, from the
# kernel's ephemeral range (so never a packaged service's default port).
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_port PORT [SECONDS]: until something accepts on 127.0.0.1:PORT.
wait_port() {
	local i
	for i in $(seq 1 $((${2:-20} * 20))); do
		python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()' "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# ---- the target's state: what detaching must leave as it was ----
# fd_state PID: each descriptor and what it points to (readlink only:
# nothing is opened in the target).
# FD_IGNORE: a regex of descriptors a request opens and closes (nginx's
# file being served), left out.  Such a descriptor may also be closed
# between the listing and its readlink: one that cannot be read is gone,
# and left out too (under nginx's load, 37 listings in 200 had its number
# with no target, which failed the comparison).  A descriptor that needle
# leaves open stays readable, and still shows.
fd_state() {
	local f l
	for f in /proc/"$1"/fd/*; do
		l=$(readlink "$f" 2>/dev/null) || continue
		printf '%s %s\n' "${f##*/}" "$l"
	done | grep -vE "${FD_IGNORE:-^\$}" | sort -n
}
vm_kb() { awk '/^VmSize:/ {print $2}' /proc/"$1"/status; }
# mapped_files PID: the files mapped in PID, one per line.
mapped_files() { awk '$6 ~ /^\// {print $6}' /proc/"$1"/maps | sort -u; }
# new_file_kb PID BEFORE: KiB of PID's mappings of files not in the list BEFORE
# (mapped_files output): libneedle, libneedle-boot and the libraries they
# pull in, which stay loaded after a detach by design.
new_file_kb() {
	python3 - "$1" "$2" <<'PY'
import sys
old = set(open(sys.argv[2]).read().split("\n"))
kb = 0
for line in open("/proc/%s/maps" % sys.argv[1]):
    f = line.split(None, 5)
    if len(f) == 6 and f[5].startswith("/") and f[5].rstrip("\n") not in old:
        lo, hi = f[0].split("-")
        kb += (int(hi, 16) - int(lo, 16)) // 1024
print(kb)
PY
}
# The VmSize tolerance.  The agent stays loaded after a detach, so the
# first attach may grow the process by its libraries' mappings (counted
# exactly, above) plus what libneedle maps anonymously and keeps for a
# later -p: its .bss, trampoline pages near each traced object, the cached
# stacks of its exited threads.  Measured on Debian 12 with memcached and
# redis: 50-90 MiB of such mappings; 256 MiB is allowed.  Later attaches
# reuse all of it: they may add at most 16 MiB.
VM_FIRST_ALLOW_KB=$((256 * 1024))
VM_LATER_ALLOW_KB=$((16 * 1024))

# arenas PID: the C library's malloc arenas besides the main one: each is
# a heap of HEAP_MAX_SIZE (64 MiB), aligned to it, reserved when a thread
# allocates first and finds no free arena (glibc's arena_get2), and kept
# for good.  A thread needle starts in the process (its session thread)
# allocates, and the C library may give it a new arena if every existing
# one has a thread: then a later attach reserves 64 MiB more, which the
# program's next new thread would have reserved as well (the arena goes
# back to the free list when needle's thread ends).  Counted apart from
# what needle itself maps.
arenas() {
	python3 - "$1" <<'PY'
import sys
heap = 64 << 20
maps = []
for line in open("/proc/%s/maps" % sys.argv[1]):
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    maps.append((lo, hi, f[1], len(f) > 5))  # named: a file or [heap], [stack]...
n = 0
for i, (lo, hi, perm, named) in enumerate(maps):
    if named or lo % heap or not perm.startswith("rw"):
        continue
    end, j = hi, i + 1
    while j < len(maps) and not maps[j][3] and maps[j][0] == end and maps[j][1] <= lo + heap:
        end, j = maps[j][1], j + 1
    n += end == lo + heap
print(n)
PY
}

# state_save NAME PID: fds, VmSize, mapped files and arenas of PID into $T/NAME.*
state_save() {
	fd_state "$2" >"$T/$1.fd"
	vm_kb "$2" >"$T/$1.vm"
	mapped_files "$2" >"$T/$1.files"
	arenas "$2" >"$T/$1.arenas"
}
# state_check BEFORE AFTER_FIRST PID: after the attaches, PID's descriptors
# are the ones it had before (no memfd, socket or pipe of needle's left),
# and VmSize is within the tolerance above (AFTER_FIRST: the state saved
# after the first attach, or "" when none recorded).
state_check() {
	local before=$1 first=$2 pid=$3 now_fd
	now_fd=$(fd_state "$pid")
	if [ "$now_fd" = "$(cat "$T/$before.fd")" ]; then
		pass "$SRV: pid $pid: /proc/PID/fd after the detaches is the list before"
	else
		fail "$SRV: pid $pid: /proc/PID/fd after the detaches is the list before"
		diff <(cat "$T/$before.fd") <(echo "$now_fd") | sed -n '1,12s/^/      /p'
	fi
	local vm0 vm files grow allow
	vm0=$(cat "$T/$before.vm")
	vm=$(vm_kb "$pid")
	files=$(new_file_kb "$pid" "$T/$before.files")
	grow=$((vm - vm0 - files))
	allow=$VM_FIRST_ALLOW_KB
	echo "vmsize $SRV $pid before_kb $vm0 after_kb $vm agent_files_kb $files other_kb $grow" >>"$METRICS"
	check "$SRV: pid $pid: VmSize grew by at most the agent's libraries ($files KiB) + $((allow / 1024)) MiB (grew ${grow} KiB beyond them: $vm0 -> $vm KiB)" \
		[ "$grow" -le "$allow" ]
	if [ -n "$first" ] && [ -s "$T/$first.vm" ]; then
		local vm1 a1 a added
		vm1=$(cat "$T/$first.vm")
		a1=$(cat "$T/$first.arenas")
		a=$(arenas "$pid")
		added=$((a > a1 ? a - a1 : 0))
		echo "vmsize_later $SRV $pid first_kb $vm1 after_kb $vm arenas_added $added" >>"$METRICS"
		check "$SRV: pid $pid: later attaches added at most $((VM_LATER_ALLOW_KB / 1024)) MiB to VmSize besides the C library's arenas ($vm1 -> $vm KiB, $added arena(s) of 64 MiB added)" \
			[ $((vm - vm1 - added * 65536)) -le "$VM_LATER_ALLOW_KB" ]
	fi
}

# ---- EINTR: seen by the server, counted by the kernel ----
# strace cannot be used: a traced process is one that needle record -p
# refuses (TracerPid).  bpftrace's raw_syscalls tracepoints count, without
# ptrace, every system call of the processes that returned -EINTR (-4):
# an epoll_wait, sigtimedwait or accept broken by a signal or a ptrace
# stop.  One that needle made again before the thread ran on is not seen
# by the server: the thread stopped (traced: sched_switch with prev_state
# TASK_TRACED, 8) or took needle's stop signal after the EINTR, and the
# next call it enters with that number is the same one (the calls between
# are needle's, made on the borrowed thread).  Those are counted apart
# ("rewound"), as are the calls the kernel restarts itself (-ERESTART*,
# which user space never sees) and the server's own EINTRs (a signal of
# its own delivered after the call ended, before needle held the thread:
# postgres signals its processes, and would see those untraced too); any
# other EINTR is one the server saw because of needle.
# (That a rewound call really was made again, with no EINTR reaching the
# program, is checked inside programs that print what each wait returned:
# tests/attach/test_attach_eventloop.sh and test_attach_sleepers.sh.)
EINTR_PID=""
# The counter is ended from inside, by a kill(2) it watches for: a signal
# number 0 sent to a process group that cannot exist (beyond PID_MAX_LIMIT,
# 2^22), made unique to this script.  bpftrace's exit() prints its maps as
# it leaves.  A SIGINT through timeout(1) arrives twice (timeout sends it
# to the child, then to its group); in two CI runs out of some forty the
# counter so stopped left no maps at all (why was not kept: only its
# first line reached the log).  The totals are also printed every second
# ("tick" lines), so that a counter which fails to print at its end still
# leaves what it counted up to its last second.
eintr_magic() { echo $((4194305 + $$)); }
# eintr_start PID...: start counting for these processes (thread groups).
eintr_start() {
	local filt="" p stop magic
	for p in "$@"; do filt="${filt:+$filt || }pid == $p"; done
	stop=$(($(kill -l RTMAX) - 2))
	magic=$(eintr_magic)
	EINTR_OUT="$T/eintr.$#.$1.out"
	if ! command -v bpftrace >/dev/null 2>&1; then
		fail "$SRV: bpftrace is installed (counts EINTR without ptrace)"
		EINTR_PID=""
		return
	fi
	tracing_ready || fail "$SRV: the kernel's tracepoints are reachable (tracefs at /sys/kernel/tracing)"
	timeout -k 5 400 bpftrace -e "BEGIN { printf(\"counting\\n\"); }
		tracepoint:raw_syscalls:sys_exit /($filt) && args->ret == -4/ { @pend[tid] = args->id + 1; @held[tid] = 0; }
		tracepoint:sched:sched_switch /@pend[args->prev_pid] && args->prev_state == 8/ { @held[args->prev_pid] = 1; }
		tracepoint:signal:signal_deliver /@pend[tid] && args->sig == $stop/ { @held[tid] = 1; }
		tracepoint:signal:signal_deliver /@pend[tid] && args->sig != $stop && !@held[tid]/ {
			@own_total = count(); delete(@pend[tid]); delete(@held[tid]); }
		tracepoint:raw_syscalls:sys_enter /@pend[tid] && @pend[tid] == args->id + 1 && @held[tid]/ {
			@rewound_total = count(); delete(@pend[tid]); delete(@held[tid]); }
		tracepoint:raw_syscalls:sys_enter /@pend[tid] && (@pend[tid] == args->id + 1 || !@held[tid])/ {
			@eintr[comm, @pend[tid] - 1] = count(); @eintr_total = count(); delete(@pend[tid]); delete(@held[tid]); }
		tracepoint:raw_syscalls:sys_exit /($filt) && args->ret <= -512 && args->ret >= -516/ { @restart_total = count(); }
		tracepoint:raw_syscalls:sys_exit /($filt)/ { @syscalls = count(); }
		interval:s:1 { printf(\"tick\\n\"); print(@syscalls); print(@eintr_total); print(@restart_total);
			print(@rewound_total); print(@own_total); }
		tracepoint:syscalls:sys_enter_kill /(args->pid & 0xffffffff) == $(((-magic) & 0xffffffff)) && args->sig == 0/ { exit(); }" >"$EINTR_OUT" 2>&1 &
	EINTR_PID=$!
	srv_track "$EINTR_PID"
	# BEGIN runs once every probe is attached.
	wait_for grep -q '^counting' "$EINTR_OUT" ||
		fail "$SRV: the EINTR counter started ($(head -c 300 "$EINTR_OUT" | tr '\n' ' '))"
}
# eintr_total NAME: the counter's total NAME, from its final maps or,
# failing those, from its last tick.
eintr_total() {
	awk -v m="@$1:" '$1 == m { v = $2 } END { print v }' "$EINTR_OUT"
}
# eintr_stop: stop counting, check that the counter saw the server's
# system calls at all (else it proves nothing) and that none got EINTR.
eintr_stop() {
	[ -n "$EINTR_PID" ] || return 0
	local rc how=exit
	# One tick after the last attach, so the fallback covers it too.
	sleep 1.2
	kill -0 -- "-$(eintr_magic)" 2>/dev/null
	# Ended: gone, or a zombie not yet waited for (kill -0 succeeds on those).
	if ! wait_for eval '[ ! -e /proc/$EINTR_PID ] || grep -q ") Z" /proc/$EINTR_PID/stat'; then
		how=SIGINT
		kill -INT "$EINTR_PID" 2>/dev/null
	fi
	wait "$EINTR_PID" 2>/dev/null
	rc=$?
	EINTR_PID=""
	local n e r w o
	n=$(eintr_total syscalls) e=$(eintr_total eintr_total) r=$(eintr_total restart_total)
	w=$(eintr_total rewound_total) o=$(eintr_total own_total)
	echo "eintr $SRV syscalls ${n:-0} eintr ${e:-0} restart ${r:-0} rewound ${w:-0} own ${o:-0} rc $rc how $how" >>"$METRICS"
	if [ "${n:-0}" -gt 0 ]; then
		pass "$SRV: the EINTR counter saw the server's system calls (${n:-0})"
	else
		# All of it on the FAIL line: a CI log keeps only that line and the next.
		fail "$SRV: the EINTR counter saw the server's system calls (0; bpftrace ended by $how, status $rc, said: $(grep -v '^ERROR: Unknown error -1: couldn.t set RLIMIT_MEMLOCK' "$EINTR_OUT" | tail -c 400 | tr '\n' '|'))"
	fi
	check_eq "$SRV: system calls of the server that returned EINTR to it while attached to (restarted by the kernel: ${r:-0}, made again by needle: ${w:-0}, its own signal's: ${o:-0})" "${e:-0}" 0
	grep '^@eintr\[' "$EINTR_OUT" | sed 's/^/      /'
}

# ---- the load ----
# load_start PROTO PORT CONNS: the closed-loop client, in the background,
# for at most 300 s; load_phase marks the next phase; load_stop ends it
# and checks that every request was answered right.
load_start() {
	LOAD_OUT="$T/load.$1.$2.out"
	python3 "$LOAD_PY" run "$1" "$2" "$3" 300 "$LOAD_OUT" 2>"$T/load.err" &
	LOAD_PID=$!
	srv_track "$LOAD_PID"
	# Every connection up and answered before the state is saved.
	wait_for test -e "$LOAD_OUT.up"
	sleep 0.5
}
load_phase() { kill -USR1 "$LOAD_PID" 2>/dev/null; }
load_stop() {
	kill -TERM "$LOAD_PID" 2>/dev/null
	wait "$LOAD_PID" 2>/dev/null
	local ok failed
	ok=$(awk '$1 == "phase" {n += $4} END {print n + 0}' "$LOAD_OUT" 2>/dev/null)
	failed=$(awk '$1 == "phase" {n += $6} END {print n + 0}' "$LOAD_OUT" 2>/dev/null)
	[ -s "$LOAD_OUT" ] || failed=unknown
	sed "s/^/load $SRV /" "$LOAD_OUT" >>"$METRICS" 2>/dev/null
	check "$SRV: the load got answers ($ok requests)" [ "${ok:-0}" -gt 0 ]
	check_eq "$SRV: failed requests of the load (every reply checked)" "$failed" 0
	grep '^error' "$LOAD_OUT" | head -5 | sed 's/^/      /'
	[ -s "$T/load.err" ] && sed -n '1,5s/^/      load: /p' "$T/load.err"
}

# ---- needle record -p ----
now_ns() { date +%s%N; }
# stamp: each line of stdin, after the time it was read (ns).
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s%N)" "$l"; done; }

# record_bg NAME PID ARGS...: needle record -p PID -o $T/NAME.data ARGS in
# the background (at most 120 s), its stderr lines time-stamped into
# $T/NAME.err; REC_PID is its PID.
record_bg() {
	local name=$1 pid=$2
	shift 2
	now_ns >"$T/$name.t0"
	( timeout -k 5 120 "$NEEDLE" record -p "$pid" -o "$T/$name.data" "$@" 2>&1 >"$T/$name.out" | stamp >"$T/$name.err"
	  echo "${PIPESTATUS[0]}" >"$T/$name.rc" ) &
	REC_PID=$!
	srv_track "$REC_PID"
}
# record_pid NAME: the PID of that needle record (the child of timeout).
record_pid() { pgrep -n -f "record -p [0-9]* -o $T/$1.data" | head -1; }
# record_ready NAME: until needle record says it records (or has ended).
record_ready() {
	local i
	for i in $(seq 1 600); do
		grep -q 'needle: recording process' "$T/$1.err" 2>/dev/null && return 0
		[ -e "$T/$1.rc" ] && return 1
		sleep 0.02
	done
	return 1
}
# record_end NAME: stop it with SIGINT (as Ctrl-C would) and wait.
record_end() {
	local p
	p=$(record_pid "$1")
	[ -n "$p" ] && kill -INT "$p" 2>/dev/null
	wait_for test -e "$T/$1.rc"
}
# info_val NAME FIELD: a figure of `needle info`: hold_ms (the longest of
# borrowed_ms, stop_ms, outside_ms), first_ms, detach_ms, events.
info_val() {
	[ -e "$T/$1.info" ] || "$NEEDLE" info -i "$T/$1.data" >"$T/$1.info" 2>/dev/null
	awk -v f="$2" '
		f == "hold_ms" && /^held:/ { sub(/.*longest hold of a thread /, ""); print $1 }
		f == "borrowed_ms" && /^held:/ { sub(/.*borrowed to load libneedle /, ""); print $1 }
		f == "stop_ms" && /patch batch.*the longest/ { sub(/.*the longest /, ""); print $1 }
		f == "outside_ms" && /held from outside/ { sub(/.*held from outside /, ""); print $1 }
		f == "first_ms" && /^first event:/ { print $3 }
		f == "detach_ms" && /^detach:/ { print $2 }
		f == "events" && /^events:/ { print $2 }
		f == "end" && /^end:/ { sub(/^end: */, ""); print }' "$T/$1.info"
}
# record_checks NAME PID: the checks every attach makes once it ended:
# needle record exited 0, detached and left the process running, and
# wrote the metrics line.
record_checks() {
	local name=$1 pid=$2 rc msg
	rc=$(cat "$T/$name.rc" 2>/dev/null || echo none)
	msg=$(grep -m1 -v 'needle: recording process\|needle: recorded\|needle: detached\|needle: snapshot' "$T/$name.err" | cut -d' ' -f2-)
	# What needle said goes on the FAIL line itself: a CI log keeps that line.
	if [ "$rc" = 0 ]; then
		check_eq "$SRV: record -p $name: needle record exits 0" "$rc" 0
	else
		check_eq "$SRV: record -p $name: needle record exits 0 (it said: ${msg:-nothing})" "$rc" 0
	fi
	if [ "$rc" = 0 ]; then
		check "$SRV: record -p $name: needle record detached and the process ran on" \
			grep -q "needle: detached from process $pid; it runs on" "$T/$name.err"
	fi
	check "$SRV: record -p $name: pid $pid alive after" kill -0 "$pid"
	local t0 tr ready_ms
	t0=$(cat "$T/$name.t0")
	tr=$(awk '/needle: recording process/ {print $1; exit}' "$T/$name.err")
	ready_ms=$([ -n "$tr" ] && awk -v a="$t0" -v b="$tr" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')
	local hold first det ev bor stp out
	hold=$(info_val "$name" hold_ms | head -1) first=$(info_val "$name" first_ms)
	det=$(info_val "$name" detach_ms) ev=$(info_val "$name" events)
	bor=$(info_val "$name" borrowed_ms) stp=$(info_val "$name" stop_ms) out=$(info_val "$name" outside_ms)
	echo "attach $SRV $name pid $pid rc $rc ready_ms ${ready_ms:--} hold_ms ${hold:--} first_ms ${first:--}" \
		"detach_ms ${det:--} events ${ev:--} borrowed_ms ${bor:--} stop_ms ${stp:--} outside_ms ${out:--}" \
		"msg ${msg:--}" >>"$METRICS"
}
# attach NAME PID ARGS...: one timed attach (--duration=$ATTACH_S) and its checks.
attach() {
	local name=$1 pid=$2
	shift 2
	record_bg "$name" "$pid" --duration="$ATTACH_S" "$@"
	wait "$REC_PID" 2>/dev/null
	record_checks "$name" "$pid"
}
ok_rc() { [ "$(cat "$T/$1.rc" 2>/dev/null)" = 0 ]; }

# attach_suite PID FUNC AUTO_FUNC CTL_A CTL_B: the attach scenarios, with
# the load running.  FUNC is a function the load calls on PID;
# --auto-args runs with -F AUTO_FUNC (a C library function the server
# calls per request: the packaged servers have no DWARF of their own, the
# C library's comes with libc6-dbg); --ctl starts with -F CTL_A and is
# switched live to CTL_B, then to CTL_A and CTL_B.
attach_suite() {
	local pid=$1 func=$2 afunc=$3 ca=$4 cb=$5 i
	for i in 1 2 3 4 5; do
		attach "default$i" "$pid"
		ok_rc "default$i" && check "$SRV: record -p default$i: events recorded under load ($(info_val "default$i" events))" \
			[ "$(info_val "default$i" events)" -gt 0 ]
		# The state once the agent is loaded: after the first attach that recorded.
		[ -e "$T/first.vm" ] || ! ok_rc "default$i" || state_save first "$pid"
	done
	attach filtered "$pid" -F "$func"
	ok_rc filtered && check "$SRV: record -p -F $func: $func recorded ($(calls "$T/filtered.data" "$func") calls)" \
		[ "$(calls "$T/filtered.data" "$func")" -gt 0 ]
	attach snapshot "$pid" --snapshot=8 --trigger "$func"
	if ok_rc snapshot; then
		check "$SRV: record -p --snapshot --trigger $func: the trigger took a snapshot" test -s "$T/snapshot.data.1"
		check "$SRV: record -p --snapshot --trigger $func: needle info gives the trigger as the reason" \
			grep -q 'a trigger: the function was entered' <("$NEEDLE" info -i "$T/snapshot.data.1" 2>&1)
	fi
	attach autoargs "$pid" --auto-args -F "$afunc"
	ok_rc autoargs && check "$SRV: record -p --auto-args -F $afunc: $afunc recorded ($(calls "$T/autoargs.data" "$afunc") calls)" \
		[ "$(calls "$T/autoargs.data" "$afunc")" -gt 0 ]
	ok_rc autoargs && check "$SRV: record -p --auto-args -F $afunc: named arguments in the replay" \
		grep -qE "$afunc\([a-z_]+=" <("$NEEDLE" replay --arg-names -i "$T/autoargs.data" 2>/dev/null | head -200)
	# --ctl: filters changed while it records.
	record_bg ctl "$pid" --ctl -F "$ca"
	if record_ready ctl; then
		local r1 r2 r3
		sleep 0.5
		"$NEEDLE" ctl "$pid" filter "$cb" >"$T/ctl1.out" 2>&1
		r1=$?
		sleep 0.7
		"$NEEDLE" ctl "$pid" filter "$ca" "$cb" >"$T/ctl2.out" 2>&1
		r2=$?
		sleep 0.5
		"$NEEDLE" ctl "$pid" status >"$T/ctl3.out" 2>&1
		r3=$?
		check_eq "$SRV: needle ctl PID filter $cb exits 0" "$r1" 0
		check_eq "$SRV: needle ctl PID filter $ca $cb exits 0" "$r2" 0
		check_eq "$SRV: needle ctl PID status exits 0" "$r3" 0
	fi
	record_end ctl
	record_checks ctl "$pid"
	if ok_rc ctl; then
		check "$SRV: record -p --ctl: $ca recorded (the first filter)" [ "$(calls "$T/ctl.data" "$ca")" != missing ]
		check "$SRV: record -p --ctl: $cb recorded (the filter changed live)" [ "$(calls "$T/ctl.data" "$cb")" != missing ]
	fi
}

# count_calls PID PROTO PORT FUNC N [RECORD-ARGS...]: exactly N requests
# of the protocol's counted kind (load.py count), each answer checked, on
# a connection opened before needle record -p started and closed after it
# detached (default RECORD-ARGS: -F FUNC); FUNC must have been called
# exactly N times.
count_calls() {
	local pid=$1 proto=$2 port=$3 func=$4 n=$5 name
	shift 5
	[ $# -gt 0 ] || set -- -F "$func"
	name=count_$(echo "$func" | tr -c 'A-Za-z0-9_\n' _)
	# A count of the same function before this one left its files: its
	# .err would say "recording" and its .rc "ended" at once.
	rm -f "$T/$name".*
	python3 "$LOAD_PY" count "$proto" "$port" "$n" "$T/$name.go" >"$T/$name.client" 2>&1 &
	local cpid=$!
	srv_track "$cpid"
	wait_for test -e "$T/$name.go.ready"
	# PID "client": the process serving the client's connection (a
	# PostgreSQL backend), which the client names.  It ends with the
	# connection, which is why the client keeps it open until the
	# detach (GO.end): ended before, the backend made needle record
	# report its exit instead of a detach.
	[ "$pid" = client ] && pid=$(head -1 "$T/$name.go.ready")
	record_bg "$name" "$pid" "$@"
	record_ready "$name" && touch "$T/$name.go"
	touch "$T/$name.go" # the client counts either way
	wait_for grep -q '^ok ' "$T/$name.client"
	sleep 0.2
	check_eq "$SRV: $n counted requests while attached, all answered right" \
		"$(grep -m1 '^ok ' "$T/$name.client")" "ok $n failed 0"
	record_end "$name"
	record_checks "$name" "$pid"
	touch "$T/$name.go.end"
	wait "$cpid"
	ok_rc "$name" && check_eq "$SRV: record -p $*: exactly one call of $func per request ($n requests)" \
		"$(calls "$T/$name.data" "$func")" "$n"
}

# output_check FILE SAVED: the server's output (stderr, log) is what it
# was before the first attach: nothing of needle's was printed there.
output_save() { cp "$1" "$T/$2" 2>/dev/null || : >"$T/$2"; }
output_check() {
	if cmp -s "$1" "$T/$2"; then
		pass "$SRV: $(basename "$1") of the server unchanged by the attaches"
	else
		fail "$SRV: $(basename "$1") of the server unchanged by the attaches"
		diff "$T/$2" "$1" | sed -n '2,8s/^/      /p'
	fi
}
