#!/usr/bin/env bash
# test_kernel - needle record --kernel: the kernel's side of each thread
# on the same timeline as its calls.  kernel_prog's system calls, its
# sleeps and its page faults are each shown inside the call that made
# them, thread by thread, in exact numbers: 100 getpid in k_syscalls of
# the main thread and 50 in the second's, 10 ms off the CPU in k_sleep
# (sleeping: S, with root), a mutex wait in k_lock woken by the thread
# that held it, a 5 ms pipe read in k_pipe, 1,000 minor faults at the
# mapping's pages in k_touch, openat's ENOENT in k_fail; two busy
# threads on one CPU preempted by each other; no kernel event outside
# the call it is in; the main thread's rename in k_rename (one
# linux:task-name line there, -f task's names before and after it, the
# Chrome trace's thread name), the exec's name no line; -E linux:schedule's
# calls, and a view's -E, --no-sched and --no-sched-preempt.  As a user without
# privileges (setpriv): system calls are left out and said so in one
# line, switches and faults still recorded.  --no-kernel hides them;
# info counts them; a damaged KERNEL section is named, a cut one read as
# the end of an unfinished file; bad input refused.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/kernel_prog"
tracing_ready || true

"$P" >"$T/plain"

"$NEEDLE" record --kernel=all -o "$T/k.data" -- "$P" >"$T/out" 2>"$T/err"
st=$?
check_eq "root: needle record exits 0 ($(tail -1 "$T/err"))" "$st" 0
check "root: output identical to a run left alone" cmp -s "$T/plain" "$T/out"
check "root: nothing left out (stderr: $(grep -c 'left out' "$T/err") lines)" test "$(grep -c 'left out' "$T/err")" = 0

# inside FILE TID FUNC PATTERN: lines matching PATTERN between FUNC's
# opening and its end, in thread TID's graph; and all such lines in it.
inside() {
	"$NEEDLE" replay --tid "$2" -i "$1" | awk -v f="$3" -v pat="$4" '
		index($0, "| ") && $0 ~ ("\\| +" f "\\(\\) \\{") { in_f = 1 }
		$0 ~ pat { all++; if (in_f) n++ }
		$0 ~ ("} /\\* " f " \\*/") { in_f = 0 }
		END { printf "%d %d\n", n, all }'
}
tids=($(trace_tids "$T/k.data"))
check_eq "three threads" "${#tids[@]}" 3
main=${tids[0]}
second=$(for t in "${tids[@]:1}"; do "$NEEDLE" replay --tid "$t" -i "$T/k.data" | grep -q 'k_syscalls() {' && echo "$t"; done)
check_eq "main thread: 100 getpid calls inside k_syscalls" \
	"$(inside "$T/k.data" "$main" k_syscalls 'getpid\(\) = [0-9]+ /\* syscall, ' | cut -d' ' -f1)" 100
check_eq "second thread: its 50 getpid calls, all inside k_syscalls" \
	"$(inside "$T/k.data" "$second" k_syscalls 'getpid\(\) = [0-9]+ /\* syscall, ')" "50 50"
# The value in ms of the first line matching PATTERN inside FUNC: "3.1 us"
# counts as 0.0031.
ms_in() {
	"$NEEDLE" replay --tid "$2" -i "$1" | awk -v f="$3" -v pat="$4" '
		$0 ~ ("\\| +" f "\\(\\) \\{") { in_f = 1 }
		in_f && $0 ~ pat && !done { match($0, /[0-9.]+ (ns|us|ms|s) /); v = substr($0, RSTART, RLENGTH);
			split(v, p, " "); m = p[2] == "ms" ? p[1] : p[2] == "us" ? p[1] / 1000 : p[2] == "s" ? p[1] * 1000 : p[1] / 1e6;
			print m; done = 1 }
		$0 ~ ("} /\\* " f " \\*/") { in_f = 0 }'
}
check_eq "k_sleep: one clock_nanosleep inside it" \
	"$(inside "$T/k.data" "$main" k_sleep 'clock_nanosleep\(\) = 0 /\* syscall, ')" "1 1"
v=$(ms_in "$T/k.data" "$main" k_sleep 'off CPU .* \(sleeping\)')
# At least the 10 ms asked (less 1 ms: the switch out follows the system
# call's entry), and no more than the call itself lasted (its text has a
# decimal of ms: 0.1 ms of rounding; a loaded
# machine may wake it late: an upper bound in time is the benchmarks').
call=$("$NEEDLE" replay --tid "$main" -i "$T/k.data" | awk '/} \/\* k_sleep \*\// {
	m = $2 == "ms" ? $1 : $2 == "us" ? $1 / 1000 : $2 == "s" ? $1 * 1000 : $1; print m; exit }')
check "k_sleep: off the CPU 10 ms or more, sleeping (S), within the call ($v ms of $call ms)" \
	awk -v v="$v" -v c="$call" 'BEGIN { exit !(v >= 9 && c != "" && v <= c + 0.1) }'
holder=$(for t in "${tids[@]}"; do "$NEEDLE" replay --tid "$t" -i "$T/k.data" | grep -q 'k_hold() {' && echo "$t"; done)
check "k_hold's thread found ($holder)" test -n "$holder"
check_eq "k_lock: off the CPU, woken by k_hold's thread $holder, inside it" \
	"$(inside "$T/k.data" "$main" k_lock "off CPU [0-9.]+ ms \\(sleeping, woken by $holder\\)" | cut -d' ' -f1)" 1
v=$(ms_in "$T/k.data" "$main" k_pipe 'read\(\) = 1 /\* syscall, ')
call=$("$NEEDLE" replay --tid "$main" -i "$T/k.data" | awk '/} \/\* k_pipe \*\// {
	m = $2 == "ms" ? $1 : $2 == "us" ? $1 / 1000 : $2 == "s" ? $1 * 1000 : $1; print m; exit }')
check "k_pipe: its read of 5 ms or more inside it, within the call ($v ms of $call ms)" \
	awk -v v="$v" -v c="$call" 'BEGIN { exit !(v >= 4.5 && c != "" && v <= c + 0.1) }'
check_eq "k_pipe: woken by the thread that filled the pipe" \
	"$(inside "$T/k.data" "$main" k_pipe "off CPU [0-9.]+ ms \\(sleeping, woken by $holder\\)" | cut -d' ' -f1)" 1
check_eq "k_touch: 1,000 minor faults at the mapping's pages, all inside it" \
	"$(inside "$T/k.data" "$main" k_touch 'page fault \(minor\) at 0x200[0-3][0-9a-f][0-9a-f]000 ')" "1000 1000"
check_eq "k_touch: its mmap and munmap inside it" \
	"$(inside "$T/k.data" "$main" k_touch '(mmap\(\) = 0x200000000|munmap\(\) = 0) /\*' | cut -d' ' -f1)" 2
check_eq "k_fail: openat's ENOENT inside it" \
	"$(inside "$T/k.data" "$main" k_fail 'openat\(\) = -1 ENOENT /\* syscall')" "1 1"
# Every kernel line sits one level below the call it is in: the depth of
# the line above an event inside k_syscalls is k_syscalls' own + 1.
"$NEEDLE" replay --tid "$main" -i "$T/k.data" >"$T/main.replay"
check_eq "getpid lines indented one level below k_syscalls" \
	"$(awk '{ i = index($0, "| "); s = substr($0, i + 2); n = match(s, /[^ ]/) - 1 }
		/k_syscalls\(\) \{/ { d = n; in_f = 1 } /} \/\* k_syscalls \*\// { in_f = 0 }
		in_f && /getpid\(\)/ && n != d + 2 { bad++ } END { print bad + 0 }' "$T/main.replay")" 0
check_eq "k_rename: the main thread's one rename, inside it" \
	"$(inside "$T/k.data" "$main" k_rename '/\* linux:task-name \(comm="k-renamed"\) \*/')" "1 1"
check_eq "k_name_self: the second thread's one rename, inside it" \
	"$(inside "$T/k.data" "$second" k_name_self '/\* linux:task-name \(comm="k-second"\) \*/')" "1 1"
check_eq "no other rename in any thread (the exec's name is no line)" \
	"$("$NEEDLE" replay -i "$T/k.data" | grep -c 'linux:task-name')" 2
# uftrace's --no-event hides the renames' lines, and yields to an -E
# naming them in the same command, in either order; --no-pager is taken.
check_eq "--no-event: no rename line" "$("$NEEDLE" replay --no-pager --no-event -i "$T/k.data" | grep -c 'linux:task-name')" 0
# Renames alone: k_rename's only event is its rename (prctl is not a
# site here), and hidden it still makes k_rename a call that opens and
# closes, as uftrace's hidden event does.
"$NEEDLE" record --kernel=comm -o "$T/comm.data" -- "$P" >/dev/null 2>"$T/comm.err" || cat "$T/comm.err"
check "--no-event: k_rename, whose only event is the rename, opens and closes with nothing between" \
	test "$("$NEEDLE" replay --no-event -i "$T/comm.data" | grep -A1 -E '\| +k_rename\(\) \{$' | grep -cE '\} /\* k_rename \*/$')" = 1
check "without --no-event: the rename's line between them" \
	test "$("$NEEDLE" replay -i "$T/comm.data" | grep -A1 -E '\| +k_rename\(\) \{$' | grep -c 'linux:task-name')" = 1
check_eq "--no-event -E linux:task-name: both renames" \
	"$("$NEEDLE" replay --no-event -E linux:task-name -i "$T/k.data" | grep -c 'linux:task-name')" 2
check_eq "-E linux:task-name --no-event: both renames" \
	"$("$NEEDLE" replay -E linux:task-name --no-event -i "$T/k.data" | grep -c 'linux:task-name')" 2
check_eq "--no-event: -f task still follows the rename" \
	"$("$NEEDLE" replay --no-event --tid "$main" -f task -i "$T/k.data" | awk -F' [|] ' 'NR > 1 { sub(/^ +/, "", $1); if ($1 != last) { printf "%s%s", sep, $1; sep = "," } last = $1 }')" \
	"kernel_prog,k-renamed"
"$NEEDLE" replay --tid "$main" -f task -i "$T/k.data" >"$T/task.replay"
check_eq "-f task: the program's name up to k_rename's opening, then the new one" \
	"$(awk -F' [|] ' 'NR > 1 { sub(/^ +/, "", $1); if ($1 != last) { printf "%s%s", sep, $1; sep = "," } last = $1 }' "$T/task.replay")" \
	"kernel_prog,k-renamed"
check "-f task: k_rename opens under the old name" grep -qE '^ +kernel_prog [|] +k_rename\(\) \{' "$T/task.replay"
check_eq "-f task: the second thread, named by its creator, then by itself from inside k_name_self" \
	"$("$NEEDLE" replay --tid "$second" -f task -i "$T/k.data" | awk -F' [|] ' 'NR > 1 { sub(/^ +/, "", $1); if ($1 != last) { printf "%s%s", sep, $1; sep = "," } last = $1 }')" \
	"kernel_prog,k-second"
"$NEEDLE" export --format=chrome -i "$T/k.data" -o "$T/k-names.json" 2>/dev/null
check_eq "Chrome: the rename is the main thread's and the process's name from k_rename on" \
	"$(python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
at = next(i for i, e in enumerate(ev) if e.get("ph") == "B" and e.get("name") == "k_rename")
print(sorted(e["name"] for e in ev[at:] if e.get("ph") == "M" and e["args"]["name"] == "k-renamed" and e.get("tid", int(sys.argv[2])) == int(sys.argv[2])))' "$T/k-names.json" "$main")" "['process_name', 'thread_name']"
info=$("$NEEDLE" info -i "$T/k.data")
check "info counts the kernel's events" grep -qE "^kernel events: [0-9]+ \([0-9]+ system calls, [0-9]+ off-CPU intervals, [0-9]+ page faults, 3 names\), 0 records the kernel dropped" <<<"$info"
sys=$(sed -n 's/^kernel events: [0-9]* (\([0-9]*\) system calls.*/\1/p' <<<"$info")
check "info: at least the 150 getpid and the program's other calls ($sys)" test "${sys:-0}" -ge 160

# --no-kernel: the graph without them, the rest unchanged.
"$NEEDLE" replay --no-kernel -i "$T/k.data" >"$T/nok"
"$NEEDLE" replay -i "$T/k.data" | grep -vE '\| +([a-z_0-9]+\(\) = .* /\* syscall, |/\* off CPU |/\* page fault |/\* linux:task-name )' >"$T/filtered"
check "--no-kernel: no kernel line" test "$(grep -cE 'syscall, |off CPU|page fault|linux:task-name' "$T/nok")" = 0
check "--no-kernel: the graph otherwise the same" cmp -s "$T/nok" "$T/filtered"
"$NEEDLE" export --format=perfetto -i "$T/k.data" -o "$T/k.pftrace" 2>/dev/null
check_eq "Perfetto: exported" "$?" 0
protoc --decode_raw <"$T/k.pftrace" >"$T/k.pfdecoded"
check_eq "Perfetto: a system calls track for each thread" "$(grep -c '2: "system calls"' "$T/k.pfdecoded")" 3
check "Perfetto: thread state and page faults tracks" \
	test "$(grep -c '2: "thread state"' "$T/k.pfdecoded")" -ge 1 -a "$(grep -c '2: "page faults"' "$T/k.pfdecoded")" -ge 1
check_eq "Perfetto: a getpid slice for each getpid line of replay" "$(grep -c '23: "getpid"' "$T/k.pfdecoded")" \
	"$("$NEEDLE" replay -i "$T/k.data" | grep -c 'getpid() = ')"
check "Perfetto: a Sleeping slice (k_sleep)" grep -q '23: "Sleeping"' "$T/k.pfdecoded"
check "Perfetto: Running slices between the intervals off the CPU" grep -q '23: "Running"' "$T/k.pfdecoded"
"$NEEDLE" export --format=chrome -i "$T/k.data" -o "$T/k.json" 2>/dev/null
check_eq "Chrome: exported" "$?" 0
check_eq "Chrome: 150 getpid slices inside a k_syscalls slice of their thread" "$(python3 - "$T/k.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
spans, open_at = [], {}
for e in ev:
    if e.get('name') == 'k_syscalls' and e['ph'] == 'B':
        open_at[e['tid']] = e['ts']
    elif e.get('name') == 'k_syscalls' and e['ph'] == 'E':
        spans.append((e['tid'], open_at.pop(e['tid']), e['ts']))
calls = [e for e in ev if e.get('name') == 'getpid' and e.get('cat') == 'syscall' and e['ph'] == 'X']
inside = [c for c in calls if any(t == c['tid'] and a <= c['ts'] and c['ts'] + c['dur'] <= b for t, a, b in spans)]
print(len(inside))
PY
)" 150
# Clock alignment: no kernel event of a thread outside the call it is in.
# Each system call and off-CPU slice that begins inside a call ends
# before the call does (a fault is an instant), thread by thread.
check_eq "alignment: every kernel slice within the innermost call around it" "$(python3 - "$T/k.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
stacks, bad, seen = {}, 0, 0
for e in ev:
    tid, ph = e.get('tid'), e.get('ph')
    st = stacks.setdefault(tid, [])
    if ph == 'B':
        st.append([e['ts'], []])
    elif ph == 'E' and st:
        begin, inner = st.pop()
        bad += sum(1 for end in inner if end > e['ts'])
    elif ph == 'X' and e.get('cat') in ('syscall', 'sched') and st:
        seen += 1
        if e['ts'] < st[-1][0]:
            bad += 1
        st[-1][1].append(e['ts'] + e['dur'])
print(bad, 'of', 'many' if seen >= 150 else seen)
PY
)" "0 of many"

# ---- the flight recorder: the kernel's events of the window only ----
"$NEEDLE" record --snapshot=8 --kernel=all --trigger 'k_pipe>2ms' -o "$T/s.data" -- "$P" >"$T/sout" 2>"$T/serr"
check_eq "snapshot: needle record exits 0" "$?" 0
check "snapshot: output identical" cmp -s "$T/plain" "$T/sout"
check "snapshot: one snapshot, of the trigger" test -f "$T/s.data.1" -a ! -f "$T/s.data.2"
main_s=$(trace_tids "$T/s.data.1" | head -1)
check_eq "snapshot: k_pipe's read of 4 ms or more (5 asked) inside it" \
	"$(inside "$T/s.data.1" "$main_s" k_pipe 'read\(\) = 1 /\* syscall, ([4-9]|[1-9][0-9]+)\.[0-9]+ ms' 2>/dev/null | cut -d' ' -f1)" 1
check_eq "snapshot: no kernel event older than its thread's oldest chunk" "$(python3 - "$T/s.data.1" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off, base, kev = 64, {}, []
while off + 16 <= len(d):
    t, crc, n = struct.unpack_from('<IIQ', d, off)
    if t == 6:
        tid, = struct.unpack_from('<I', d, off + 16)
        b, = struct.unpack_from('<Q', d, off + 16 + 16)
        base[tid] = min(base.get(tid, b), b)
    elif t == 14:
        ver, tid, seq, cnt, lost = struct.unpack_from('<IIQII', d, off + 16)
        for e in range(cnt):
            kev.append((tid, struct.unpack_from('<Q', d, off + 16 + 24 + 40 * e)[0]))
    off += 16 + n
old = sum(1 for tid, tm in kev if tid in base and tm < base[tid])
print(old, 'of', 'some' if len(kev) >= 20 else len(kev))
PY
)" "0 of some"

# ---- two busy threads on one CPU: preempted by each other ----
taskset -c 0 "$NEEDLE" record --kernel=switch -o "$T/spin.data" -- "$P" spin >"$T/sout" 2>"$T/serr"
st=$?
check_eq "spin: recorded on one CPU ($(cat "$T/sout"))" "$st" 0
for t in $(trace_tids "$T/spin.data"); do
	check "spin: thread $t preempted inside k_busy" \
		test "$(inside "$T/spin.data" "$t" k_busy 'off CPU [0-9.]+ .s \(preempted\)' | cut -d' ' -f1)" -ge 1
done

# report: the kernel's share of each function.
"$NEEDLE" report --csv -i "$T/k.data" >"$T/k.csv"
check_eq "report: the kernel's columns" "$(head -1 "$T/k.csv")" \
	"function,calls,total_ns,self_ns,avg_ns,min_ns,max_ns,oncpu_ns,offcpu_ns,syscall_ns"
check "report: k_sleep off the CPU at least 9 ms of its time, on CPU the rest" awk -F, \
	'$1 == "k_sleep" { ok = $9 >= 9000000 && $8 + $9 == $3 } END { exit !ok }' "$T/k.csv"
check "report: k_syscalls' time in system calls, less than its total" awk -F, \
	'$1 == "k_syscalls" { ok = $10 > 0 && $10 < $3 } END { exit !ok }' "$T/k.csv"
check "report: main includes its children's kernel time" awk -F, \
	'$1 == "main" { m = $10 } $1 == "k_sleep" { s = $10 } END { exit !(m >= s && s > 0) }' "$T/k.csv"
"$NEEDLE" report --kernel --csv -i "$T/k.data" >"$T/ks.csv"
check_eq "report --kernel: the 150 getpid calls of k_syscalls, no error" \
	"$(awk -F, '$1 == "k_syscalls" && $2 == "getpid" { print $3, $4 }' "$T/ks.csv")" "150 0"
check_eq "report --kernel: k_fail's openat, one error" \
	"$(awk -F, '$1 == "k_fail" && $2 == "openat" { print $3, $4 }' "$T/ks.csv")" "1 1"
# -r: only the system calls made in the range; one from the start to a
# microsecond before the first function event has none of k_syscalls'.
check_eq "report --kernel -r: a range before any call's system calls has none of k_syscalls' getpid" \
	"$("$NEEDLE" report --kernel --csv -r '~0.000000001' -i "$T/k.data" | awk -F, '$1 == "k_syscalls" { n++ } END { print n + 0 }')" 0
"$NEEDLE" report -s offcpu -i "$T/k.data" >"$T/koff"
check_eq "report -s offcpu: main first (all its children's time off the CPU)" \
	"$(awk 'NR > 2 { print $NF }' "$T/koff" | head -1)" "main"

# ---- a program exec'ed: its kernel events are its own thread's ----
"$NEEDLE" record --sites=all --kernel=syscall -o "$T/e.data" -- sh -c "exec $P" >"$T/eout" 2>"$T/eerr"
check_eq "exec: needle record exits 0" "$?" 0
check "exec: output identical" cmp -s "$T/plain" "$T/eout"
etid=$(trace_tids "$T/e.data" | head -1)
"$NEEDLE" info -i "$T/e.data" | awk -v t="$etid" '$1 == t { print $2 }' >"$T/eserials"
check_eq "exec: the shell and the program it exec'ed, two threads of one tid" "$(wc -l <"$T/eserials")" 2
"$NEEDLE" replay -i "$T/e.data" --tid "$etid" | awk '/main\(\) \{/ { prog = 1 } /getpid\(\) = / { n[prog]++ }
	END { print n[0] + 0, n[1] + 0 }' >"$T/ecount"
check_eq "exec: the program's getpid calls after its main begins, none in the shell's part" \
	"$(awk '{ print $1, ($2 >= 100) }' "$T/ecount")" "0 1"
check_eq "exec: 100 getpid inside k_syscalls of the exec'ed program" \
	"$(inside "$T/e.data" "$etid" k_syscalls 'getpid\(\) = [0-9]+ /\* syscall, ' | cut -d' ' -f1)" 100
"$NEEDLE" record --sites=all --no-follow-exec --kernel=syscall -o "$T/e2.data" -- sh -c "exec $P" >/dev/null 2>&1
n=$("$NEEDLE" replay -i "$T/e2.data" | grep -c 'getpid() = ')
check "exec --no-follow-exec: not the 150 getpid of the unrecorded program (the shell's own: $n)" test "$n" -lt 10

# ---- a running process (-p) ----
"$P" loop >"$T/lout" &
lpid=$!
sleep 0.3
"$NEEDLE" record -p "$lpid" --kernel=all --duration=1 -o "$T/p.data" >/dev/null 2>"$T/perr"
st=$?
check_eq "-p: needle record exits 0 ($(tail -1 "$T/perr"))" "$st" 0
kill -TERM "$lpid"
wait "$lpid"
st=$?
check_eq "-p: the process ran on and ended as it would ($(cat "$T/lout"))" "$st" 0
check_eq "-p: the program's two threads, not libneedle's (needle-attach)" "$(trace_tids "$T/p.data" | wc -l)" 2
# Each k_syscalls call made once the kernel's events were on holds its
# 10 getpid calls, no more, no less.
for tid in $(trace_tids "$T/p.data"); do
	check_eq "-p: thread $tid: every k_syscalls call after the first with kernel events holds 10 getpid lines" \
		"$("$NEEDLE" replay --tid "$tid" -i "$T/p.data" | awk '
			/k_syscalls\(\) \{/ { in_f = 1; n = 0 }
			in_f && /getpid\(\) = [0-9]+ \/\* syscall/ { n++ }
			/} \/\* k_syscalls \*\// { in_f = 0; if (on && n != 10) bad++; if (on) calls++; if (n) on = 1 }
			END { print (calls >= 20 ? "many" : "few " calls), bad + 0 }')" "many 0"
done

# ---- needle ctl PID kernel off / on ----
"$NEEDLE" record --ctl --kernel=syscall -o "$T/c.data" -- "$P" loop >"$T/cout" 2>"$T/cerr" &
rec=$!
cpid=$(ctl_pid "$P loop")
sleep 0.3
check_eq "ctl: kernel off answered" "$("$NEEDLE" ctl "$cpid" kernel off)" "kernel events paused"
sleep 0.4
check_eq "ctl: kernel on answered" "$("$NEEDLE" ctl "$cpid" kernel on)" "kernel events recorded"
sleep 0.3
kill -TERM "$cpid"
wait "$rec"
check_eq "ctl: needle record exits 0" "$?" 0
# A call with its 10 getpid lines is "k_syscalls() {", one with none (in
# the pause) the leaf "k_syscalls();": runs of each, in this order.  A
# call with some (the switch came in its middle, or the kernel dropped
# records of a loaded machine's rings) belongs to neither run and is left
# out, the runs on either side of it merged.
for tid in $(trace_tids "$T/c.data"); do
	check_eq "ctl: thread $tid: calls with kernel events, then a pause without, then with again" \
		"$("$NEEDLE" replay --tid "$tid" -i "$T/c.data" | awk '
			/k_syscalls\(\) \{/ { in_f = 1; n = 0 } in_f && /getpid\(\) =/ { n++ }
			/} \/\* k_syscalls/ { in_f = 0; s = n == 10 ? "with" : "odd" }
			/k_syscalls\(\);/ { s = "without" }
			s && s != last { runs = runs (runs ? " " : "") s; last = s } { s = "" }
			END { print runs }' | tr ' ' '\n' | grep -v '^odd$' | uniq | tr '\n' ' ' | sed 's/ $//')" "with without with"
done
"$NEEDLE" record --ctl -o "$T/c2.data" -- "$P" loop >/dev/null 2>&1 &
rec=$!
cpid=$(ctl_pid "$P loop")
"$NEEDLE" ctl "$cpid" kernel off >"$T/c2.out" 2>&1
check_eq "ctl: kernel off of a recording without --kernel: refused" "$?" 1
check "ctl: kernel off of a recording without --kernel: said so" grep -q "not recording the kernel" "$T/c2.out"
kill -TERM "$cpid"
wait "$rec"

# ---- without privileges ----
N=$(mktemp -d)
chmod 0777 "$N"
trap 'rm -rf "$T" "$N"' EXIT
if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$N" \
		"$NEEDLE" record --kernel=all -o "$N/k.data" -- "$P" >"$T/nout" 2>"$T/nerr"
	check_eq "non-root: needle record exits 0" "$?" 0
	check "non-root: output identical" cmp -s "$T/plain" "$T/nout"
	check "non-root: system calls left out, said in one line" \
		test "$(grep -c 'left out: .*syscall (' "$T/nerr")" = 1
	nmain=$(trace_tids "$N/k.data" | head -1)
	check_eq "non-root: no system call recorded" \
		"$("$NEEDLE" replay -i "$N/k.data" | grep -c '/\* syscall, ')" 0
	check_eq "non-root: the 1,000 faults of k_touch still inside it" \
		"$(inside "$N/k.data" "$nmain" k_touch 'page fault \(minor\) at 0x200[0-3][0-9a-f][0-9a-f]000 ')" "1000 1000"
	check_eq "non-root: k_sleep off the CPU, blocked (S or D not known)" \
		"$(inside "$N/k.data" "$nmain" k_sleep 'off CPU [0-9.]+ ms \(blocked\)' | cut -d' ' -f1)" 1
else
	fail "setpriv cannot run a command as nobody here"
fi

# ---- damaged and cut files ----
# offset_of FILE TYPE: the payload offset of the first section of TYPE.
offset_of() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off = 64
while off + 16 <= len(d):
    t, crc, n = struct.unpack_from('<IIQ', d, off)
    if t == int(sys.argv[2]):
        print(off + 16, n)
        break
    off += 16 + n
PY
}
read -r koff klen <<<"$(offset_of "$T/k.data" 14)"
check "a KERNEL section in the file" test -n "$koff"
cp "$T/k.data" "$T/bad.data"
printf '\xff' | dd of="$T/bad.data" bs=1 seek=$((koff + 40)) conv=notrunc status=none
"$NEEDLE" replay -i "$T/bad.data" >/dev/null 2>"$T/bad.err"
check_eq "a damaged KERNEL section: replay refuses" "$?" 1
check "a damaged KERNEL section: said in one line" \
	test "$(wc -l <"$T/bad.err")" = 1 -a "$(grep -c 'fails its CRC check' "$T/bad.err")" = 1
head -c $((koff + klen / 2)) "$T/k.data" >"$T/cut.data"
"$NEEDLE" replay -i "$T/cut.data" >"$T/cut.out" 2>"$T/cut.err"
check_eq "a file cut inside a KERNEL section: replay reads what is whole" "$?" 0
check "a file cut inside a KERNEL section: said to be unfinished" grep -q "did not finish\|incomplete\|ignored" "$T/cut.err"

# --kernel alone is all of it (uftrace's -k takes no list).
"$NEEDLE" record --kernel -o "$T/all.data" -- "$P" >/dev/null 2>&1
check "--kernel alone: system calls, off-CPU intervals and faults" grep -qE \
	"^kernel events: [0-9]+ \([1-9][0-9]* system calls, [1-9][0-9]* off-CPU intervals, [1-9][0-9]* page faults" \
	<("$NEEDLE" info -i "$T/all.data")

# ---- -E linux:schedule: uftrace's schedule events ----
# Each interval off the CPU inside a call is a call to linux:schedule
# inside it: replay writes it as uftrace does (its duration, then
# "/* linux:schedule */"), report and graph count it; --no-sched-preempt
# leaves out the intervals where the thread was preempted, so that
# k_sleep's one sleep is its only one; --no-sched, none.
"$NEEDLE" record -E linux:schedule -o "$T/e.data" -- "$P" >"$T/eout" 2>"$T/eerr"
st=$?
check_eq "-E linux:schedule: needle record exits 0 ($(tail -1 "$T/eerr"))" "$st" 0
check "-E linux:schedule: output identical to a run left alone" cmp -s "$T/plain" "$T/eout"
etids=($(trace_tids "$T/e.data"))
emain=${etids[0]}
# inside_opts FILE TID FUNC PATTERN OPTS...: as inside, with replay's OPTS.
inside_opts() {
	local f=$1 tid=$2 fn=$3 pat=$4
	shift 4
	"$NEEDLE" replay --tid "$tid" -i "$f" "$@" | awk -v f="$fn" -v pat="$pat" '
		index($0, "| ") && $0 ~ ("\\| +" f "\\(\\) \\{") { in_f = 1 }
		$0 ~ pat { all++; if (in_f) n++ }
		$0 ~ ("} /\\* " f " \\*/") { in_f = 0 }
		END { printf "%d %d\n", n, all }'
}
check_eq "-E: k_sleep's sleep is one linux:schedule inside it (--no-sched-preempt)" \
	"$(inside_opts "$T/e.data" "$emain" k_sleep '[0-9] ms \[ *[0-9]+\] \| +/\* linux:schedule \*/$' --no-sched-preempt | cut -d' ' -f1)" 1
v=$("$NEEDLE" replay --tid "$emain" -i "$T/e.data" --no-sched-preempt | awk '
	/k_sleep\(\) \{/ { in_f = 1 } in_f && /linux:schedule/ { print $1; exit }')
check "-E: that call lasts the sleep, 9 ms or more (${v} ms)" awk -v v="${v:-0}" 'BEGIN { exit !(v >= 9) }'
check_eq "-E: no interval inside a call is left a comment" \
	"$(inside_opts "$T/e.data" "$emain" main 'off CPU' | cut -d' ' -f1)" 0
check_eq "-E: report -F k_sleep: one call to linux:schedule (--no-sched-preempt)" \
	"$("$NEEDLE" report -i "$T/e.data" --tid "$emain" -F k_sleep --no-sched-preempt | awk '$NF == "linux:schedule" { print $(NF-1) }')" 1
check "-E: graph k_sleep: linux:schedule beneath it" grep -qE '\(1\) linux:schedule$' \
	<("$NEEDLE" graph -i "$T/e.data" --no-sched-preempt k_sleep)
check_eq "--no-sched: no linux:schedule, no interval off the CPU" \
	"$("$NEEDLE" replay -i "$T/e.data" --no-sched | grep -cE 'linux:schedule|off CPU')" 0
check "info: the event recorded" grep -q '^# event *: linux:schedule$' <("$NEEDLE" info -i "$T/e.data")
# A view's -E reads a --kernel trace's intervals the same way.
check_eq "replay -E on a --kernel trace: k_sleep's sleep is a linux:schedule" \
	"$(inside_opts "$T/k.data" "$main" k_sleep 'linux:schedule' -E linux:schedule --no-sched-preempt | cut -d' ' -f1)" 1
check_eq "replay without -E on a --kernel trace: still a comment" \
	"$(inside_opts "$T/k.data" "$main" k_sleep 'off CPU .* \(sleeping\)' | cut -d' ' -f1)" 1
# needle script hands them to uftrace_event, a sched-out and a sched-in
# per call.
printf 'import collections\nn = collections.Counter()\ndef uftrace_event(ctx):\n    n[ctx["name"]] += 1\ndef uftrace_end():\n    print(n["linux:sched-out"], n["linux:sched-in"])\n' >"$T/sched.py"
calls=$("$NEEDLE" dump -i "$T/e.data" | grep -c '\[entry\] linux:schedule')
check "-E: some intervals inside calls ($calls)" test "$calls" -gt 0
check_eq "script: uftrace_event gets linux:sched-out and linux:sched-in for each" \
	"$("$NEEDLE" script -S "$T/sched.py" -i "$T/e.data")" "$calls $calls"
# Left out as events, the intervals stay time off the CPU: report's
# Off CPU column is the same with --no-sched.
offcpu() { "$NEEDLE" report -i "$T/e.data" --tid "$emain" -F k_sleep "$@" | awk '$NF == "k_sleep" { print $5, $6 }'; }
check_eq "--no-sched: report's Off CPU of k_sleep unchanged ($(offcpu))" "$(offcpu --no-sched)" "$(offcpu)"
# The views' options kept by record (replay reads them, as live does).
"$NEEDLE" record -E linux:schedule --no-sched-preempt -o "$T/ep.data" -- "$P" >/dev/null 2>&1
check_eq "record --no-sched-preempt: kept for replay (k_sleep's sleep alone)" \
	"$(ptids=($(trace_tids "$T/ep.data")); inside_opts "$T/ep.data" "${ptids[0]}" k_sleep 'linux:schedule' | cut -d' ' -f1)" 1
# The uftrace export leaves them out (uftrace's own schedule records are
# not written): no symbol at address 0, the graph as --no-sched has it.
"$NEEDLE" export --format=uftrace -i "$T/e.data" -o "$T/e.uftrace" 2>"$T/euerr"
st=$?
check_eq "export --format=uftrace of an -E trace: exit 0 ($(head -c 200 "$T/euerr"))" "$st" 0
check_eq "export --format=uftrace: no linux:schedule symbol" "$(cat "$T"/e.uftrace/*.sym | grep -c 'linux:schedule')" 0
check "export --format=uftrace: no object mapped from address 0" \
	test "$(cat "$T"/e.uftrace/sid-*.map | grep -c '^0*-')" = 0
"$NEEDLE" record --kernel=syscall -o "$T/sys.data" -- "$P" >/dev/null 2>&1
view_refused "replay -E on a trace of system calls only" 1 "no intervals off the CPU" \
	"$NEEDLE" replay -E linux:schedule -i "$T/sys.data"
"$NEEDLE" record --libcall=none -o "$T/nok.data" -- "$P" >/dev/null 2>&1
view_refused "replay -E on a trace without the kernel's events" 1 "no intervals off the CPU" \
	"$NEEDLE" replay -E linux:schedule -i "$T/nok.data"
view_refused "report -E of another event" 2 "linux:schedule" "$NEEDLE" report -E linux:bogus -i "$T/e.data"
bad_input "-E of another event" "needle records the events linux:schedule" -E linux:bogus
bad_input "-E of a probe the program does not have" "have no USDT probe.*other events are linux:schedule" -E sched:sched_switch

# ---- bad input ----
bad_input "--kernel=bogus" "unknown 'bogus'" --kernel=bogus
bad_input "--kernel= (empty)" "needs a list" --kernel=
