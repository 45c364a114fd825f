#!/usr/bin/env bash
# test_export_otlp - needle export --format=otlp: OpenTelemetry spans,
# decoded by OpenTelemetry's own code (the npm package
# @opentelemetry/otlp-transformer, installed into the build folder): a span
# per chosen call with its caller's span as parent, a trace per outermost
# chosen call and thread, the recorded values as attributes, the thread
# and process as attributes of the span and the resource, durations to
# the nanosecond; --spans and -t choose; OTLP/JSON says the same.
# graph_prog's calls are known from its source.
. "$(dirname "$0")/../lib.sh"
P="$PROGS/graph_prog"
HERE=$(cd "$(dirname "$0")" && pwd)
otel_modules || exit 0

"$NEEDLE" record -o "$T/g.data" --libcall=none -A 'mid@arg1/d32' -R 'rec@retval/d32' -- "$P" 3 >/dev/null 2>"$T/err"
st=$?
check_eq "recorded ($(tail -1 "$T/err"))" "$st" 0
"$NEEDLE" dump -i "$T/g.data" >"$T/dump"

# spans NAME ARGS...: export with ARGS, decode, one line per span:
# name parent-name trace-number depth-in-trace duration tid values
spans() {
	local name=$1
	shift
	"$NEEDLE" export -i "$T/g.data" --format=otlp "$@" -o "$T/$name.pb" 2>"$T/$name.err"
	st=$?
	check_eq "$name: exported (exit 0; $(head -1 "$T/$name.err"))" "$st" 0
	OTEL_MODULES="$MODS" node "$HERE/otlp_decode.js" "$T/$name.pb" >"$T/$name.json" 2>"$T/$name.nerr"
	st=$?
	check_eq "$name: OpenTelemetry's decoder reads it ($(head -c 200 "$T/$name.nerr"))" "$st" 0
	python3 - "$T/$name.json" >"$T/$name.spans" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d['resourceSpans']
assert len(rs) == 1 and len(rs[0]['scopeSpans']) == 1
spans = rs[0]['scopeSpans'][0]['spans']
by_id = {s['spanId']: s for s in spans}
traces = {}
for s in spans:
    traces.setdefault(s['traceId'], len(traces))
def attrs(s):
    out = {}
    for a in s['attributes']:
        v = a['value']
        out[a['key']] = v.get('stringValue') if v.get('stringValue') is not None else v.get('intValue')
    return out
rows = []
for s in spans:
    p = by_id.get(s['parentSpanId'])
    depth, q = 0, p
    while q:
        depth += 1
        q = by_id.get(q['parentSpanId'])
    a = attrs(s)
    vals = ','.join('%s=%s' % (k, v) for k, v in sorted(a.items()) if k not in ('code.function', 'thread.id', 'thread.name'))
    assert a['code.function'] == s['name'] and s['kind'] == 1
    assert (p is None) == (s['parentSpanId'] == '')
    assert p is None or p['traceId'] == s['traceId']
    rows.append('%s %s %d %d %d %s %s' % (s['name'], p['name'] if p else '-', traces[s['traceId']], depth,
                                          int(s['endTimeUnixNano']) - int(s['startTimeUnixNano']),
                                          a['thread.id'], vals or '-'))
res = {a['key']: a['value'] for a in rs[0]['resource']['attributes']}
print('resource', res['service.name']['stringValue'], res['process.pid']['intValue'])
for r in sorted(rows):
    print(r)
PY
	check_eq "$name: the spans' structure is sound (parents in their trace)" "$?" 0
}

# Every call a span (the default): 39, each under its caller.
spans all
check_eq "all: 39 spans" "$(grep -vc '^resource' "$T/all.spans")" 39
check_eq "all: the resource names the program and its pid" "$(head -1 "$T/all.spans")" \
	"resource graph_prog $("$NEEDLE" info -i "$T/g.data" | awk '/^pid:/ { print $2 }')"
check_eq "all: each span's parent is its caller" \
	"$(awk '$1 != "resource" { print $1 "<" $2 }' "$T/all.spans" | sort | uniq -c | awk '{ print $2 ":" $1 }' | tr '\n' ' ')" \
	"fan<main:2 fan<worker:1 leaf<fan:3 leaf<mid:16 leaf<rec:3 main<-:1 mid<fan:6 mid<other:1 other<main:1 rec<main:1 rec<rec:3 worker<-:1 "
check_eq "all: two traces, one per thread's outermost call" "$(awk '$1 != "resource" { print $3 }' "$T/all.spans" | sort -u | wc -l)" 2
# The durations are the calls', to the nanosecond (as dump's exit - entry).
python3 - "$T/dump" >"$T/durs" <<'PY'
import re, sys
open_at, out = {}, []
for ln in open(sys.argv[1]):
    m = re.match(r'(\d+)\.(\d{9})\s+(\d+): \[(entry|exit )\] (\S+)\(', ln)
    if not m:
        continue
    ns = int(m.group(1)) * 10**9 + int(m.group(2))
    key = (m.group(3), ln.split('depth: ')[1].split()[0])
    if m.group(4) == 'entry':
        open_at[key] = ns
    else:
        out.append('%s %d' % (m.group(5), ns - open_at.pop(key)))
print('\n'.join(sorted(out)))
PY
check_eq "all: each span's duration is its call's, to the nanosecond" \
	"$(awk '$1 != "resource" { print $1, $5 }' "$T/all.spans" | sort)" "$(cat "$T/durs")"
check_eq "all: mid's argument as an attribute" "$(awk '$1 == "mid" { print $7 }' "$T/all.spans" | sort | uniq -c | awk '{ print $2 ":" $1 }' | tr '\n' ' ')" \
	"arg1=1:1 arg1=2:3 arg1=3:3 "
check_eq "all: rec's return values as attributes" "$(awk '$1 == "rec" { print $7 }' "$T/all.spans" | sort | tr '\n' ' ')" \
	"retval=0 retval=1 retval=2 retval=3 "
check_eq "all: the thread on every span" "$(awk '$1 != "resource" { print $6 }' "$T/all.spans" | sort -u | wc -l)" 2

# --spans fan: three spans, roots of their own traces.
spans fan --spans fan
check_eq "--spans fan: its three calls, each a root and a trace of its own" \
	"$(awk '$1 != "resource" { print $1, $2, $4 }' "$T/fan.spans" | sort | uniq -c | tr -s ' ' | tr '\n' '/')" " 3 fan - 0/"
check_eq "--spans fan: three traces" "$(awk '$1 != "resource" { print $3 }' "$T/fan.spans" | sort -u | wc -l)" 3
# --spans 'rec' --spans leaf: the recursion one trace, leaf under rec.
spans rec --spans rec --spans leaf
check_eq "--spans rec --spans leaf: rec's chain and its leaves, one trace; the other leaves roots" \
	"$(awk '$1 != "resource" && $2 != "-" { print $1 "<" $2, $4 }' "$T/rec.spans" | sort | uniq -c | tr -s ' ' | tr '\n' '/')" \
	" 1 leaf<rec 1/ 1 leaf<rec 2/ 1 leaf<rec 3/ 1 rec<rec 1/ 1 rec<rec 2/ 1 rec<rec 3/"
# -t: only calls that lasted long enough; their callers lasted longer.
long=$("$NEEDLE" report --csv -i "$T/g.data" | awk -F, '$1 == "worker" { print $7 }')
spans slow -t "${long}ns"
check "-t: the worker call that long, and main, a trace each" \
	test "$(awk '$1 != "resource" { print $1, $2 }' "$T/slow.spans" | sort | tr '\n' '/')" = "main -/worker -/" -o \
	"$(awk '$1 != "resource" { print $1, $2 }' "$T/slow.spans" | sort | tr '\n' '/')" = "worker -/"

# OTLP/JSON: the same spans (ids as hex, numbers as strings).
"$NEEDLE" export -i "$T/g.data" --format=otlp --json -o "$T/all.otlp.json"
check_eq "--json: exported" "$?" 0
check_eq "--json: the protobuf's spans, field for field" "$(python3 - "$T/all.otlp.json" "$T/all.json" <<'PY'
import json, sys
def norm(path):
    spans = json.load(open(path))['resourceSpans'][0]['scopeSpans'][0]['spans']
    out = []
    for s in spans:
        attrs = []
        for a in s['attributes']:
            v = a['value']
            attrs.append((a['key'], v.get('stringValue') if v.get('stringValue') is not None else str(v.get('intValue'))))
        out.append((s['traceId'], s['spanId'], s.get('parentSpanId') or '', s['name'], int(s['kind']),
                    str(s['startTimeUnixNano']), str(s['endTimeUnixNano']), tuple(attrs)))
    return sorted(out)
a, b = norm(sys.argv[1]), norm(sys.argv[2])
print('same' if a == b and len(a) == 39 else 'differ %d %d' % (len(a), len(b)))
PY
)" same

# Bad input.
view_refused "--spans with another format" 2 "are --format=otlp's" "$NEEDLE" export -i "$T/g.data" -f chrome --spans main -o -
view_refused "otlp -t nonsense" 2 "-t takes a duration" "$NEEDLE" export -i "$T/g.data" -f otlp -t soon -o -
"$NEEDLE" export -i "$T/g.data" -f otlp --spans nosuchfunction -o "$T/none.pb" 2>"$T/none.err"
check_eq "--spans naming nothing: exit 0" "$?" 0
check "--spans naming nothing: says so" grep -q "no call chosen as a span" "$T/none.err"
