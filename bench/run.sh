#!/usr/bin/env bash
# run.sh BENCH_DIR - run every benchmark, side by side with kernel uprobes
# (bpftrace) on the same binary in the same run, and write
# BENCH_DIR/results.json plus a readable table.
set -u
dir=$(cd "${1:-build/bench}" && pwd)
raw="$dir/raw.txt"
: >"$raw"

note() { printf '%s\n' "$*" >&2; }

note "bench: patch engine (attach/detach with a live thread)"
"$dir/bench_patch" attach >>"$raw"
note "bench: counting handler per call"
"$dir/bench_patch" count 20000000 >>"$raw"
"$dir/bench_patch" count_ctx 20000000 >>"$raw"
"$dir/bench_patch" hook 20000000 >>"$raw"
# The same handlers' direct twins (needle_attach_opts.direct_entry/_exit).
"$dir/bench_patch" count_direct 20000000 >>"$raw"
"$dir/bench_patch" hook_direct 20000000 >>"$raw"
# The same with the compiler's exit sites instead of the hijacked return.
"$dir/bench_patch_exit" hook 20000000 | sed 's/^entry_exit_hook_ns/exit_site_hook_ns/' >>"$raw"
"$dir/bench_patch_exit" hook_direct 20000000 | sed 's/^entry_exit_hook_direct_ns/exit_site_hook_direct_ns/' >>"$raw"

# The kernel's answer to the same question: a uprobe on the same function
# of the same binary, counted by bpftrace.
uprobe_calls=200000
if command -v bpftrace >/dev/null 2>&1; then
	[ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	base=$("$dir/bench_patch" loop $uprobe_calls | awk '/^loop_ns/ {print $2}')
	probed=$(timeout 300 bpftrace -e "uprobe:$dir/bench_patch:bench_count_target { @c = count(); }" \
		-c "$dir/bench_patch loop $uprobe_calls" 2>/dev/null | awk '/^loop_ns/ {print $2}')
	if [ -n "$base" ] && [ -n "$probed" ]; then
		awk -v b="$base" -v p="$probed" 'BEGIN { printf "uprobe_count_ns %.3f\n", p - b }' >>"$raw"
	else
		note "bench: bpftrace could not probe here; uprobe_count_ns left out"
	fi
else
	note "bench: bpftrace not installed; uprobe_count_ns left out"
fi

# ---- recording: needle record against uftrace record, same binary ----
NEEDLE="$dir/../needle"
loop="$dir/bench_loop"
calls=10000000

# min_ns_per_call N CMD...: the smallest "ns_per_call" the program printed
# over N runs (noise on a shared machine only ever adds time).
min_ns_per_call() {
	local n=$1 best=""
	shift
	for _ in $(seq "$n"); do
		v=$("$@" 2>&1 >/dev/null | awk '/^ns_per_call/ {print $2}')
		[ -n "$v" ] || continue
		best=$(awk -v a="${best:-1e18}" -v b="$v" 'BEGIN {print (b < a) ? b : a}')
	done
	echo "$best"
}
now_ns() { date +%s%N; }
# stdout_floor N AWK CMD...: the smallest number AWK extracts from CMD's
# standard output over N runs (runs that print none are skipped).
stdout_floor() {
	local n=$1 ext=$2 b="" v
	shift 2
	for _ in $(seq "$n"); do
		v=$("$@" 2>/dev/null | awk "$ext")
		[ -n "$v" ] || continue
		b=$(awk -v a="${b:-1e18}" -v v="$v" 'BEGIN {print (v < a) ? v : a}')
	done
	echo "$b"
}

note "bench: function_graph recording, $calls calls, needle and uftrace"
plain=$(min_ns_per_call 3 "$loop" $calls)
traced=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled -o "$dir/loop.data" -- "$loop" $calls)
awk -v p="$plain" -v t="$traced" 'BEGIN { printf "untraced_loop_ns_per_call %.3f\ngraph_record_ns_per_call %.3f\n", p, t - p }' >>"$raw"
awk -v b="$(stat -c %s "$dir/loop.data")" -v n=$calls 'BEGIN { printf "bytes_per_call %.3f\n", b / n }' >>"$raw"
# A recording paused by --signal (--disable until a trace_on that never
# comes): what a call costs while nothing is recorded.
paused=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled -o "$dir/loop.data" --disable --signal USR2@trace_on \
	-- "$loop" $calls)
awk -v p="$plain" -v t="$paused" 'BEGIN { if (t != "") printf "trigger_paused_ns_per_call %.3f\n", t - p }' >>"$raw"

# The OTLP stream's cost in the program (needle record --otlp-endpoint, a
# span per call, to a collector on loopback that answers at once): the
# loop's time with the stream over its time recorded without.
if command -v node >/dev/null 2>&1; then
	rm -f "$dir/otlp.port"
	node "$dir/../../tests/record/otlp_receiver.js" sink "$dir/otlp.port" /dev/null &
	sink=$!
	for _ in $(seq 500); do [ -s "$dir/otlp.port" ] && break; sleep 0.01; done
	streamed=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled -o "$dir/loop.data" \
		--otlp-endpoint "http://127.0.0.1:$(cat "$dir/otlp.port")" -- "$loop" $calls)
	"$NEEDLE" record --sites=compiled -o "$dir/loop.data" --otlp-endpoint "http://127.0.0.1:$(cat "$dir/otlp.port")" \
		-- "$loop" $calls 2>&1 >/dev/null | awk '/otlp:/ { s = $3; l = 0; for (i = 1; i <= NF; i++) if ($(i) ~ /^LOST/) l = $(i - 1);
		printf "otlp_stream_spans_sent_pct %.1f\n", 100 * s / (s + l) }' >>"$raw"
	kill "$sink" 2>/dev/null
	wait "$sink" 2>/dev/null
	awk -v t="$traced" -v s="$streamed" 'BEGIN { if (s != "") printf "otlp_stream_ns_per_span %.3f\n", s - t }' >>"$raw"
else
	note "bench: node not installed; otlp_stream_ns_per_span left out"
fi
if command -v uftrace >/dev/null 2>&1; then
	rm -rf "$dir/uftrace.data"
	utraced=$(min_ns_per_call 3 uftrace record -P . -d "$dir/uftrace.data" "$loop" $calls)
	awk -v p="$plain" -v t="$utraced" 'BEGIN { printf "uftrace_record_ns_per_call %.3f\n", t - p }' >>"$raw"
	awk -v b="$(du -sb "$dir/uftrace.data" | cut -f1)" -v n=$calls 'BEGIN { printf "uftrace_bytes_per_call %.3f\n", b / n }' >>"$raw"
fi

note "bench: exit sites (gcc -minstrument-return=nop5 -mrecord-return), and the floor of a compiler-hook tracer"
eloop="$dir/bench_loop_exit"
eplain=$(min_ns_per_call 3 "$eloop" $calls)
etraced=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled -o "$dir/loop_exit.data" -- "$eloop" $calls)
ehooked=$(min_ns_per_call 3 env NEEDLE_EXIT_SITES=0 "$NEEDLE" record --sites=compiled -o "$dir/loop_exit.data" -- "$eloop" $calls)
awk -v p="$eplain" -v t="$etraced" -v h="$ehooked" 'BEGIN {
	if (p != "" && t != "") printf "exit_site_record_ns_per_call %.3f\n", t - p
	if (p != "" && h != "") printf "exit_site_binary_return_hook_record_ns_per_call %.3f\n", h - p }' >>"$raw"
rm -f "$dir/loop_exit.data"
floor_best() { # the smallest value of key $1 over 3 runs of bench_floor
	for _ in 1 2 3; do "$dir/bench_floor" $calls; done | awk -v k="$1" '$1 == k && (b == "" || $2 < b) { b = $2 } END { print b }'
}
fring=$(floor_best ring_ns_per_call)
awk -v r="$fring" -v p="$plain" 'BEGIN { if (r != "" && p != "") printf "floor_hooks_ring_ns_per_call %.3f\n", r - p }' >>"$raw"
# The loop built without flags: bench_small reached through a relocated
# entry (and the full trampolines), against the NOP5 figure.
rplain=$(min_ns_per_call 3 "$dir/bench_loop_plain" $calls)
rtraced=$(min_ns_per_call 3 "$NEEDLE" record --sites=relocated -o "$dir/loop_reloc.data" -- "$dir/bench_loop_plain" $calls)
rm -f "$dir/loop_reloc.data"
rhijacked=$(min_ns_per_call 3 env NEEDLE_CALLING=0 "$NEEDLE" record --sites=relocated -o "$dir/loop_reloc.data" -- "$dir/bench_loop_plain" $calls)
rm -f "$dir/loop_reloc.data"
awk -v p="$rplain" -v t="$rtraced" -v h="$rhijacked" 'BEGIN {
	if (p != "" && t != "") printf "relocated_record_ns_per_call %.3f\n", t - p
	if (p != "" && h != "") printf "relocated_record_hijacked_ns_per_call %.3f\n", h - p }' >>"$raw"
# A library call in uftrace's view: labs, called from the program through
# a pointer (bench_libc_hits, built without flags), recorded as a library
# call by the flight recorder (no drain), against the full path.  The
# program prints its ns_per_call on stdout.
lhits() { stdout_floor 3 '/^ns_per_call/ { print $2 }' "$@"; }
lplain=$(lhits "$dir/bench_libc_hits" $calls)
ltraced=$(lhits "$NEEDLE" record --sites=all --snapshot=16 -o "$dir/libcall.data" -- "$dir/bench_libc_hits" $calls)
lfull=$(lhits env NEEDLE_DIRECT=0 "$NEEDLE" record --sites=all --snapshot=16 -o "$dir/libcall.data" -- "$dir/bench_libc_hits" $calls)
rm -f "$dir/libcall.data"
awk -v p="$lplain" -v t="$ltraced" -v f="$lfull" 'BEGIN {
	if (p != "" && t != "") printf "libcall_snapshot_ns_per_call %.3f\n", t - p
	if (p != "" && f != "") printf "libcall_snapshot_full_path_ns_per_call %.3f\n", f - p }' >>"$raw"
# The direct path's ablation (NEEDLE_DIRECT=0: every call through the
# full path, ctx and consumer list), streaming and in the flight
# recorder, and the exit-site build in the flight recorder; the ratio to
# the floor of the same run.
full=$(min_ns_per_call 3 env NEEDLE_DIRECT=0 "$NEEDLE" record --sites=compiled -o "$dir/loop.data" -- "$loop" $calls)
sfull=$(min_ns_per_call 3 env NEEDLE_DIRECT=0 "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/snap.data" -- "$loop" $calls)
# The calling trampoline's ablation (NEEDLE_CALLING=0: entries are CALLs
# and the direct path hijacks the return, mispredicted at every return).
hijacked=$(min_ns_per_call 3 env NEEDLE_CALLING=0 "$NEEDLE" record --sites=compiled -o "$dir/loop.data" -- "$loop" $calls)
shijacked=$(min_ns_per_call 3 env NEEDLE_CALLING=0 "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/snap.data" \
	-- "$loop" $calls)
awk -v p="$plain" -v h="$hijacked" -v s="$shijacked" 'BEGIN {
	if (h != "") printf "graph_record_hijacked_ns_per_call %.3f\n", h - p
	if (s != "") printf "snapshot_record_hijacked_ns_per_call %.3f\n", s - p }' >>"$raw"
# The recorder's assembly path's ablation (NEEDLE_GRAPH_ASM=0: its calls
# taken by the C direct path), in the flight recorder.
sc=$(min_ns_per_call 3 env NEEDLE_GRAPH_ASM=0 "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/snap.data" \
	-- "$loop" $calls)
awk -v p="$plain" -v s="$sc" 'BEGIN { if (s != "") printf "snapshot_record_c_path_ns_per_call %.3f\n", s - p }' >>"$raw"
esnap=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/snap.data" -- "$eloop" $calls)
awk -v p="$plain" -v f="$full" -v s="$sfull" -v ep="$eplain" -v e="$esnap" -v t="$traced" -v r="$fring" 'BEGIN {
	if (f != "") printf "graph_record_full_path_ns_per_call %.3f\n", f - p
	if (s != "") printf "snapshot_record_full_path_ns_per_call %.3f\n", s - p
	if (e != "" && ep != "") printf "exit_site_snapshot_record_ns_per_call %.3f\n", e - ep
	if (r != "" && r - p > 0) printf "graph_record_to_floor_ratio %.2f\n", (t - p) / (r - p) }' >>"$raw"
rm -f "$dir/snap.data"
echo "rdtsc_ns $(floor_best rdtsc_ns)" >>"$raw"
echo "handler_call_floor_ns $(floor_best handler_call_floor_ns)" >>"$raw"
echo "probe_floor_ns $(floor_best probe_floor_ns)" >>"$raw"
echo "return_hook_floor_ns $(floor_best return_hook_floor_ns)" >>"$raw"

note "bench: the flight recorder (--snapshot) against streaming; a trigger; a 64 MiB snapshot's copy"
snap=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/snap.data" -- "$loop" $calls)
strig=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled --snapshot=16 --trigger 'bench_small>10s' \
	-o "$dir/snap.data" -- "$loop" $calls)
awk -v p="$plain" -v s="$snap" -v t="$strig" 'BEGIN {
	if (s != "") printf "snapshot_record_ns_per_call %.3f\n", s - p
	if (s != "" && t != "") printf "trigger_check_ns %.3f\n", t - s }' >>"$raw"
copy=$(for _ in 1 2 3; do "$NEEDLE" record --sites=compiled --snapshot=64 -o "$dir/snap.data" -- "$loop" 20000000 2>&1 \
	>/dev/null | sed -n 's/.*copied in \([0-9.]*\) ms.*/\1/p'; done | sort -n | head -1)
[ -n "$copy" ] && echo "snapshot_copy_ms_64mib $copy" >>"$raw"
rm -f "$dir/snap.data"

note "bench: two integer arguments captured (-A), against the same function recorded without, and uftrace -A"
args="$dir/bench_args"
aplain=$(min_ns_per_call 5 "$args" $calls)
anone=$(min_ns_per_call 5 "$NEEDLE" record --sites=compiled -o "$dir/args.data" -- "$args" $calls)
aint2=$(min_ns_per_call 5 "$NEEDLE" record --sites=compiled -A 'bench_args2@arg1/d,arg2/d' -o "$dir/args.data" -- "$args" $calls)
# The same in the flight recorder: the capture itself, without the reader
# draining 5 more words a call beside the program.
asnone=$(min_ns_per_call 5 "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/args.data" -- "$args" $calls)
asint2=$(min_ns_per_call 5 "$NEEDLE" record --sites=compiled --snapshot=16 -A 'bench_args2@arg1/d,arg2/d' \
	-o "$dir/args.data" -- "$args" $calls)
awk -v n="$asnone" -v a="$asint2" 'BEGIN { if (n != "" && a != "") printf "args_int2_added_snapshot_ns %.3f\n", a - n }' >>"$raw"
# The string function the same way: untraced, recorded without its
# string, recorded with it (a fault-tolerant copy, no system call).
scalls=$calls
splain=$(min_ns_per_call 5 "$args" $scalls str)
snone=$(min_ns_per_call 5 "$NEEDLE" record --sites=compiled -o "$dir/args.data" -- "$args" $scalls str)
astr=$(min_ns_per_call 5 "$NEEDLE" record --sites=compiled -A 'bench_str16@arg1/s' -o "$dir/args.data" -- "$args" $scalls str)
awk -v p="$aplain" -v n="$anone" -v a="$aint2" -v sp="$splain" -v sn="$snone" -v s="$astr" 'BEGIN {
	if (p != "" && n != "") printf "args_none_record_ns_per_call %.3f\n", n - p
	if (p != "" && a != "") printf "args_int2_record_ns_per_call %.3f\n", a - p
	if (n != "" && a != "") printf "args_int2_added_ns %.3f\n", a - n
	if (sp != "" && sn != "") printf "args_str_none_record_ns_per_call %.3f\n", sn - sp
	if (sp != "" && s != "") printf "args_str16_record_ns_per_call %.3f\n", s - sp
	if (sn != "" && s != "") printf "args_str16_added_ns %.3f\n", s - sn }' >>"$raw"
if command -v uftrace >/dev/null 2>&1; then
	rm -rf "$dir/uftrace_args.data"
	uargs=$(min_ns_per_call 5 uftrace record -P . -A 'bench_args2@arg1,arg2' -d "$dir/uftrace_args.data" "$args" $calls)
	rm -rf "$dir/uftrace_args.data"
	ustr=$(min_ns_per_call 5 uftrace record -P . -A 'bench_str16@arg1/s' -d "$dir/uftrace_args.data" "$args" $scalls str)
	awk -v p="$aplain" -v u="$uargs" -v sp="$splain" -v us="$ustr" 'BEGIN {
		if (p != "" && u != "") printf "uftrace_args_int2_record_ns_per_call %.3f\n", u - p
		if (sp != "" && us != "") printf "uftrace_args_str16_record_ns_per_call %.3f\n", us - sp }' >>"$raw"
	rm -rf "$dir/uftrace_args.data"
fi
rm -f "$dir/args.data"

note "bench: the traced program's time per iteration (50 calls) under each reader mode: p99, p99.9, worst"
iter_keys() { # MODE CMD...: the floor of 3 runs of each percentile
	local mode=$1
	shift
	for _ in 1 2 3; do "$@" 2>&1 >/dev/null; done | awk -v m="$mode" '
		/^iter_p99_us/ { if (a == "" || $2 < a) a = $2 } /^iter_p999_us/ { if (b == "" || $2 < b) b = $2 }
		/^iter_max_us/ { if (c == "" || $2 < c) c = $2 }
		END { if (a != "") printf "iter_p99_us_%s %s\niter_p999_us_%s %s\niter_max_us_%s %s\n", m, a, m, b, m, c }'
}
iter="$dir/bench_iter"
iter_keys untraced "$iter" >>"$raw"
iter_keys wait "$NEEDLE" record --sites=compiled --wait -o "$dir/iter.data" -- "$iter" >>"$raw"
iter_keys poll "$NEEDLE" record --sites=compiled --poll=1 -o "$dir/iter.data" -- "$iter" >>"$raw"
iter_keys buffer_percent "$NEEDLE" record --sites=compiled --buffer-percent=50 -o "$dir/iter.data" -- "$iter" >>"$raw"
iter_keys snapshot "$NEEDLE" record --sites=compiled --snapshot=16 -o "$dir/iter.data" -- "$iter" >>"$raw"
rm -f "$dir/iter.data"

note "bench: LLVM XRay's flight data recorder and needle on the same XRay-instrumented binary"
xloop="$dir/bench_loop_xray"
if [ -x "$xloop" ]; then
	# Sleds left unpatched: the binary's own untraced cost.
	xplain=$(min_ns_per_call 3 env XRAY_OPTIONS="patch_premain=false" "$xloop" $calls)
	# FDR mode keeps its per-thread buffers in memory (a flight recorder:
	# nothing is written while the program runs, nor at its exit here).
	xfdr=$(min_ns_per_call 3 env XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr verbosity=0" "$xloop" $calls)
	# needle records the same binary through XRay's sleds (entry sleds
	# as NEEDLE_FORM_XRAY sites, exit and tail-call sleds as exit sites).
	xneedle=$(min_ns_per_call 3 env XRAY_OPTIONS="patch_premain=false" "$NEEDLE" record --sites=compiled -F bench_small \
		-o "$dir/xray_loop.data" -- "$xloop" $calls)
	awk -v p="$xplain" -v f="$xfdr" -v n="$xneedle" 'BEGIN {
		if (p != "" && f != "") printf "xray_fdr_record_ns_per_call %.3f\n", f - p
		if (p != "" && n != "") printf "xray_site_record_ns_per_call %.3f\n", n - p }' >>"$raw"
	rm -f "$dir/xray_loop.data"
fi

note "bench: export of the $calls-call trace to Perfetto"
events=$("$NEEDLE" info -i "$dir/loop.data" | awk '/^events:/ {print $2}')
t0=$(now_ns)
"$NEEDLE" export --format=perfetto -i "$dir/loop.data" -o "$dir/loop.pftrace"
t1=$(now_ns)
awk -v ns=$((t1 - t0)) -v e="$events" 'BEGIN { printf "export_perfetto_s_per_mevent %.4f\n", ns / 1e9 / (e / 1e6) }' >>"$raw"

note "bench: SQLite's speedtest1 (--size 10, Debian's source): the floor's hooks, needle, uftrace"
if "$dir/../../bench/build_sqlite.sh" "$dir/.." >"$dir/sqlite_build.log" 2>&1; then
	sq="$dir/../third_party"
	# The time speedtest1 itself reports (its TOTAL line, seconds), the
	# floor of N runs.
	sq_best() {
		local n=$1
		shift
		stdout_floor "$n" '/TOTAL/ { v = $NF; sub(/s$/, "", v); print v }' "$@"
	}
	args=(--size 10 --memdb)
	trace=/dev/shm/needle-bench-sqlite.data
	sqplain=$(sq_best 3 "$sq/speedtest1_pfe" "${args[@]}")
	sqfloor=$(sq_best 3 "$sq/speedtest1_floor" "${args[@]}")
	sqsnap=$(sq_best 3 "$NEEDLE" record --sites=compiled --snapshot=4 -o "$trace" -- "$sq/speedtest1_pfe" "${args[@]}")
	sqfull=$(sq_best 3 env NEEDLE_DIRECT=0 "$NEEDLE" record --sites=compiled --snapshot=4 -o "$trace" -- \
		"$sq/speedtest1_pfe" "${args[@]}")
	sqhij=$(sq_best 3 env NEEDLE_CALLING=0 "$NEEDLE" record --sites=compiled --snapshot=4 -o "$trace" -- \
		"$sq/speedtest1_pfe" "${args[@]}")
	sqrec=$(sq_best 3 "$NEEDLE" record --sites=compiled -o "$trace" -- "$sq/speedtest1_pfe" "${args[@]}")
	sqcalls=$("$NEEDLE" report --csv -i "$trace" | awk -F, 'NR > 1 {n += $2} END {print n + 0}')
	rm -f "$trace"
	squ=""
	if command -v uftrace >/dev/null 2>&1; then
		# Its data on tmpfs too; --no-libcall: the same functions as
		# needle's compiled sites, no PLT calls into the C library.
		uft_sq() { rm -rf /dev/shm/needle-bench-uftrace; uftrace record --no-libcall -P . -d /dev/shm/needle-bench-uftrace "$@"; }
		squ=$(sq_best 3 uft_sq "$sq/speedtest1_pfe" "${args[@]}")
		rm -rf /dev/shm/needle-bench-uftrace
	fi
	awk -v p="$sqplain" -v f="$sqfloor" -v s="$sqsnap" -v x="$sqfull" -v h="$sqhij" -v r="$sqrec" -v u="$squ" \
		-v c="$sqcalls" 'BEGIN {
		if (p == "" || c <= 0) exit
		printf "sqlite_calls %d\nsqlite_untraced_s %.3f\n", c, p
		if (f != "") printf "sqlite_floor_ns_per_call %.3f\n", (f - p) * 1e9 / c
		if (s != "") printf "sqlite_snapshot_ns_per_call %.3f\n", (s - p) * 1e9 / c
		if (x != "") printf "sqlite_snapshot_full_path_ns_per_call %.3f\n", (x - p) * 1e9 / c
		if (h != "") printf "sqlite_snapshot_hijacked_ns_per_call %.3f\n", (h - p) * 1e9 / c
		if (r != "") printf "sqlite_record_ns_per_call %.3f\n", (r - p) * 1e9 / c
		if (u != "") printf "sqlite_uftrace_ns_per_call %.3f\n", (u - p) * 1e9 / c
		if (f != "" && f > p && s != "") printf "sqlite_snapshot_to_floor_ratio %.3f\n", (s - p) / (f - p)
		if (f != "" && f > p && r != "") printf "sqlite_record_to_floor_ratio %.3f\n", (r - p) / (f - p) }' >>"$raw"
else
	note "bench: SQLite could not be built (see $dir/sqlite_build.log); sqlite_* left out"
fi

note "bench: the views on 50M events of a recursion 1,000 deep (time per million events, peak memory)"
"$dir/bench_views" run "$NEEDLE" "$dir" >>"$raw" || note "bench: the view benchmark failed"

note "bench: needle script and import needle over 10M events (one thread, 1,000 deep; floor of 3)"
if "$NEEDLE" record -o "$dir/script10m.data" -- "$dir/../tests/progs/views_deep" 1 2500 1000 >/dev/null 2>&1; then
	printf 'def uftrace_entry(ctx):\n    pass\ndef uftrace_exit(ctx):\n    pass\n' >"$dir/empty_script.py"
	ev=$("$NEEDLE" info -i "$dir/script10m.data" | awk '/^events:/ { print $2 }')
	best() { sort -g | head -1; }
	secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || return; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'; }
	s=$(for i in 1 2 3; do secs "$NEEDLE" script -S "$dir/empty_script.py" -i "$dir/script10m.data"; done | best)
	l=$(for i in 1 2 3; do secs env PYTHONPATH="$dir/../python" /usr/bin/python3 -c 'import needle, sys
for ev in needle.open(sys.argv[1]).events(): pass' "$dir/script10m.data"; done | best)
	awk -v s="$s" -v l="$l" -v e="$ev" 'BEGIN { if (s != "" && e > 0) printf "script_s_per_10mevent %.3f\n", s * 1e7 / e
		if (l != "" && e > 0) printf "python_loop_s_per_10mevent %.3f\n", l * 1e7 / e }' >>"$raw"
	rm -f "$dir/script10m.data"
fi

note "bench: the zlib workload (zlib built from Debian source with patchable entries)"
if "$dir/../../tests/relocate/build_real_programs.sh" "$dir/.." >"$dir/third_party.log" 2>&1 ||
	[ -x "$dir/../third_party/zlib_driver" ]; then
	zd="$dir/../third_party/zlib_driver"
	rounds=3000
	best() { # best N CMD...: smallest time of the driver's own loop over N runs
		local n=$1 b=""
		shift
		for _ in $(seq "$n"); do
			v=$(ZLIB_DRIVER_TIMING=1 "$@" 2>&1 >/dev/null | awk '/^loop_ns/ {print $2}')
			[ -n "$v" ] || continue
			b=$(awk -v a="${b:-1e18}" -v v="$v" 'BEGIN {print (v < a) ? v : a}')
		done
		echo "$b"
	}
	# Alternated, so that a slow spell of the machine hits both; the
	# compiled entries only, the functions uftrace -P . traces too.
	zplain="" zneedle=""
	for _ in 1 2 3 4 5; do
		zplain=$(awk -v a="${zplain:-1e18}" -v v="$(best 1 "$zd" $rounds)" 'BEGIN {print (v != "" && v < a) ? v : a}')
		zneedle=$(awk -v a="${zneedle:-1e18}" -v v="$(best 1 "$NEEDLE" record --sites=compiled -o "$dir/zlib.data" -- "$zd" $rounds)" \
			'BEGIN {print (v != "" && v < a) ? v : a}')
	done
	zcalls=$("$NEEDLE" report --csv -i "$dir/zlib.data" | awk -F, 'NR > 1 {n += $2} END {print n}')
	# A traced floor below the untraced one is the machine's noise, not a
	# figure: left out (the table says so).
	awk -v p="$zplain" -v t="$zneedle" -v c="$zcalls" 'BEGIN { printf "zlib_calls %d\n", c; if (t >= p) printf "graph_record_ns_per_call_zlib %.3f\n", (t - p) / c }' >>"$raw"
	awk -v b="$(stat -c %s "$dir/zlib.data")" -v c="$zcalls" 'BEGIN { printf "bytes_per_call_zlib %.3f\n", b / c }' >>"$raw"
	if command -v uftrace >/dev/null 2>&1; then
		rm -rf "$dir/uftrace-zlib.data"
		zuft=$(best 5 uftrace record -P . -d "$dir/uftrace-zlib.data" "$zd" $rounds)
		awk -v p="$zplain" -v t="$zuft" -v c="$zcalls" 'BEGIN { if (t >= p) printf "uftrace_record_ns_per_call_zlib %.3f\n", (t - p) / c }' >>"$raw"
	fi
	# The same driver on small buffers (64-575 bytes): with 3 MB buffers
	# the loop's compression hides 780,000 calls' cost in its noise; here
	# the calls are the time.  Added time as a ratio of uftrace's.
	# malloc's mmap threshold fixed for all three runs (the environment
	# variable: uftrace replaces GLIBC_TUNABLES with its own): zlib
	# allocates its tables per round, and glibc's dynamic threshold makes
	# those mmap and unmap each round in one process and come from the
	# heap in another, depending on what is preloaded (loading libneedle
	# alone made this loop 13 times faster): the tracers' cost, not
	# malloc's, is measured.
	zs() { MALLOC_MMAP_THRESHOLD_=4194304 ZLIB_DRIVER_SMALL=1 best 3 "$@"; }
	zsplain=$(zs "$zd" $rounds)
	zsneedle=$(zs "$NEEDLE" record --sites=compiled -o "$dir/zlib.data" -- "$zd" $rounds)
	zscalls=$("$NEEDLE" report --csv -i "$dir/zlib.data" | awk -F, 'NR > 1 {n += $2} END {print n}')
	awk -v p="$zsplain" -v t="$zsneedle" -v c="$zscalls" 'BEGIN { if (p != "" && t != "") printf "zlib_small_calls %d\ngraph_record_ns_per_call_zlib_small %.3f\n", c, (t - p) / c }' >>"$raw"
	if command -v uftrace >/dev/null 2>&1; then
		# A fresh data directory for every run: uftrace treats an
		# existing one differently.
		uft() { rm -rf "$dir/uftrace-zlib.data"; uftrace record -P . -d "$dir/uftrace-zlib.data" "$@"; }
		zsuft=$(zs uft "$zd" $rounds)
		awk -v p="$zsplain" -v t="$zsneedle" -v u="$zsuft" -v c="$zscalls" 'BEGIN {
			if (p != "" && u != "") printf "uftrace_record_ns_per_call_zlib_small %.3f\n", (u - p) / c
			if (p != "" && u > p && t != "") printf "zlib_small_ratio_to_uftrace %.3f\n", (t - p) / (u - p) }' >>"$raw"
	fi
	# Lua 5.4 from Debian's source, built with patchable entries: a loop of
	# table, string and math work (bench/bench_lua.lua), timed by the
	# interpreter itself.
	lua="$dir/../third_party/lua"
	lb() { best 3 "$@" "$dir/../../bench/bench_lua.lua" 200000; }
	lplain=$(lb "$lua")
	lneedle=$(lb "$NEEDLE" record --sites=compiled -o "$dir/lua.data" -- "$lua")
	lcalls=$("$NEEDLE" report --csv -i "$dir/lua.data" | awk -F, 'NR > 1 {n += $2} END {print n}')
	awk -v p="$lplain" -v t="$lneedle" -v c="$lcalls" 'BEGIN { if (p != "" && t != "" && c > 0) printf "lua_calls %d\ngraph_record_ns_per_call_lua %.3f\n", c, (t - p) / c }' >>"$raw"
	if command -v uftrace >/dev/null 2>&1; then
		ulua() { rm -rf "$dir/uftrace-lua.data"; uftrace record -P . -d "$dir/uftrace-lua.data" "$@"; }
		luft=$(lb ulua "$lua")
		awk -v p="$lplain" -v t="$lneedle" -v u="$luft" -v c="$lcalls" 'BEGIN {
			if (p != "" && u != "" && c > 0) printf "uftrace_record_ns_per_call_lua %.3f\n", (u - p) / c
			if (p != "" && u > p && t != "") printf "lua_ratio_to_uftrace %.3f\n", (t - p) / (u - p) }' >>"$raw"
		rm -rf "$dir/uftrace-lua.data"
	fi
	rm -f "$dir/lua.data"
else
	note "bench: could not build zlib from source (see $dir/third_party.log); zlib figures left out"
fi

note "bench: the kernel's side (--kernel): per system call and per context switch, beside perf trace and strace"
kprog="$dir/bench_kernel"
kn=200000
kplain=$(min_ns_per_call 3 "$kprog" getpid $kn)
knone=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled -o "$dir/k.data" -- "$kprog" getpid $kn)
ksys=$(min_ns_per_call 3 "$NEEDLE" record --sites=compiled --kernel=syscall -o "$dir/k.data" -- "$kprog" getpid $kn)
kbytes=$(python3 - "$dir/k.data" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off, nbytes, nev = 64, 0, 0
while off + 16 <= len(d):
    t, crc, n = struct.unpack_from('<IIQ', d, off)
    if t == 14:
        nbytes += 16 + n
        nev += struct.unpack_from('<I', d, off + 16 + 16)[0]
    off += 16 + n
print('%.1f' % (nbytes / nev) if nev else '')
PY
)
kperf=$(min_ns_per_call 3 perf trace -s -o "$dir/perf-trace.out" -- "$kprog" getpid $kn)
kstrace=$(min_ns_per_call 3 strace -c -f -o "$dir/strace.out" "$kprog" getpid $kn)
swplain=$(min_ns_per_call 3 taskset -c 0 "$kprog" switch $kn)
swnone=$(min_ns_per_call 3 taskset -c 0 "$NEEDLE" record --sites=compiled -o "$dir/k.data" -- "$kprog" switch $kn)
swk=$(min_ns_per_call 3 taskset -c 0 "$NEEDLE" record --sites=compiled --kernel=switch -o "$dir/k.data" -- "$kprog" switch $kn)
awk -v p="$kplain" -v n="$knone" -v k="$ksys" -v pt="$kperf" -v st="$kstrace" -v b="$kbytes" \
	-v sp="$swplain" -v sn="$swnone" -v sk="$swk" 'BEGIN {
	if (p != "") printf "getpid_untraced_ns %.3f\n", p
	if (n != "" && k != "") printf "kernel_syscall_record_ns_per_syscall %.3f\n", k - n
	if (p != "" && pt != "") printf "perf_trace_ns_per_syscall %.3f\n", pt - p
	if (p != "" && st != "") printf "strace_ns_per_syscall %.3f\n", st - p
	if (b != "") printf "kernel_bytes_per_event %s\n", b
	if (sn != "" && sk != "") printf "kernel_switch_record_ns_per_switch %.3f\n", sk - sn
	if (sp != "") printf "switch_untraced_ns %.3f\n", sp }' >>"$raw"
rm -f "$dir/k.data" "$dir/perf-trace.out" "$dir/strace.out"

note "bench: reader wake-up modes (system calls made by the traced program)"
for mode in wait poll=1 buffer-percent=50; do
	key=$(echo "$mode" | cut -d= -f1 | tr - _)
	"$NEEDLE" record --"$mode" --chunk-size=4 -o "$dir/mode.data" -- "$dir/../tests/progs/threads" 2 1000000 >/dev/null 2>&1
	"$NEEDLE" info -i "$dir/mode.data" | awk -v k="$key" '/^events:/ {e = $2} /^reader wakeups/ {w = $NF}
		END { printf "producer_syscalls_per_mevent_%s %.3f\n", k, w / (e / 1e6) }' >>"$raw"
done
rm -f "$dir/mode.data"

note "bench: exit hooks with many threads (enable with idle threads, first call, memory)"
[ "$(cat /proc/sys/kernel/pid_max)" -ge 200000 ] || echo 262144 >/proc/sys/kernel/pid_max 2>/dev/null
[ "$(cat /proc/sys/vm/max_map_count)" -ge 300000 ] || echo 524288 >/proc/sys/vm/max_map_count 2>/dev/null
for n in 1000 10000 100000; do
	"$dir/bench_threads" enable $n >>"$raw" 2>/dev/null || note "bench: could not run $n threads here"
done
"$dir/bench_threads" first >>"$raw"
"$dir/bench_threads" memory >>"$raw"

note "bench: probe throughput (the seed's table): RCU against the rwlock ablation"
for mode in nop nopctx ret; do
	for t in 1 2 4; do
		"$dir/bench_probe" $mode $t 1 >>"$raw"
		PROBE_VARIANT=rwlock LD_LIBRARY_PATH="$dir/../ablation" "$dir/bench_probe" $mode $t 1 >>"$raw"
	done
done
"$dir/bench_threads" sync >>"$raw"
if command -v bpftrace >/dev/null 2>&1; then
	timeout 120 bpftrace -e "uprobe:$dir/bench_probe:probe_target { @c = count(); }" \
		-c "$dir/bench_probe plain 1 1" 2>/dev/null | grep '^probe_plain' | sed 's/_rcu_/_uprobe_/' >>"$raw"
fi
"$dir/bench_rcu" >>"$raw"

note "bench: needle record -p on a running process (1k and 10k functions), and bpftrace -p with uprobes"
at="$dir/bench_attach_target"
atp=""
attach_target_start() {
	rm -f "$dir/attach.in"
	mkfifo "$dir/attach.in"
	"$at" <"$dir/attach.in" &
	atp=$!
	exec 8>"$dir/attach.in"
	sleep 0.3
}
attach_target_stop() {
	exec 8>&-
	wait $atp
	rm -f "$dir/attach.in"
}
# attach_once FILTERS...: one needle record -p; prints "first_ms hold_us detach_ms" from needle info.
attach_once() {
	"$NEEDLE" record -p $atp "$@" -o "$dir/attach.data" --duration=0.3 2>/dev/null || return 1
	"$NEEDLE" info -i "$dir/attach.data" | awk '
		/^first event:/ { f = $3 }
		/^held:/ { for (i = 1; i <= NF; i++) if ($i ~ /^ms[:;,]?$/ && h == "") h = $(i - 1) * 1000 }
		/^detach:/ { d = $2 }
		END { print (f == "" ? "-" : f), (h == "" ? "-" : h), (d == "" ? "-" : d) }'
}
# A figure needle info did not give is "-" (so that read keeps the fields apart) and is skipped.
min() { awk -v a="${1:-1e18}" -v b="$2" 'BEGIN {print (b != "" && b != "-" && b < a) ? b : a}'; }
max() { awk -v a="${1:-0}" -v b="$2" 'BEGIN {print (b != "" && b != "-" && b > a) ? b : a}'; }
hold_max=""
for n in 1k 10k; do
	if [ $n = 1k ]; then filt=(-F 'bench_?' -F 'bench_??' -F 'bench_???'); else filt=(-F 'bench_*'); fi
	cold="" warm="" det=""
	# Cold: a fresh process each time (dlopen, start-up, discovery); warm:
	# attaching again to one where libneedle is loaded and idle.
	for _ in 1 2 3; do
		attach_target_start
		read -r f h d < <(attach_once "${filt[@]}")
		cold=$(min "$cold" "$f"); hold_max=$(max "$hold_max" "$h"); det=$(min "$det" "$d")
		read -r f h d < <(attach_once "${filt[@]}")
		warm=$(min "$warm" "$f"); hold_max=$(max "$hold_max" "$h"); det=$(min "$det" "$d")
		attach_target_stop
	done
	echo "attach_first_event_ms_${n}_sites $cold" >>"$raw"
	echo "attach_first_event_ms_${n}_sites_warm $warm" >>"$raw"
	[ $n = 10k ] && echo "detach_ms_10k_sites $det" >>"$raw"
done
echo "attach_max_thread_hold_us $hold_max" >>"$raw"
attach_target_start
rss() { awk '/^VmRSS:/ { print $2 }' /proc/$atp/status; }
attach_once -F 'bench_*' >/dev/null
rss1=$(rss)
for _ in $(seq 2 100); do attach_once -F 'bench_*' >/dev/null; done
echo "reattach_rss_growth_kib_100_cycles $(($(rss) - rss1))" >>"$raw"
attach_target_stop
if command -v bpftrace >/dev/null 2>&1; then
	# The same 1,000 functions as uprobes: bpftrace's probe syntax has no
	# '?', so they are listed.  From the command's start to the first event.
	[ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	probes=$(seq 0 999 | sed "s|^|uprobe:$at:bench_|" | paste -sd,)
	attach_target_start
	t0=$(now_ns)
	BPFTRACE_MAX_PROBES=2000 timeout 900 bpftrace -p $atp -e "$probes { printf(\"first\\n\"); exit(); }" \
		>"$dir/bpftrace-attach.out" 2>&1
	t1=$(now_ns)
	attach_target_stop
	if grep -q '^first' "$dir/bpftrace-attach.out"; then
		awk -v ns=$((t1 - t0)) 'BEGIN { printf "bpftrace_attach_first_event_ms_1k_sites %.1f\n", ns / 1e6 }' >>"$raw"
	else
		note "bench: bpftrace -p could not attach 1,000 uprobes here ($(grep -v MEMLOCK "$dir/bpftrace-attach.out" | tail -1))"
	fi
fi

note "bench: relocated sites (functions no compiler prepared)"
best_key() { # best_key KEY N CMD...: the smallest value of KEY printed over N runs
	local key=$1 n=$2 b=""
	shift 2
	for _ in $(seq "$n"); do
		v=$("$@" 2>/dev/null | awk -v k="$key" '$1 == k {print $2}')
		[ -n "$v" ] && b=$(awk -v a="${b:-1e18}" -v v="$v" 'BEGIN {print (v < a) ? v : a}')
	done
	echo "$b"
}
rc=$(best_key relocated_count_handler_ns 3 env NEEDLE_SITES=all "$dir/bench_reloc" "$dir/libbench_reloc_count.so" count 20000000 "$dir/libbench_reloc_nop5.so")
[ -n "$rc" ] && echo "relocated_count_handler_ns $rc" >>"$raw"
for k in relocated_extra_floor_ns nop5_count_handler_ns_same_object relocated_count_ctx_handler_ns nop5_count_ctx_handler_ns_same_object; do
	v=$(best_key $k 3 env NEEDLE_SITES=all "$dir/bench_reloc" "$dir/libbench_reloc_count.so" count 20000000 "$dir/libbench_reloc_nop5.so")
	[ -n "$v" ] && echo "$k $v" >>"$raw"
done
for k in relocated_attach_10k_ms relocated_attach_10k_ms_with_decoding relocated_discover_10k_ms; do
	v=$(best_key $k 3 env NEEDLE_SITES=all "$dir/bench_reloc" "$dir/libbench_reloc_funcs.so" attach)
	[ -n "$v" ] && echo "$k $v" >>"$raw"
done
# Coverage: functions relocated / functions tried, from needle info.
coverage() { # coverage OBJECT-REGEX TRACE: percent, and the object's line into the refusal table
	"$NEEDLE" info -i "$2" | awk -v re="$1" '$1 ~ re && /relocated/ { print; exit }' >>"$dir/refusals.txt"
	"$NEEDLE" info -i "$2" | awk -v re="$1" '$1 ~ re && /relocated/ { for (i = 1; i <= NF; i++) if ($i == "relocated") { gsub(/[(%);]/, "", $(i + 1)); print $(i + 1); exit } }'
}
: >"$dir/refusals.txt"
"$NEEDLE" record --sites=all -o "$dir/reloc_libc.data" -- "$dir/../tests/relocate/libc_workload" >/dev/null 2>&1
v=$(coverage 'libc.so' "$dir/reloc_libc.data")
[ -n "$v" ] && echo "relocated_coverage_pct_libc $v" >>"$raw"
if [ -x /usr/bin/python3 ]; then
	printf 'import json, threading\nprint(json.dumps([threading.active_count()]))\n' >"$dir/reloc.py"
	"$NEEDLE" record --sites=all -o "$dir/reloc_py.data" -- /usr/bin/python3 "$dir/reloc.py" >/dev/null 2>&1
	v=$(coverage 'python3' "$dir/reloc_py.data")
	[ -n "$v" ] && echo "relocated_coverage_pct_python3 $v" >>"$raw"
fi
rm -f "$dir/reloc_libc.data" "$dir/reloc_py.data"
note "bench: the same 1,000 libc functions, relocated by needle and as bpftrace uprobes (about 2 minutes, at most 6)"
NEEDLE="$NEEDLE" timeout -k 30 420 "$(dirname "$0")/bench_libc_uprobes.sh" "$dir" >>"$raw"

# results.json: one flat object of the figures.
awk 'BEGIN { printf "{" } NR > 1 { printf "," } { printf "\n  \"%s\": %s", $1, $2 } END { print "\n}" }' \
	"$raw" >"$dir/results.json"

val() { awk -v k="$1" '$1 == k {print $2}' "$raw"; }
{
	printf '%-22s %12s  %s\n' "figure" "value" "goal / comparison"
	printf '%-22s %12s  %s\n' "attach_1k_ms" "$(val attach_1k_ms)" "1,000 sites, one batch"
	printf '%-22s %12s  %s\n' "attach_10k_ms" "$(val attach_10k_ms)" "goal < 5 ms"
	printf '%-22s %12s  %s\n' "detach_10k_ms" "$(val detach_10k_ms)" "one batch + one grace period"
	printf '%-22s %12s  %s\n' "syncs_per_batch" "$(val syncs_per_batch)" "goal 3 (1k batch: $(val syncs_per_batch_1k))"
	printf '%-22s %12s  %s\n' "untraced_call_ns" "$(val untraced_call_ns)" "the call itself"
	printf '%-34s %10s  %s\n' "attach_first_event_ms_1k_sites" "$(val attach_first_event_ms_1k_sites)" \
		"fresh process; bpftrace -p, same 1k as uprobes: $(val bpftrace_attach_first_event_ms_1k_sites) ms"
	printf '%-34s %10s  %s\n' "attach_first_event_ms_10k_sites" "$(val attach_first_event_ms_10k_sites)" \
		"again, libneedle already loaded: 1k $(val attach_first_event_ms_1k_sites_warm), 10k $(val attach_first_event_ms_10k_sites_warm)"
	printf '%-34s %10s  %s\n' "attach_max_thread_hold_us" "$(val attach_max_thread_hold_us)" "goal < 1000; nothing else stops"
	printf '%-34s %10s  %s\n' "detach_ms_10k_sites" "$(val detach_ms_10k_sites)" "one batch + grace period, measured by needle"
	printf '%-34s %10s  %s\n' "reattach_rss_growth_kib_100_cycles" "$(val reattach_rss_growth_kib_100_cycles)" "target RSS, cycle 100 - cycle 1"
	printf '%-22s %12s  %s\n' "count_handler_ns" "$(val count_handler_ns)" "an entry-only link (the probe path); goal < 3 ns (floor of repeated runs); a site's call of an empty C handler, nothing else: $(val handler_call_floor_ns); the same with the probe path's tests and every address an immediate (what a trampoline generated per consumer could reach): $(val probe_floor_ns)"
	printf '%-22s %12s  %s\n' "count_ctx_handler_ns" "$(val count_ctx_handler_ns)" "the same count through an ordinary entry handler (a needle_ctx, the full path)"
	printf '%-22s %12s  %s\n' "entry_exit_hook_ns" "$(val entry_exit_hook_ns)" "the same with the return hooked too, nothing recorded"
	printf '%-22s %12s  %s\n' "exit_site_hook_ns" "$(val exit_site_hook_ns)" "the same, the exit taken at the compiler's exit site instead (gcc -mrecord-return)"
	printf '%-34s %10s  %s\n' "count_direct_handler_ns" "$(val count_direct_handler_ns)" \
		"count_handler_ns through a direct handler (no ctx, general-purpose registers only); hooked return: $(val entry_exit_hook_direct_ns), at exit sites: $(val exit_site_hook_direct_ns)"
	printf '%-34s %10s  %s\n' "relocated_count_handler_ns" "$(val relocated_count_handler_ns)" \
		"same body relocated; goal within 1 ns of a NOP5 site: $(val nop5_count_handler_ns_same_object) in the same process; floor of the difference (detour jumps, r11, xmm8-15): $(val relocated_extra_floor_ns)"
	printf '%-34s %10s  %s\n' "relocated_attach_10k_ms" "$(val relocated_attach_10k_ms)" \
		"one batch; with discovery and decoding $(val relocated_attach_10k_ms_with_decoding) (goal < 50)"
	printf '%-34s %10s  %s\n' "relocated_coverage_pct_libc" "$(val relocated_coverage_pct_libc)" "goal >= 95; python3: $(val relocated_coverage_pct_python3)"
	# bench_libc_uprobes.sh: bpftrace / needle on the same 1,000 libc functions
	over() { awk -v n="$(val "$1")" -v b="$(val "$2")" -v gt="$3" 'BEGIN { if (n > 0 && b > 0) printf "%s%.0fx needle", gt, b / n; else print "n/a" }'; }
	gt="" ex=$(val libc_1k_bpftrace_exit_ms)
	[ "$(val libc_1k_bpftrace_attach_timed_out)" = 1 ] && gt="> "
	printf '%-34s %10s  %s\n' "libc_1k_needle_attach_ms" "$(val libc_1k_needle_attach_ms)" \
		"1,000 libc functions relocated, launch to main (the whole run with no loop: $(val libc_1k_needle_run_n0_ms) ms)"
	printf '%-34s %10s  %s\n' "libc_1k_bpftrace_attach_ms" "$(val libc_1k_bpftrace_attach_ms)" \
		"the same 1,000 as uprobes, launch to main: $(over libc_1k_needle_attach_ms libc_1k_bpftrace_attach_ms "$gt")${gt:+ (time limit reached, not attached)}${ex:+; exits $ex ms after the program}"
	printf '%-34s %10s  %s\n' "libc_1k_needle_hit_ns" "$(val libc_1k_needle_hit_ns)" \
		"per call of labs with the 1,000 traced; each call recorded (entry and exit)"
	printf '%-34s %10s  %s\n' "libc_1k_bpftrace_hit_ns" "$(val libc_1k_bpftrace_hit_ns)" \
		"its uprobe, counted: $(over libc_1k_needle_hit_ns libc_1k_bpftrace_hit_ns ""); labs begins with a mov, which the kernel single-steps (uprobe_count_ns: a nop, emulated)"
	u=$(val uprobe_count_ns)
	if [ -n "$u" ]; then
		ratio=$(awk -v u="$u" -v c="$(val count_handler_ns)" 'BEGIN { if (c > 0) printf "%.0fx needle", u / c; else print "n/a" }')
		printf '%-22s %12s  %s\n' "uprobe_count_ns" "$u" "kernel uprobe + bpftrace count: $ratio"
	fi
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else print "n/a" }'; }
	printf '%-34s %10s  %s\n' "graph_record_ns_per_call" "$(val graph_record_ns_per_call)" \
		"goal < 25; uftrace is $(ratio "$(val graph_record_ns_per_call)" "$(val uftrace_record_ns_per_call)") needle"
	printf '%-34s %10s  %s\n' "uftrace_record_ns_per_call" "$(val uftrace_record_ns_per_call)" "same binary (uftrace -P .)"
	printf '%-34s %10s  %s\n' "xray_fdr_record_ns_per_call" "$(val xray_fdr_record_ns_per_call)" \
		"the loop built with clang -fxray-instrument, XRay FDR mode: $(ratio "$(val graph_record_ns_per_call)" "$(val xray_fdr_record_ns_per_call)") needle"
	printf '%-34s %10s  %s\n' "xray_site_record_ns_per_call" "$(val xray_site_record_ns_per_call)" \
		"needle on that same XRay binary, through its entry, exit and tail-call sleds; XRay FDR adds $(ratio "$(val xray_site_record_ns_per_call)" "$(val xray_fdr_record_ns_per_call)") as much"
	printf '%-34s %10s  %s\n' "exit_site_record_ns_per_call" "$(val exit_site_record_ns_per_call)" \
		"the loop built with gcc's exit sites (-minstrument-return=nop5 -mrecord-return); the same binary with the return hook instead: $(val exit_site_binary_return_hook_record_ns_per_call)"
	printf '%-34s %10s  %s\n' "snapshot_record_ns_per_call" "$(val snapshot_record_ns_per_call)" \
		"the flight recorder (--snapshot=16, nothing drained); streaming: $(val graph_record_ns_per_call); NEEDLE_GRAPH_ASM=0 (the recorder's calls in C): $(val snapshot_record_c_path_ns_per_call)"
	printf '%-34s %10s  %s\n' "graph_record_to_floor_ratio" "$(val graph_record_to_floor_ratio)" \
		"graph_record_ns_per_call over floor_hooks_ring_ns_per_call, this run (goal <= 1.4)"
	printf '%-34s %10s  %s\n' "graph_record_full_path_ns_per_call" "$(val graph_record_full_path_ns_per_call)" \
		"NEEDLE_DIRECT=0: every call through the full path (ctx, consumer list); flight recorder: $(val snapshot_record_full_path_ns_per_call)"
	printf '%-34s %10s  %s\n' "graph_record_hijacked_ns_per_call" "$(val graph_record_hijacked_ns_per_call)" \
		"NEEDLE_CALLING=0: the direct path hijacks the return instead of calling the function; flight recorder: $(val snapshot_record_hijacked_ns_per_call)"
	printf '%-34s %10s  %s\n' "exit_site_snapshot_record_ns_per_call" "$(val exit_site_snapshot_record_ns_per_call)" \
		"the exit-site build in the flight recorder: no hijacked return to mispredict"
	printf '%-34s %10s  %s\n' "relocated_record_ns_per_call" "$(val relocated_record_ns_per_call)" \
		"the loop built without flags (a relocated entry); goal within 10% of graph_record_ns_per_call; NEEDLE_CALLING=0: $(val relocated_record_hijacked_ns_per_call)"
	printf '%-34s %10s  %s\n' "libcall_snapshot_ns_per_call" "$(val libcall_snapshot_ns_per_call)" \
		"labs called from a program built without flags, recorded as a library call (flight recorder); full path: $(val libcall_snapshot_full_path_ns_per_call)"
	printf '%-34s %10s  %s\n' "sqlite_floor_ns_per_call" "$(val sqlite_floor_ns_per_call)" \
		"SQLite speedtest1 --size 10 ($(val sqlite_calls) calls, $(val sqlite_untraced_s) s untraced): the floor's hooks"
	printf '%-34s %10s  %s\n' "sqlite_snapshot_ns_per_call" "$(val sqlite_snapshot_ns_per_call)" \
		"needle --snapshot=4: $(ratio "$(val sqlite_floor_ns_per_call)" "$(val sqlite_snapshot_ns_per_call)") the floor (goal <= 1.2x); full path: $(val sqlite_snapshot_full_path_ns_per_call); returns hijacked: $(val sqlite_snapshot_hijacked_ns_per_call) (a hijacked return by itself, bench_floor: $(val return_hook_floor_ns))"
	printf '%-34s %10s  %s\n' "sqlite_record_ns_per_call" "$(val sqlite_record_ns_per_call)" \
		"needle streaming to tmpfs: $(ratio "$(val sqlite_floor_ns_per_call)" "$(val sqlite_record_ns_per_call)") the floor (goal <= 1.5x)"
	printf '%-34s %10s  %s\n' "sqlite_uftrace_ns_per_call" "$(val sqlite_uftrace_ns_per_call)" \
		"uftrace --no-libcall -P .: needle's flight recorder is $(ratio "$(val sqlite_uftrace_ns_per_call)" "$(val sqlite_snapshot_ns_per_call)") of it (goal <= 0.25)"
	printf '%-34s %10s  %s\n' "args_int2_record_ns_per_call" "$(val args_int2_record_ns_per_call)" \
		"two integer arguments captured (-A); the same function recorded without: $(val args_none_record_ns_per_call), so the capture adds $(val args_int2_added_ns) (goal < 3; in the flight recorder, no drain: $(val args_int2_added_snapshot_ns)); uftrace -A: $(val uftrace_args_int2_record_ns_per_call)"
	printf '%-34s %10s  %s\n' "args_str16_record_ns_per_call" "$(val args_str16_record_ns_per_call)" \
		"a 16-byte string argument captured (/s, safe_copy_str); recorded without: $(val args_str_none_record_ns_per_call), so the string adds $(val args_str16_added_ns) (goal < 15); uftrace -A /s: $(val uftrace_args_str16_record_ns_per_call)"
	printf '%-34s %10s  %s\n' "trigger_check_ns" "$(val trigger_check_ns)" \
		"what a duration trigger (never firing) adds to a call of the watched function"
	printf '%-34s %10s  %s\n' "snapshot_copy_ms_64mib" "$(val snapshot_copy_ms_64mib)" \
		"copying a full 64 MiB buffer out of the running program's rings"
	for m in untraced wait poll buffer_percent snapshot; do
		printf '%-34s %10s  %s\n' "iter_p99_us_$m" "$(val iter_p99_us_$m)" \
			"p99.9 $(val iter_p999_us_$m), worst $(val iter_max_us_$m) us per 50-call iteration"
	done
	printf '%-34s %10s  %s\n' "floor_hooks_ring_ns_per_call" "$(val floor_hooks_ring_ns_per_call)" \
		"the floor: compiler hooks storing {address, rdtsc} twice per call into a 1 MiB ring never drained (funtrace's design); rdtsc alone: $(val rdtsc_ns) ns"
	printf '%-34s %10s  %s\n' "bytes_per_call" "$(val bytes_per_call)" \
		"goal <= 8; uftrace writes $(ratio "$(val bytes_per_call)" "$(val uftrace_bytes_per_call)") as much"
	printf '%-34s %10s  %s\n' "uftrace_bytes_per_call" "$(val uftrace_bytes_per_call)" ""
	printf '%-34s %10s  %s\n' "zlib_small_ratio_to_uftrace" "$(val zlib_small_ratio_to_uftrace || true)" \
		"needle's added time over uftrace's, zlib on small buffers: $(val graph_record_ns_per_call_zlib_small) against $(val uftrace_record_ns_per_call_zlib_small) ns per call; goal <= 0.25"
	printf '%-34s %10s  %s\n' "lua_ratio_to_uftrace" "$(val lua_ratio_to_uftrace || true)" \
		"the same for Lua 5.4 (bench_lua.lua): $(val graph_record_ns_per_call_lua) against $(val uftrace_record_ns_per_call_lua) ns per call; goal <= 0.25"
	printf '%-34s %10s  %s\n' "graph_record_ns_per_call_zlib" "$(val graph_record_ns_per_call_zlib || true)" \
		"$(val zlib_calls) calls; uftrace is $(ratio "$(val graph_record_ns_per_call_zlib)" "$(val uftrace_record_ns_per_call_zlib)") needle"
	printf '%-34s %10s  %s\n' "uftrace_record_ns_per_call_zlib" "$(val uftrace_record_ns_per_call_zlib)" ""
	printf '%-34s %10s  %s\n' "bytes_per_call_zlib" "$(val bytes_per_call_zlib)" ""
	printf '%-34s %10s  %s\n' "kernel_syscall_record_ns_per_syscall" "$(val kernel_syscall_record_ns_per_syscall)" \
		"--kernel=syscall, added per getpid (untraced $(val getpid_untraced_ns)); goal below perf trace -s: $(val perf_trace_ns_per_syscall), strace -c -f: $(val strace_ns_per_syscall)"
	printf '%-34s %10s  %s\n' "kernel_switch_record_ns_per_switch" "$(val kernel_switch_record_ns_per_switch)" \
		"--kernel=switch, added per context switch (two threads on one CPU; untraced $(val switch_untraced_ns) per switch)"
	printf '%-34s %10s  %s\n' "kernel_bytes_per_event" "$(val kernel_bytes_per_event)" "in the file, KERNEL sections"
	printf '%-34s %10s  %s\n' "producer_syscalls_per_mevent_wait" "$(val producer_syscalls_per_mevent_wait)" "at most one per chunk"
	printf '%-34s %10s  %s\n' "producer_syscalls_per_mevent_poll" "$(val producer_syscalls_per_mevent_poll)" "goal 0"
	printf '%-34s %10s  %s\n' "producer_syscalls_per_mevent_buffer_percent" "$(val producer_syscalls_per_mevent_buffer_percent)" "50%"
	printf '%-34s %10s  %s\n' "export_perfetto_s_per_mevent" "$(val export_perfetto_s_per_mevent)" ""
	printf '%-34s %10s  %s\n' "export_pprof_s_per_mevent" "$(val export_pprof_s_per_mevent)" "50M events, 1,000 deep: every call stack a sample"
	printf '%-34s %10s  %s\n' "export_ctf_s_per_mevent" "$(val export_ctf_s_per_mevent)" "50M events, 1,000 deep"
	printf '%-34s %10s  %s\n' "export_otlp_s_per_mevent" "$(val export_otlp_s_per_mevent)" "50M events, 1,000 deep: every call a span"
	printf '%-34s %10s  %s\n' "trigger_paused_ns_per_call" "$(val trigger_paused_ns_per_call)" \
		"a call while --signal/--disable has the recording paused (not hooked), over the untraced loop"
	for a in depth time hide filter notrace trace_off finish; do
		printf '%-34s %10s  %s\n' "trigger_${a}_ns" "$(val trigger_${a}_ns)" \
			"replay -T recurse@$a, ns per event (replay alone: $(awk -v v="$(val view_s_per_mevent_replay)" 'BEGIN { printf "%.1f", v * 1000 }'))"
	done
	printf '%-34s %10s  %s\n' "otlp_stream_ns_per_span" "$(val otlp_stream_ns_per_span)" \
		"record --otlp-endpoint, a span per call, over recording alone; $(val otlp_stream_spans_sent_pct)% sent, the rest dropped"
	printf '%-34s %10s  %s\n' "script_s_per_10mevent" "$(val script_s_per_10mevent)" \
		"needle script, empty uftrace_entry/exit, 10M events 1,000 deep (goal < 10 s); a Python loop over events(): $(val python_loop_s_per_10mevent) s"
	printf '%-34s %10s  %s\n' "tui_first_screen_ms" "$(val tui_first_screen_ms)" \
		"needle tui on a pty: its first screen of calls (goal < 1000 ms), 50M events, 1,000 deep"
	for v in replay report folded perfetto chrome pprof otlp ctf graph tui; do
		printf '%-34s %10s  %s\n' "view_s_per_mevent_$v" "$(val view_s_per_mevent_$v)" \
			"50M events, 1,000 deep; peak RSS $(val view_max_rss_kib_$v) KiB"
	done
	printf '%-34s %10s  %s\n' "graph_enable_ms_1k_threads" "$(val graph_enable_ms_1k_threads)" ""
	printf '%-34s %10s  %s\n' "graph_enable_ms_10k_threads" "$(val graph_enable_ms_10k_threads)" ""
	printf '%-34s %10s  %s\n' "graph_enable_ms_100k_threads" "$(val graph_enable_ms_100k_threads)" \
		"goal < 10 ms and within 2x of 1k: $(ratio "$(val graph_enable_ms_1k_threads)" "$(val graph_enable_ms_100k_threads)")"
	printf '%-34s %10s  %s\n' "first_call_ns" "$(val first_call_ns)" \
		"a thread's first traced call, state included ($(val first_call_extra_ns) ns more than its second)"
	printf '%-34s %10s  %s\n' "shadow_bytes_per_thread" "$(val shadow_bytes_per_thread)" "resident, per thread with a traced call"
	echo
	printf '%-10s %8s %14s %14s %14s %14s\n' "probe" "threads" "rcu M/s" "per thread" "rwlock M/s" "per thread"
	for mode in nop nopctx ret; do
		for t in 1 2 4; do
			printf '%-10s %8s %14s %14s %14s %14s\n' "probe_$mode" "$t" \
				"$(val probe_${mode}_rcu_mps_${t}t)" "$(val probe_${mode}_rcu_mps_${t}t_per_thread)" \
				"$(val probe_${mode}_rwlock_mps_${t}t)" "$(val probe_${mode}_rwlock_mps_${t}t_per_thread)"
		done
	done
	printf '%-10s %8s %14s  %s\n' "uprobe" 1 "$(val probe_plain_uprobe_mps_1t)" \
		"kernel uprobe on probe_target of the same binary, counted by bpftrace (reference)"
	printf '%-34s %10s  %s\n' "needle_rcu_read_ns" "$(val needle_rcu_read_ns)" \
		"read section, inlined; liburcu-bp through its .so: $(val liburcu_bp_read_ns) ns"
	printf '%-34s %10s  %s\n' "synchronize_ns" "$(val synchronize_ns)" "one grace period, 1,000 idle threads; goal < 100000"
	echo
	echo "relocation refusals by reason (needle info):"
	cat "$dir/refusals.txt" 2>/dev/null
} | tee "$dir/results.txt"
echo "wrote $dir/results.json"
