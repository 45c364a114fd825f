#!/usr/bin/env bash
# test_record_demo - record the kvstore demo: its output and exit status are
# untouched, every function's call count equals what the workload implies,
# and the nesting in the trace is the program's call structure.
. "$(dirname "$0")/../lib.sh"
KV="$BUILD/demo/kvstore"

plain=$("$KV" 4 2000)
plain_status=$?
traced=$("$NEEDLE" record -o "$T/kv.data" -- "$KV" 4 2000 2>"$T/err")
traced_status=$?
check_eq "stdout byte-identical with and without tracing" "$traced" "$plain"
check_eq "exit status unchanged" "$traced_status" "$plain_status"
check "record reports what it wrote on stderr" grep -q "recorded .* events from 5 threads" "$T/err"

# The workload: each of 4 threads makes 2000 steps; a step is a put, a get
# or a delete, each hashing its key once.
read -r P H M < <(echo "$plain" | awk '/^total:/ {print $2, $4, $6}')
steps=8000
check_eq "main called once" "$(calls "$T/kv.data" main)" 1
check_eq "workload_run once per thread" "$(calls "$T/kv.data" workload_run)" 4
check_eq "workload_step per step" "$(calls "$T/kv.data" 'workload_step')" $steps
check_eq "rng_next per step" "$(calls "$T/kv.data" 'rng_next')" $steps
check_eq "kv_hash once per operation" "$(calls "$T/kv.data" 'kv_hash')" $steps
check_eq "kv_put once per put" "$(calls "$T/kv.data" 'kv_put[.a-z0-9]*')" "$P"
check_eq "format_value once per put" "$(calls "$T/kv.data" 'format_value[.a-z0-9]*')" "$P"
check_eq "kv_get once per get" "$(calls "$T/kv.data" 'kv_get[.a-z0-9]*')" $((H + M))
check_eq "checksum_add once per hit" "$(calls "$T/kv.data" 'checksum_add[.a-z0-9]*')" "$H"
check_eq "kv_delete once per delete" "$(calls "$T/kv.data" 'kv_delete[.a-z0-9]*')" $((steps - P - H - M))

# Nesting, from the folded stacks (thread;outer;...;inner).
"$NEEDLE" export --format=folded -i "$T/kv.data" -o "$T/kv.folded"
check "folded export written" test -s "$T/kv.folded"
check_eq "every kv_hash is under workload_run;workload_step;kv_put/get/delete" \
	"$(grep ';kv_hash ' "$T/kv.folded" | grep -cvE '^[^;]+;workload_run;workload_step;kv_(put|get|delete)[^;]*;kv_hash ')" 0
check_eq "every workload_step is directly under workload_run" \
	"$(grep -c ';workload_step' "$T/kv.folded" | tr -d ' ')" \
	"$(grep -cE '^[^;]+;workload_run;workload_step' "$T/kv.folded" | tr -d ' ')"
check_eq "main is never nested" "$(grep -cE ';[^ ]+;main( |;)' "$T/kv.folded")" 0

# The replay: braces balance per thread and main encloses the run.
"$NEEDLE" replay -i "$T/kv.data" >"$T/replay.txt"
check "replay opens main" grep -q '| main() {$' "$T/replay.txt"
check "replay closes main with its duration" grep -qE '^ *[0-9.]+ (us|ms|s) \[ *[0-9]+\] \| \} /\* main \*/$' "$T/replay.txt"
opens=$(grep -c '() {$' "$T/replay.txt")
closes=$(grep -c '} /\* ' "$T/replay.txt")
check_eq "every opened call is closed" "$closes" "$opens"
check_eq "depth 1 shows only the outermost calls" \
	"$("$NEEDLE" replay -D 1 -i "$T/kv.data" | grep -v '^#' | grep -cvE '\| (main|workload_run)\(\)|\} /\* (main|workload_run) \*/')" 0
tid=$("$NEEDLE" info -i "$T/kv.data" | awk '/^  *TID/ {getline; print $1}')
check_eq "--tid keeps one thread" "$("$NEEDLE" replay --tid "$tid" -i "$T/kv.data" | grep -v '^#' | grep -cv "\[ *$tid\]")" 0
check "-t keeps only calls above the threshold" \
	test "$("$NEEDLE" replay -t 1000s -i "$T/kv.data" | grep -vc '^#')" -eq 0

# Exports.
"$NEEDLE" export --format=chrome -i "$T/kv.data" -o "$T/kv.json"
check "chrome export is valid JSON" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['traceEvents'] else 1)" "$T/kv.json"
check_eq "chrome export has a B and an E per call" \
	"$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['traceEvents']; print(sum(x['ph']=='B' for x in e), sum(x['ph']=='E' for x in e))" "$T/kv.json")" \
	"$(($(calls "$T/kv.data" '.*'))) $(($(calls "$T/kv.data" '.*')))"
"$NEEDLE" export --format=perfetto -i "$T/kv.data" -o "$T/kv.pftrace"
check "perfetto export written" test -s "$T/kv.pftrace"
if command -v protoc >/dev/null; then
	protoc --decode_raw <"$T/kv.pftrace" >"$T/kv.pfraw" 2>&1
	check "perfetto export parses as protobuf" test $? -eq 0
	# Each call is a slice begin (11 { 9: 1) and a slice end (11 { 9: 2).
	check_eq "perfetto export has a slice begin per call" "$(grep -c '^    9: 1$' "$T/kv.pfraw")" "$(calls "$T/kv.data" '.*')"
	check_eq "perfetto export has a slice end per call" "$(grep -c '^    9: 2$' "$T/kv.pfraw")" "$(calls "$T/kv.data" '.*')"
	check "perfetto export names the threads" grep -q 'kvstore' "$T/kv.pfraw"
fi
