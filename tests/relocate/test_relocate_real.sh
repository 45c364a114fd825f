#!/usr/bin/env bash
# test_relocate_real - programs nobody built for needle, traced with
# relocated sites (--sites=all): every relocatable function of the program
# and its libraries, the C library included.  Their output is byte for byte
# that of a run left alone; the workload's own functions are counted
# exactly; Debian's own ls and python3, as shipped, run traced.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
W="$BUILD/tests/relocate/libc_workload"

"$W" >"$T/w.plain"
# 6.5M events from 4 threads: a buffer that holds them all, so that a
# reader slowed by other jobs cannot drop any and spoil the exact counts.
"$NEEDLE" record --sites=all --buffer-size=256 -o "$T/w.data" -- "$W" >"$T/w.out" 2>"$T/w.err"
rc=$?
check_eq "workload: traced in full, exit 0 ($(tail -1 "$T/w.err"))" "$rc" 0
check "workload: output identical to a run left alone" cmp -s "$T/w.plain" "$T/w.out"
for f in wl_strings wl_memory wl_math; do
	check_eq "workload: $f called exactly as the program counts" "$(calls "$T/w.data" "$f")" \
		"$(awk -v f="$f" '$1 == "calls" { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' "$T/w.plain")"
done
for f in malloc free qsort snprintf; do
	n=$(calls "$T/w.data" "$f")
	check "workload: the C library's $f is traced ($n calls)" test "$n" -ge 8000 2>/dev/null
done
"$NEEDLE" info -i "$T/w.data" >"$T/w.info"
check "info: the C library's relocation, per object" grep -q "libc.so.6: 0 compiled, [0-9]* of [0-9]* relocated" "$T/w.info"

# A library loaded after the start (dlopen), unloaded and loaded again:
# its functions are relocated when it appears, by default (no --sites);
# --libcall=all records its calls of its own functions too.
D="$BUILD/tests/relocate/dl_later"
"$D" "$BUILD/tests/relocate/liblater.so" >"$T/d.plain"
"$NEEDLE" record --libcall=all -o "$T/d.data" -- "$D" "$BUILD/tests/relocate/liblater.so" >"$T/d.out" 2>"$T/d.err"
rc=$?
check_eq "dlopen later: traced, exit 0 ($(tail -1 "$T/d.err"))" "$rc" 0
check "dlopen later: output identical to a run left alone" cmp -s "$T/d.plain" "$T/d.out"
check_eq "dlopen later: later_mix traced at both loads, exactly" "$(calls "$T/d.data" later_mix)" \
	"$(awk '{ print $2 }' "$T/d.plain")"
check_eq "dlopen later: its static callee later_step too" "$(calls "$T/d.data" later_step)" \
	"$(awk '{ print $2 }' "$T/d.plain")"
check_eq "dlopen later: nested under later_mix" \
	"$("$NEEDLE" replay -i "$T/d.data" | grep -A1 -m1 'later_mix() {' | tail -1 | sed 's/^.*| *//')" "later_step();"

# ls as Debian ships it: the C library's malloc and free, as ltrace would show.
ls -la /usr /etc >"$T/ls.plain" 2>&1
"$NEEDLE" record --sites=all -F malloc -F free -o "$T/ls.data" -- ls -la /usr /etc >"$T/ls.out" 2>"$T/ls.err"
check_eq "ls: exit 0" "$?" 0
check "ls: output identical to a run left alone" cmp -s "$T/ls.plain" "$T/ls.out"
n=$(calls "$T/ls.data" malloc)
check "ls: malloc traced ($n calls)" test "$n" -gt 10 2>/dev/null
check_eq "ls: only malloc and free were traced" \
	"$("$NEEDLE" report --csv -i "$T/ls.data" | awk -F, 'NR > 1 { print $1 }' | sort | tr '\n' ' ')" "free malloc "

# python3 as Debian ships it, threads and json.
PY=/usr/bin/python3
cat >"$T/p.py" <<'PYEOF'
import json, threading
res = []
def work(n):
    d = {"n": n, "sq": [i * i for i in range(200)], "s": "x" * n}
    res.append(json.loads(json.dumps(d))["sq"][n % 200])
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(sorted(res), json.dumps({"ok": True}))
PYEOF
"$PY" "$T/p.py" >"$T/p.plain"
"$NEEDLE" record --sites=all -o "$T/p.data" -- "$PY" "$T/p.py" >"$T/p.out" 2>"$T/p.err"
rc=$?
check_eq "python3: traced in full, exit 0 ($(tail -1 "$T/p.err"))" "$rc" 0
check "python3: output identical to a run left alone" cmp -s "$T/p.plain" "$T/p.out"
n=$("$NEEDLE" report --csv -i "$T/p.data" | awk -F, 'NR > 1 { n++ } END { print n + 0 }')
check "python3: its own functions and its libraries' traced ($n functions called)" test "$n" -gt 500
check "python3: threads' calls recorded" test "$("$NEEDLE" info -i "$T/p.data" | awk '/^threads:/ { print $2 }')" -ge 9

# A running process, attached with relocated sites: the C library's
# functions switched on and off while its threads churn, block signals
# (pthread_create), sleep, fork and dlopen.
. "$(dirname "$0")/../attach/target.sh"
target_start reloc --dl "$DL_LIB"
ok=0
for i in 1 2 3 4 5; do
	"$NEEDLE" record --sites=all -p "$TPID" -o "$T/r.data" --duration=0.3 2>"$T/r.rec" && ok=$((ok + 1))
	target_round
	[ "$RR" = "round $TROUND ok" ] || echo "      cycle $i: $RR"
done
check_eq "-p --sites=all: 5 attach/record/detach cycles" "$ok" 5
target_round
check_eq "-p --sites=all: the process's checks pass after them" "$RR" "round $TROUND ok"
n=$("$NEEDLE" report --csv -i "$T/r.data" | awk -F, '$1 == "malloc" { print $2 }')
check "-p --sites=all: the C library's malloc was traced in the process ($n calls)" test "${n:-0}" -gt 0
target_quit
check_eq "-p --sites=all: no failed check in the process" "$(tail -1 "$T/reloc.out")" "errors 0"
