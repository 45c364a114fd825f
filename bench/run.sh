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
	printf '%-22s %12s  %s\n' "count_handler_ns" "$(val count_handler_ns)" "goal < 3 ns (floor of repeated runs)"
	u=$(val uprobe_count_ns)
	if [ -n "$u" ]; then
		ratio=$(awk -v u="$u" -v c="$(val count_handler_ns)" 'BEGIN { if (c > 0) printf "%.0fx needle", u / c; else print "n/a" }')
		printf '%-22s %12s  %s\n' "uprobe_count_ns" "$u" "kernel uprobe + bpftrace count: $ratio"
	fi
} | tee "$dir/results.txt"
echo "wrote $dir/results.json"
