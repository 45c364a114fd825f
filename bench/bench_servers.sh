#!/usr/bin/env bash
# bench_servers.sh BENCH_DIR - the attach scenarios of tests/servers
# (redis-server, nginx, memcached, PostgreSQL 15 as Debian ships them,
# under a closed-loop load), measured: prints "key value" lines, writes
# them to BENCH_DIR/servers_raw.txt and merges them into
# BENCH_DIR/results.json.  Takes 4-6 minutes on 2 cores: `make
# bench-servers`, not part of `make bench`.
#
#   servers_attach_ok_pct        attaches that recorded (exit 0), all servers
#   servers_failed_requests      load requests answered wrong or not at all
#   servers_hold_us_p99/_max     longest hold of a thread per attach (needle info "held:")
#   servers_first_event_ms_p50/_max  needle record -p start to the first
#                                event (needle info "first event:"), default attaches
#   servers_detach_ms_max        needle info "detach:"
#   servers_client_p999_ms_during_vs_before  client p99.9 latency while
#                                attached to, over before (the worst server)
#   idle_nginx_attach_ms         an nginx worker with no traffic: needle
#                                record -p started to "recording process"
#   stop_floor_{idle,loaded}_us_{p50,p99,max}  no needle: how long a
#                                running thread takes to enter a signal
#                                handler after tgkill, the floor under
#                                every stop (bench_stop_floor.c)
# A figure with no sample (every attach refused) is left out, and said so.
set -u
dir=$(mkdir -p "${1:-build/bench}" && cd "${1:-build/bench}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export NEEDLE_BUILD=${NEEDLE_BUILD:-$(cd "$dir/.." && pwd)}
m="$dir/servers_metrics.txt"
raw="$dir/servers_raw.txt"
: >"$m"
: >"$raw"
for s in redis nginx memcached postgres; do
	printf 'bench: servers: %s\n' "$s" >&2
	SERVERS_METRICS="$m" timeout -k 10 300 bash "$here/../tests/servers/test_$s.sh" >"$dir/servers_$s.log" 2>&1
done

# f(NAME): the value after NAME on an "attach" line ("-": none).
awk '
function f(name,   i) { for (i = 1; i < NF; i++) if ($i == name) return $(i + 1) == "-" ? "" : $(i + 1); return "" }
function pct(a, n, p,   i, j, t) { # a[1..n] sorted in place, then the p-th percentile
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	i = int(p * n + 0.999999); if (i < 1) i = 1; if (i > n) i = n; return a[i] }
$1 == "attach" {
	total++
	if (f("rc") != "0") next
	ok++
	if ((h = f("hold_ms")) != "") hold[++nh] = h * 1000
	if ($3 ~ /^default/ && (e = f("first_ms")) != "") first[++nf] = e + 0
	if ((d = f("detach_ms")) != "" && (!hasd || d + 0 > dmax)) { dmax = d + 0; hasd = 1 }
	if ($2 == "nginx" && $3 == "idle" && f("ready_ms") != "") idle = f("ready_ms")
}
$1 == "load" && $3 == "phase" { failed += $8; p999[$2, $4] = $14 }
$1 == "load" && $3 == "phase" && $4 == 0 { srv[$2] = 1 }
END {
	if (total) printf "servers_attach_ok_pct %.1f\n", 100 * ok / total
	printf "servers_failed_requests %d\n", failed
	if (nh) { printf "servers_hold_us_p99 %.0f\n", pct(hold, nh, .99); printf "servers_hold_us_max %.0f\n", hold[nh] }
	if (nf) { printf "servers_first_event_ms_p50 %.3f\n", pct(first, nf, .5); printf "servers_first_event_ms_max %.3f\n", first[nf] }
	if (hasd) printf "servers_detach_ms_max %.3f\n", dmax
	r = ""
	for (s in srv) if (p999[s, 0] > 0 && p999[s, 1] > 0) { q = p999[s, 1] / p999[s, 0]; if (r == "" || q > r) r = q }
	if (r != "") printf "servers_client_p999_ms_during_vs_before %.3f\n", r
	if (idle != "") printf "idle_nginx_attach_ms %s\n", idle
}' "$m" >"$raw"

# The floor under a stop's hold, without needle: tgkill to a running
# thread's handler, idle and with every CPU busy (bench_stop_floor.c).
floor_prog="$dir/bench_stop_floor"
[ -x "$floor_prog" ] && "$floor_prog" 500 >>"$raw"

for k in servers_attach_ok_pct servers_failed_requests servers_hold_us_p99 servers_hold_us_max \
	servers_first_event_ms_p50 servers_first_event_ms_max servers_detach_ms_max \
	servers_client_p999_ms_during_vs_before idle_nginx_attach_ms; do
	grep -q "^$k " "$raw" || printf 'bench: servers: %s left out: no attach recorded it (see %s)\n' "$k" "$m" >&2
done
cat "$raw"

# Merged into results.json: its keys, with these replaced or added.
res="$dir/results.json"
python3 - "$res" "$raw" <<'PY'
import json, os, sys
res, raw = sys.argv[1], sys.argv[2]
d = json.load(open(res)) if os.path.exists(res) else {}
for line in open(raw):
    k, v = line.split()
    d[k] = float(v)
json.dump(d, open(res + ".tmp", "w"), indent=2)
os.rename(res + ".tmp", res)
PY

# And a part of the readable table, each figure beside its goal.
txt="$dir/results.txt"
{
	echo
	echo "Debian's servers (redis, nginx, memcached, postgres) under load, attached to:"
	v() { awk -v k="$1" '$1 == k {print $2}' "$raw"; }
	printf '%-40s %10s  %s\n' servers_attach_ok_pct "$(v servers_attach_ok_pct)" "goal 100"
	printf '%-40s %10s  %s\n' servers_failed_requests "$(v servers_failed_requests)" "goal 0"
	printf '%-40s %10s  %s\n' servers_hold_us_p99 "$(v servers_hold_us_p99)" "goal < 1000"
	printf '%-40s %10s  %s\n' servers_hold_us_max "$(v servers_hold_us_max)" "goal < 5000"
	printf '%-40s %10s  %s\n' servers_first_event_ms_p50 "$(v servers_first_event_ms_p50)" ""
	printf '%-40s %10s  %s\n' servers_first_event_ms_max "$(v servers_first_event_ms_max)" "goal <= 300"
	printf '%-40s %10s  %s\n' servers_detach_ms_max "$(v servers_detach_ms_max)" "goal <= 100"
	printf '%-40s %10s  %s\n' servers_client_p999_ms_during_vs_before "$(v servers_client_p999_ms_during_vs_before)" \
		"client p99.9 latency attached / before"
	printf '%-40s %10s  %s\n' idle_nginx_attach_ms "$(v idle_nginx_attach_ms)" "goal < 2000"
	printf '%-40s %10s  %s\n' stop_floor_idle_us_p99 "$(v stop_floor_idle_us_p99)" "no needle: tgkill to a running thread's handler"
	printf '%-40s %10s  %s\n' stop_floor_loaded_us_p50 "$(v stop_floor_loaded_us_p50)" "the same, two busy threads per CPU"
	printf '%-40s %10s  %s\n' stop_floor_loaded_us_p99 "$(v stop_floor_loaded_us_p99)" "the same, two busy threads per CPU"
} | tee -a "$txt"
