#!/usr/bin/env bash
# test_threads - enabling exit hooks with 10,000 and 100,000 idle threads,
# 1,000,000 thread lifetimes with flat memory, recursion deeper than the
# shadow stack, and a detach while calls are hijacked
# (tests/agent/threads_scale.c).
# 100,000 threads need more pids and memory maps than a default kernel
# allows; as root the test raises kernel.pid_max and vm.max_map_count.
. "$(dirname "$0")/../lib.sh"

if [ "$(cat /proc/sys/kernel/pid_max)" -lt 200000 ]; then
	echo 262144 >/proc/sys/kernel/pid_max 2>/dev/null
fi
if [ "$(cat /proc/sys/vm/max_map_count)" -lt 300000 ]; then
	echo 524288 >/proc/sys/vm/max_map_count 2>/dev/null
fi
ulimit -u unlimited 2>/dev/null

"$PROGS/threads_scale" idle 10000
if [ "$(cat /proc/sys/kernel/pid_max)" -ge 200000 ] && [ "$(cat /proc/sys/vm/max_map_count)" -ge 300000 ]; then
	"$PROGS/threads_scale" idle 100000
else
	fail "100,000 threads: this machine allows too few (kernel.pid_max, vm.max_map_count; run as root)"
fi
"$PROGS/threads_scale" churn 1000000
NEEDLE_SHADOW_BYTES=8192 "$PROGS/threads_scale" deep 5000
"$PROGS/threads_scale" detach
