#!/usr/bin/env bash
# test_otlp_stream - needle record --otlp-endpoint: the calls sent as
# OpenTelemetry spans while recording, to collectors this test runs on
# loopback (tests/record/otlp_receiver.js), decoded by OpenTelemetry's own
# code: every call a span, named, parented and timed as the trace says;
# --otlp-spans and -t choose; a collector that stalls, one that refuses
# connections and one that answers 400 cost spans (counted: sent + lost
# is every span) but never the trace, the program's output or its exit.
. "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
P="$PROGS/threads"
otel_modules || exit 0

# receiver MODE NAME: a collector in the background; its port in PORT.
receiver() {
	rm -f "$T/$2.port"
	OTEL_MODULES="$MODS" node "$HERE/otlp_receiver.js" "$1" "$T/$2.port" "$T/$2.jsonl" 2>"$T/$2.nerr" &
	RPID=$!
	for _ in $(seq 500); do [ -s "$T/$2.port" ] && break; sleep 0.01; done
	PORT=$(cat "$T/$2.port" 2>/dev/null)
}
stop_receiver() { kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null; }

# sent LINE / lost LINE: the numbers in record's otlp line.
sent() { sed -n 's/.*otlp: \([0-9]*\) spans sent.*/\1/p' "$1"; }
lost() { sed -n 's/.* \([0-9]*\) LOST.*/\1/p' "$1"; }

receiver ok ok
"$NEEDLE" record -o "$T/ok.data" --otlp-endpoint "http://127.0.0.1:$PORT" -- "$P" 2 100 >"$T/out" 2>"$T/err"
st=$?
check_eq "--otlp-endpoint: recorded, exit 0 ($(tail -1 "$T/err"))" "$st" 0
stop_receiver
check_eq "the program's output is its own" "$(cat "$T/out")" "$("$P" 2 100)"
check_eq "the last line: every call sent, none lost" "$(sent "$T/err")/$(lost "$T/err")" "$(( $("$NEEDLE" info -i "$T/ok.data" | awk '/^events:/ { print $2 }') / 2 ))/"
check_eq "the collector decoded as many spans as were sent" "$(wc -l <"$T/ok.jsonl")" "$(sent "$T/err")"
python3 - "$T/ok.jsonl" >"$T/ok.check" <<'PY'
import json, sys, collections
spans = [json.loads(l) for l in open(sys.argv[1])]
ids = {s['spanId']: s for s in spans}
names = collections.Counter(s['name'] for s in spans)
print('names', ' '.join('%s:%d' % (k, names[k]) for k in sorted(names)))
print('post', sorted({(s['path'], s['type'], s['service']) for s in spans}))
# every parent is a span sent, of the same trace and thread, around it
bad = [s for s in spans if s['parentSpanId'] and (s['parentSpanId'] not in ids or
       ids[s['parentSpanId']]['traceId'] != s['traceId'] or ids[s['parentSpanId']]['tid'] != s['tid'] or
       int(ids[s['parentSpanId']]['start']) > int(s['start']) or int(ids[s['parentSpanId']]['end']) < int(s['end']))]
print('bad parents', len(bad))
roots = collections.Counter(s['traceId'] for s in spans if not s['parentSpanId'])
print('traces', len({s['traceId'] for s in spans}), 'roots', len(roots), 'max roots per trace', max(roots.values()))
parent_name = collections.Counter((ids[s['parentSpanId']]['name'] if s['parentSpanId'] else '-', s['name']) for s in spans)
print('edges', ' '.join('%s>%s:%d' % (a, b, parent_name[(a, b)]) for a, b in sorted(parent_name)))
durs = collections.defaultdict(int)
for s in spans:
    durs[s['name']] += int(s['end']) - int(s['start'])
print('durations', ' '.join('%s:%d' % (k, durs[k]) for k in sorted(durs)))
PY
check_eq "a span per call of each function, as report counts them" "$(sed -n 's/^names //p' "$T/ok.check")" \
	"$("$NEEDLE" report -i "$T/ok.data" --csv -s name | awk -F, 'NR > 1 { printf "%s%s:%s", s, $1, $2; s = " " }')"
check_eq "sent to /v1/traces as application/x-protobuf, the program as service.name" \
	"$(sed -n 's/^post //p' "$T/ok.check")" "[('/v1/traces', 'application/x-protobuf', 'threads')]"
check_eq "every parent is a span of the same trace and thread, around its child" "$(sed -n 's/^bad parents //p' "$T/ok.check")" 0
check_eq "a trace per outermost call and thread: main's and each thread_main's, one root each" \
	"$(sed -n 's/^traces //p' "$T/ok.check")" "3 roots 3 max roots per trace 1"
check_eq "the graph's edges: main and each thread_main roots, thread_main > work > step" \
	"$(sed -n 's/^edges //p' "$T/ok.check")" "->main:1 ->thread_main:2 thread_main>work:200 work>step:400"
# Durations: the trace's, within 1% and 2 us per call (the stream maps the
# clock while it runs; the trace maps it once at the end).
python3 - "$T/ok.check" <("$NEEDLE" report -i "$T/ok.data" --csv) >"$T/dur" <<'PY'
import sys, csv
got = dict(kv.split(':') for kv in open(sys.argv[1]).read().split('durations ')[1].split())
rows = list(csv.DictReader(open(sys.argv[2])))
bad = []
for r in rows:
    # report's total counts a recursion once; none recurses here: the sum of every call
    want, have, n = int(r['total_ns']), int(got.get(r['function'], -1)), int(r['calls'])
    if abs(have - want) > want / 100 + 2000 * n:
        bad.append('%s %d/%d' % (r['function'], have, want))
print(' '.join(bad) or 'all')
PY
check_eq "each function's time in spans is the trace's" "$(cat "$T/dur")" all

# --otlp-spans and -t choose the calls.
receiver ok sel
"$NEEDLE" record -o "$T/sel.data" --otlp-endpoint "http://127.0.0.1:$PORT/v1/traces" --otlp-spans work \
	--otlp-spans '^thread_m' -- "$P" 2 100 >/dev/null 2>"$T/err"
stop_receiver
check_eq "--otlp-spans work --otlp-spans '^thread_m': 200 work spans under 2 thread_main" \
	"$(python3 -c "import json, sys, collections; c = collections.Counter(json.loads(l)['name'] for l in open(sys.argv[1])); print(sorted(c.items()))" "$T/sel.jsonl")" \
	"[('thread_main', 2), ('work', 200)]"
check_eq "... each work's parent is its thread_main" \
	"$(python3 -c "
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
ids = {x['spanId']: x['name'] for x in s}
print(sum(1 for x in s if x['name'] == 'work' and ids.get(x['parentSpanId']) == 'thread_main'))" "$T/sel.jsonl")" 200
receiver ok t
"$NEEDLE" record -o "$T/t.data" --otlp-endpoint "http://127.0.0.1:$PORT" -t 10us -- "$P" 2 100 >/dev/null 2>"$T/err"
stop_receiver
check_eq "-t 10us: only the calls that lasted 10 us or more" \
	"$(python3 -c "import json, sys; print(all(int(x['end']) - int(x['start']) >= 10000 for x in map(json.loads, open(sys.argv[1]))))" "$T/t.jsonl")" True
check "... main (which starts two threads) among them" grep -q '"name":"main"' "$T/t.jsonl"
receiver ok t10
"$NEEDLE" record -o "$T/t10.data" --otlp-endpoint "http://127.0.0.1:$PORT" -t 10s -- "$P" 2 100 >/dev/null 2>"$T/err"
stop_receiver
check_eq "-t 10s: no call that long, nothing sent, nothing lost" "$(sent "$T/err")/$(lost "$T/err")/$(test -e "$T/t10.jsonl" && echo sent)" "0//"

# Collectors that fail: the trace, the output and the exit are untouched;
# every span is sent or counted lost, and the line says why.
receiver stall stall
start=$(date +%s)
"$NEEDLE" record -o "$T/st.data" --otlp-endpoint "http://127.0.0.1:$PORT" -- "$P" 2 50000 >"$T/out" 2>"$T/err"
check_eq "a collector that stalls: recorded, exit 0" "$?" 0
took=$(( $(date +%s) - start ))
stop_receiver
check_eq "... the output unchanged" "$(cat "$T/out")" "$("$P" 2 50000)"
check_eq "... the trace whole (report: 100000 work calls, no event lost)" \
	"$("$NEEDLE" report -i "$T/st.data" --csv | awk -F, '$1 == "work" { print $2 }')/$(grep -c 'LOST (buffer' "$T/err")" "100000/0"
check_eq "... every span counted: sent + lost" "$(( $(sent "$T/err") + $(lost "$T/err") ))" \
	"$(( $("$NEEDLE" info -i "$T/st.data" | awk '/^events:/ { print $2 }') / 2 ))"
check "... lost ones said so ($(tail -1 "$T/err"))" grep -q 'LOST (the collector' "$T/err"
check "... and needle record gave up on it within its deadlines (${took}s)" test "$took" -lt 30

receiver ok gone
stop_receiver # its port now refuses
"$NEEDLE" record -o "$T/rf.data" --otlp-endpoint "http://127.0.0.1:$PORT" -- "$P" 2 100 >"$T/out" 2>"$T/err"
check_eq "a collector gone (connection refused): recorded, exit 0" "$?" 0
check_eq "... every span lost, none sent" "$(sent "$T/err")/$(lost "$T/err")" "0/$(( $("$NEEDLE" info -i "$T/rf.data" | awk '/^events:/ { print $2 }') / 2 ))"
check "... said so ($(tail -1 "$T/err"))" grep -q 'LOST (cannot connect: Connection refused)' "$T/err"

receiver reject rej
"$NEEDLE" record -o "$T/rj.data" --otlp-endpoint "http://127.0.0.1:$PORT" -- "$P" 2 100 >/dev/null 2>"$T/err"
check_eq "a collector that answers 400: recorded, exit 0" "$?" 0
stop_receiver
check "... its spans lost, the status said ($(tail -1 "$T/err"))" grep -q ' 0 spans sent.*LOST (the collector answered 400)' "$T/err"

# Bad input: one line, exit 2, the program never started.
view_refused "--otlp-endpoint https://" 2 "https is not spoken" "$NEEDLE" record -o "$T/x.data" --otlp-endpoint https://c:4318 -- "$P" 1 1
view_refused "--otlp-endpoint with no scheme" 2 "http://HOST:PORT" "$NEEDLE" record -o "$T/x.data" --otlp-endpoint localhost:4318 -- "$P" 1 1
view_refused "--otlp-endpoint with a bad port" 2 "port is a number" "$NEEDLE" record -o "$T/x.data" --otlp-endpoint http://c:99999 -- "$P" 1 1
view_refused "--otlp-spans without an endpoint" 2 "give the endpoint" "$NEEDLE" record -o "$T/x.data" --otlp-spans work -- "$P" 1 1
view_refused "--otlp-spans with a bad regular expression" 2 "not a regular expression" "$NEEDLE" record -o "$T/x.data" --otlp-endpoint http://c:1 --otlp-spans '^(a' -- "$P" 1 1
view_refused "--otlp-endpoint with --snapshot" 2 "keeps events in the program" "$NEEDLE" record -o "$T/x.data" --snapshot --otlp-endpoint http://c:1 -- "$P" 1 1
view_refused "--otlp-endpoint with the function tracer" 2 "function tracer" "$NEEDLE" record -o "$T/x.data" -t function --otlp-endpoint http://c:1 -- "$P" 1 1
check "... and no trace was written" test ! -e "$T/x.data"
