#!/usr/bin/env bash
# test_export_ctf - needle export --format=ctf writes a CTF 1.8 trace that
# Debian's babeltrace2 prints with the same calls, values and times as
# needle's own dump (thread by thread: time to the nanosecond, tid, entry
# or exit, function, address, depth, the recorded arguments and return
# value, an exit's duration); a trace of many events spans packets; bad
# output refused, nothing left half-written.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"

if ! command -v babeltrace2 >/dev/null; then
	fail "babeltrace2 is not installed (scripts/setup.sh installs it)"
	exit 0
fi

"$NEEDLE" record -o "$T/g.data" --libcall=none -A 'mid@arg1/d32' -A 'rec@arg1/d32' -R 'rec@retval/d32' \
	-- "$P" 3 >/dev/null 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0

# same NAME TRACE: babeltrace2's reading of its CTF export = needle dump.
same() {
	rm -rf "$T/$1.ctf"
	"$NEEDLE" export -i "$2" --format=ctf -o "$T/$1.ctf" 2>"$T/xerr"
	st=$?
	check_eq "$1: export --format=ctf, exit 0 ($(head -1 "$T/xerr"))" "$st" 0
	babeltrace2 --clock-seconds "$T/$1.ctf" >"$T/$1.bt" 2>"$T/bterr"
	st=$?
	check_eq "$1: babeltrace2 reads it (exit 0; $(head -c 200 "$T/bterr"))" "$st" 0
	"$NEEDLE" dump -i "$2" >"$T/$1.dump"
	python3 - "$T/$1.bt" "$T/$1.dump" >"$T/$1.cmp" <<'PY'
import collections, re, sys
bt, dump = sys.argv[1], sys.argv[2]
# babeltrace2: [SEC.NSEC] (+delta) host:proc:(pid) func_entry: { tid = T }, { tid = T, depth = D,
# addr = 0x..., name = "f", args_count = N, args = [ [0] = { name = "arg1", value = "2" } ] }
def unescape(s):
    return re.sub(r'\\(.)', r'\1', s)
got = collections.defaultdict(list)
for ln in open(bt):
    m = re.match(r'\[(\d+\.\d{9})\] \S+ \S+ (func_entry|func_exit|lost): \{[^}]*\}, \{ (.*) \}$', ln.rstrip('\n'))
    if not m:
        continue
    body = m.group(3)
    f = {}
    for k, v in re.findall(r'\b(tid|depth|addr|name|duration|count) = ("(?:[^"\\]|\\.)*"|[^,]+)', body):
        f.setdefault(k, v)  # the event's own, before its values' names
    if m.group(2) == 'lost':
        got[int(f['tid'])].append('%s lost %s' % (m.group(1), f['count']))
        continue
    kind = 'entry' if m.group(2) == 'func_entry' else 'exit'
    pairs = re.findall(r'\{ name = "((?:[^"\\]|\\.)*)", value = "((?:[^"\\]|\\.)*)" \}', body)
    vals = ', '.join('%s = %s' % (unescape(a), unescape(b)) for a, b in pairs)
    got[int(f['tid'])].append('%s %s %s %x %s %s %s' % (m.group(1), kind, unescape(f['name'][1:-1]),
                                                       int(f['addr'], 16), f['depth'], vals,
                                                       f.get('duration', '-')))
# needle dump: SEC.NSEC  TID: [entry] f(addr) depth: D, then "  name = value" lines
want = collections.defaultdict(list)
last = None
entry_at = {}
for ln in open(dump):
    m = re.match(r'(\d+\.\d{9})\s+(\d+): \[(entry|exit )\] (\S+)\(([0-9a-f]+)\) depth: (\d+)', ln)
    if m:
        kind = m.group(3).strip()
        tid = int(m.group(2))
        key = (tid, int(m.group(6)))
        dur = '-'
        if kind == 'entry':
            entry_at[key] = m.group(1)
        else:
            s = entry_at.pop(key, None)
            if s is not None and '(' not in ln.split('depth:')[1]:
                a, b = (int(x.replace('.', '')) for x in (s, m.group(1)))
                dur = str(b - a)
        last = [m.group(1), kind, m.group(4), m.group(5), m.group(6), [], dur, tid]
        want[tid].append(last)
        continue
    v = re.match(r'  (\S+) = (.*)$', ln.rstrip('\n'))
    if v and last is not None:
        last[5].append((v.group(1), v.group(2)))
out = {}
for tid, rows in want.items():
    lines = []
    for t, kind, name, addr, depth, vals, dur, _ in rows:
        text = ', '.join('%s = %s' % kv for kv in vals)
        lines.append('%s %s %s %s %s %s %s' % (t, kind, name, addr, depth, text, dur))
    out[tid] = lines
ok = sorted(got) == sorted(out) and all(got[t] == out[t] for t in out)
print('events %d' % sum(len(v) for v in got.values()))
print('threads %d' % len(got))
print('same' if ok else 'differ')
if not ok:
    for t in out:
        for a, b in zip(got.get(t, []), out[t]):
            if a != b:
                print('first difference: babeltrace2 %r, dump %r' % (a, b))
                break
PY
	check_eq "$1: babeltrace2 prints needle dump's events, thread by thread ($(head -2 "$T/$1.cmp" | tr '\n' ' '))" \
		"$(sed -n '3,4p' "$T/$1.cmp")" same
}

same "values" "$T/g.data"
check_eq "values: every event, 39 calls" "$(sed -n 1p "$T/values.cmp")" "events 78"
check_eq "values: two threads, a stream each" "$(ls "$T/values.ctf" | grep -c '^stream_')" 2
check "values: mid's argument, named" grep -q 'name = "mid", args_count = 1, args = \[ \[0\] = { name = "arg1", value = "2" } \]' "$T/values.bt"
check "values: rec's return value" grep -q 'name = "rec", duration = [0-9]*, retval_count = 1, retval = \[ \[0\] = { name = "retval", value = "0" } \]' "$T/values.bt"

# Many events: packets of 64 KiB, one after another in a stream.
"$NEEDLE" record -o "$T/d.data" -- "$PROGS/views_deep" 1 20 500 >/dev/null 2>&1
same "packets" "$T/d.data"
check "packets: more than one in the stream" test "$(cat "$T"/packets.ctf/stream_* | wc -c)" -gt 65536

# Bad output.
view_refused "export --format=ctf to a directory that exists" 1 "exists" \
	"$NEEDLE" export -i "$T/g.data" -f ctf -o "$T/values.ctf"
view_refused "export --format=ctf to standard output" 2 "is a directory" "$NEEDLE" export -i "$T/g.data" -f ctf -o -
cp "$T/g.data" "$T/bad.data"
size=$(stat -c %s "$T/bad.data")
printf '\xff\xff\xff\xff' | dd of="$T/bad.data" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$NEEDLE" export -i "$T/bad.data" -f ctf -o "$T/bad.ctf" >/dev/null 2>&1
check "a damaged trace: refused" test $? -ne 0
check "a damaged trace: no directory, no temporary one" test ! -e "$T/bad.ctf" -a -z "$(ls -d "$T"/bad.ctf.tmp* 2>/dev/null)"
