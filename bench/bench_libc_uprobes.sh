#!/usr/bin/env bash
# bench_libc_uprobes.sh BENCH_DIR - needle's relocated sites against
# bpftrace's uprobes on the same 1,000 functions of the C library, traced in
# the same program (bench_libc_hits): time to attach, and the cost each
# call of one hot function (labs) pays.  Prints "key value" lines on
# stdout (bench/run.sh appends them to its raw file), notes on stderr.
#
#   libc_1k_needle_attach_ms    launch to main, needle record --sites=all
#                               -F (the 1,000), minus the same untraced (the
#                               agent discovers, decodes and patches from its
#                               constructor, before main); floor of 3 runs
#   libc_1k_needle_run_n0_ms    the whole run with no timed loop, traced
#                               minus untraced (start-up, attach, detach,
#                               trace file); floor of 3 runs
#   libc_1k_needle_hit_ns       ns per labs call, traced minus untraced.
#                               needle record has no count-only mode: each
#                               call is recorded (entry and exit events, the
#                               function_graph tracer), so this is the cost
#                               of recording a call; floor of 3 runs
#   libc_1k_bpftrace_attach_ms  launch to main, bpftrace -c with the 1,000
#                               uprobes and "@[probe] = count();", minus the
#                               same untraced (bpftrace execs the program
#                               once every probe is attached); one run
#   libc_1k_bpftrace_hit_ns     ns per labs call, traced minus untraced;
#                               floor of 3 timed rounds in that one run (an
#                               attach can take minutes)
#   libc_1k_bpftrace_exit_ms   from the program's exit to bpftrace's: it
#                               detaches the 1,000 uprobes
#   libc_1k_bpftrace_attach_timed_out  1 when bpftrace had not attached
#                               within its time limit, which is then
#                               written as libc_1k_bpftrace_attach_ms
#
# bpftrace (0.17) opens its uprobes for every process (pid -1, even with
# -p): on the system's libc they would trap in every program on the
# machine, bpftrace itself included.  So the program runs with a private
# copy of libc (same bytes, same build ID, so the same debug symbols), a
# file no other process maps; needle and the untraced runs use it too.
#
# The whole script stays within about 6 minutes (BENCH_LIBC_LIMIT_S).
set -u
dir=$(cd "${1:-build/bench}" && pwd)
NEEDLE=${NEEDLE:-$dir/../needle}
prog="$dir/bench_libc_hits"
work="$dir/libc_uprobes"
limit=${BENCH_LIBC_LIMIT_S:-360}
start_s=$SECONDS
calls=10000000
# Per round under bpftrace: labs begins with a mov, which the kernel
# single-steps out of line (a nop or a push it would emulate), so that a
# hit costs microseconds.
bt_calls=200000
hot=labs
mkdir -p "$work"

note() { printf 'bench_libc_uprobes: %s\n' "$*" >&2; }
now_ns() { date +%s%N; }
min() { awk -v a="${1:-1e18}" -v b="$2" 'BEGIN {print (b != "" && b + 0 < a + 0) ? b : a}'; }
# launch_ms CMD...: from just before the launch to main's first line, in ms.
launch_ms() {
	local t0 m
	t0=$(now_ns)
	m=$("$@" 2>/dev/null | awk '$1 == "main_realtime_ns" {print $2}')
	[ -n "$m" ] && awk -v a="$t0" -v b="$m" 'BEGIN { printf "%.3f\n", (b - a) / 1e6 }'
}
# wall_ms CMD...: the whole run, in ms.
wall_ms() {
	local t0 t1
	t0=$(now_ns)
	"$@" >/dev/null 2>&1 || return 1
	t1=$(now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e6 }'
}
ns_per_call() { "$@" 2>/dev/null | awk '$1 == "ns_per_call" {print $2}'; }
floor3() { # floor3 FUNC CMD...: the smallest of 3 runs' values
	local f=$1 b="" v
	shift
	for _ in 1 2 3; do
		v=$("$f" "$@" | head -1)
		b=$(min "$b" "$v")
	done
	[ "$b" = 1e18 ] || echo "$b"
}

for tool in bpftrace python3 readelf; do
	command -v $tool >/dev/null 2>&1 || { note "$tool not installed; nothing measured"; exit 0; }
done
mkdir -p "$work/lib"
cp -L "$(ldd "$prog" | awk '$1 ~ /^libc\.so/ {print $3}')" "$work/lib/"
libc=$(LD_LIBRARY_PATH="$work/lib" ldd "$prog" | awk '$1 ~ /^libc\.so/ {print $3}')
case $libc in
"$work/lib/"*) ;;
*) note "the program does not load the copy of libc ($libc); nothing measured"; exit 0 ;;
esac
private=(env LD_LIBRARY_PATH="$work/lib")

# ---- the 1,000 functions ----
# Every function needle relocates in this program's libc, as named in the
# trace's site table (a run without -F traces them all).
"${private[@]}" "$NEEDLE" record --sites=all -o "$work/sites.data" --force -- "$prog" 0 >/dev/null 2>&1
buildid=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ {print $3}')
debug="/usr/lib/debug/.build-id/${buildid:0:2}/${buildid:2}.debug"
[ -n "$buildid" ] && [ -e "$debug" ] || debug=""
[ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
bpftrace -l "uprobe:$libc:*" >"$work/bpftrace.list" 2>/dev/null

# A name qualifies when needle relocates it in libc; bpftrace lists it;
# it names one function in the whole process (so that -F matches nothing
# in the program or in libneedle's own libraries, which needle traces too)
# and every libc symbol of that name (symbol table and debug file) is a
# plain function at the address needle patches.  That last test drops
# IFUNCs: bpftrace would probe the resolver, needle the variant the
# resolver chose (so the string and memory functions that both the agent
# and the program call are out), and static functions whose name several
# share.  The kernel refuses a uprobe (ENOTSUPP) on an instruction with
# a VEX prefix, which starts the AVX2 string functions, or a lock or
# segment prefix: such functions are out too (their first bytes are read
# from the file).  Excluded besides, as calls in the measured window: the
# timer (clock_gettime, twice a round) and syscall (the agent's futex
# wake, once per 2,000 events); neither is among the first names anyway.
python3 - "$work/sites.data" "$libc" "$debug" "$work/bpftrace.list" "$hot" \
	clock_gettime __clock_gettime syscall >"$work/candidates.txt" <<'EOF'
import collections, os, struct, subprocess, sys
trace, libc, debug, btlist, hot = sys.argv[1:6]
excluded = set(sys.argv[6:])
d = open(trace, 'rb').read()
off, mods, sites = 64, {}, []
while off + 16 <= len(d):
    typ, _, n = struct.unpack_from('<IIQ', d, off)
    p = d[off + 16:off + 16 + n]
    off += 16 + n
    if typ == 3:    # SEC_MODULE: u32 index, path
        mods[struct.unpack_from('<I', p)[0]] = p[4:].decode()
    elif typ == 4:  # SEC_SITES: u32 id, u32 module, u64 ip, u16 length, name
        q = 0
        while q < len(p):
            _, mod, ip, nl = struct.unpack_from('<IIQH', p, q)
            sites.append((mod, ip, p[q + 18:q + 18 + nl].decode()))
            q += 18 + nl
names = collections.Counter(name for _, _, name in sites)
syms = collections.defaultdict(set)
for f in filter(None, (libc, debug)):
    for line in subprocess.run(['readelf', '-sW', f], capture_output=True, text=True).stdout.splitlines():
        w = line.split()
        if len(w) == 8 and w[3] in ('FUNC', 'IFUNC') and w[6] != 'UND':
            syms[w[7].split('@')[0]].add((int(w[1], 16), w[3]))
image = open(libc, 'rb').read()
loads = []  # (vaddr, file offset, size) of each PT_LOAD
for line in subprocess.run(['readelf', '-lW', libc], capture_output=True, text=True).stdout.splitlines():
    w = line.split()
    if w and w[0] == 'LOAD':
        loads.append((int(w[2], 16), int(w[1], 16), int(w[4], 16)))
def uprobe_refuses(vaddr):
    off = [o + vaddr - v for v, o, n in loads if v <= vaddr < v + n][0]
    i = off
    while image[i] in (0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3):
        if image[i] in (0x26, 0x2e, 0x36, 0x3e, 0xf0):
            return True
        i += 1
    return image[i] in (0xc4, 0xc5)
listed = {l.strip().rsplit(':', 1)[1] for l in open(btlist) if '@' not in l}
libc_sites = [(ip, name) for mod, ip, name in sites
              if os.path.realpath(mods.get(mod, '')) == os.path.realpath(libc)]
hot_ip = [ip for ip, name in libc_sites if name == hot]
hot_sym = [v for v, t in syms.get(hot, ()) if t == 'FUNC']
if not hot_ip or not hot_sym:
    sys.exit('%s is not relocated in %s' % (hot, libc))
base = hot_ip[0] - hot_sym[0]
for ip, name in libc_sites:
    if names[name] == 1 and name in listed and name not in excluded and \
            syms.get(name) == {(ip - base, 'FUNC')} and not uprobe_refuses(ip - base):
        print(name)
EOF
if ! grep -qx "$hot" "$work/candidates.txt"; then
	note "$hot is not among the functions both can trace; nothing measured"
	exit 0
fi
# The first 999 by name (bytewise), and the hot function.
{ echo "$hot"; grep -vx "$hot" "$work/candidates.txt" | LC_ALL=C sort | head -999; } | LC_ALL=C sort >"$work/funcs.txt"
nfuncs=$(wc -l <"$work/funcs.txt")
note "$nfuncs functions of $libc ($(wc -l <"$work/candidates.txt") qualify): $(head -1 "$work/funcs.txt") .. $(tail -1 "$work/funcs.txt")"

# ---- untraced ----
plain_launch=$(floor3 launch_ms "${private[@]}" "$prog" 0)
plain_wall=$(floor3 wall_ms "${private[@]}" "$prog" 0)
plain_ns=$(floor3 ns_per_call "${private[@]}" "$prog" $calls)

# ---- needle ----
# -P NAME@libc: patch exactly these, as functions of their own (an -F
# would open a subtree under each and patch all of libc to follow it), and
# no other library call: the 1,000 sites bpftrace gets as uprobes.
filters=()
while read -r f; do filters+=(-P "$f@${libc##*/}"); done <"$work/funcs.txt"
rec=("${private[@]}" "$NEEDLE" record --sites=all --no-libcall "${filters[@]}" --force -o "$work/needle.data" --)
n_launch=$(floor3 launch_ms "${rec[@]}" "$prog" 0)
n_wall=$(floor3 wall_ms "${rec[@]}" "$prog" 0)
traced=$("$NEEDLE" info -i "$work/needle.data" | awk '/^sites:/ {print $4}')
[ "$traced" = "$nfuncs" ] || note "needle traced $traced sites, not $nfuncs"
n_ns=$(floor3 ns_per_call "${rec[@]}" "$prog" $calls)
lost=$("$NEEDLE" info -i "$work/needle.data" | awk '/^lost events:/ {print $3}')
[ "${lost:-0}" = 0 ] || note "needle dropped $lost events in the last run: its hit cost is understated"
rm -f "$work/needle.data"
[ -n "$plain_launch" ] && [ -n "$n_launch" ] &&
	awk -v p="$plain_launch" -v t="$n_launch" 'BEGIN { printf "libc_1k_needle_attach_ms %.1f\n", t - p }'
[ -n "$plain_wall" ] && [ -n "$n_wall" ] &&
	awk -v p="$plain_wall" -v t="$n_wall" 'BEGIN { printf "libc_1k_needle_run_n0_ms %.1f\n", t - p }'
[ -n "$plain_ns" ] && [ -n "$n_ns" ] &&
	awk -v p="$plain_ns" -v t="$n_ns" 'BEGIN { printf "libc_1k_needle_hit_ns %.3f\n", t - p }'

# ---- bpftrace ----
probes=$(sed "s|^|uprobe:$libc:|" "$work/funcs.txt" | paste -sd,)
# What is left of the budget, less the time bpftrace takes to exit: the
# kernel removes each uprobe in about 0.1 s here, one after the other, and
# a bpftrace killed while attaching still removes those it attached.
bt_limit=$((limit - (SECONDS - start_s) - nfuncs * 15 / 100 - 10))
[ $bt_limit -gt 30 ] || bt_limit=30
out="$work/bpftrace.out"
# @[probe] makes bpftrace compile one BPF program per probe (the key
# differs), hence its program limit too.
t0=$(now_ns)
BPFTRACE_MAX_PROBES=2000 BPFTRACE_MAX_BPF_PROGS=2000 timeout -k 10 $bt_limit bpftrace -e "$probes { @[probe] = count(); }" \
	-c "$(command -v env) LD_LIBRARY_PATH=$work/lib $prog $bt_calls 3" >"$out" 2>&1
bt_rc=$?
t1=$(now_ns)
m=$(awk '$1 == "main_realtime_ns" {print $2; exit}' "$out")
if [ -n "$m" ] && [ -n "$plain_launch" ]; then
	awk -v a="$t0" -v b="$m" -v p="$plain_launch" 'BEGIN { printf "libc_1k_bpftrace_attach_ms %.1f\n", (b - a) / 1e6 - p }'
	e=$(awk '$1 == "end_realtime_ns" {print $2}' "$out")
	[ -n "$e" ] && [ $bt_rc -eq 0 ] &&
		awk -v e="$e" -v t="$t1" 'BEGIN { printf "libc_1k_bpftrace_exit_ms %.1f\n", (t - e) / 1e6 }'
	b_ns=$(awk '$1 == "ns_per_call" {print $2}' "$out" | sort -g | head -1)
	if [ -n "$b_ns" ] && [ -n "$plain_ns" ]; then
		awk -v p="$plain_ns" -v t="$b_ns" 'BEGIN { printf "libc_1k_bpftrace_hit_ns %.3f\n", t - p }'
	else
		note "bpftrace attached but the program did not finish a round within ${bt_limit} s"
	fi
	# The hot function's count: every call was probed.
	hits=$(awk -v p="uprobe:$libc:$hot]:" '$1 == "@[" p {print $2}' "$out")
	[ "${hits:-0}" -ge $((3 * bt_calls)) ] || note "bpftrace counted ${hits:-no} calls of $hot, not at least $((3 * bt_calls))"
	note "bpftrace: $(grep -c '^@\[' "$out") probes hit; whole run $(((t1 - t0) / 1000000)) ms"
elif [ $bt_rc -ne 124 ] && [ $bt_rc -ne 137 ]; then
	note "bpftrace failed (status $bt_rc): $(grep -v MEMLOCK "$out" | tail -1); its figures left out"
else
	echo "libc_1k_bpftrace_attach_ms $((bt_limit * 1000))"
	echo "libc_1k_bpftrace_attach_timed_out 1"
	note "bpftrace had not attached $nfuncs uprobes after ${bt_limit} s; libc_1k_bpftrace_attach_ms is that limit"
fi
