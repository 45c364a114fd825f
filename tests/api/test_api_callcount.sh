#!/usr/bin/env bash
# test_api_callcount - examples/callcount.c on a program whose set of sites
# grows after libneedle starts: libapi_host.so's constructor dlopens a
# plugin after libneedle discovered the objects loaded at start and before
# callcount attaches, so the attach traces sites whose ids are past the site
# count callcount could read first; then main dlopens another plugin.
# callcount runs as is, under AddressSanitizer (no access outside its
# table), and preloaded without libneedle ahead of it (it refuses, the
# program runs untraced).  Run from build/tests/test_api_callcount.
. "$(dirname "$0")/../lib.sh"
API="$BUILD/tests/api"
PROG="$API/callcount_prog"
# calls ERRFILE FUNCTION: the call count callcount reported for FUNCTION.
calls() {
	awk -v f="$2" '$NF == f && $1 ~ /^[0-9]+$/ { n = $1 } END { print n ? n : "missing" }' "$1"
}
expected_out() {
	sed -n 's/^\(plugin_work\|late_work\): .*/&/p' "$1"
}

"$PROG" >"$T/plain.out" 2>&1
check_eq "untraced: runs both plugins" "$(expected_out "$T/plain.out" | tr '\n' ' ')" \
	"plugin_work: 1499500 late_work: 14950 "

# callcount, with libneedle preloaded ahead of it.
LD_PRELOAD="$BUILD/libneedle.so $BUILD/examples/libcallcount.so" "$PROG" >"$T/cc.out" 2>"$T/cc.err"
check_eq "callcount: exit 0" "$?" 0
check_eq "callcount: the program's output is its own" "$(expected_out "$T/cc.out")" "$(expected_out "$T/plain.out")"
before=$(sed -n 's/^sites before the plugin: //p' "$T/cc.out")
id=$(sed -n 's/^plugin_leaf site id: //p' "$T/cc.out")
check "the plugin's site ids ($id) are past the count before it was loaded ($before)" \
	test "${id:--1}" -ge "${before:-0}" -a "${before:--1}" -ge 1
check "callcount attached after the plugin was loaded" grep -q '^callcount: tracing [0-9]* functions' "$T/cc.err"
check_eq "callcount counted plugin_leaf (a site id past its first count)" "$(calls "$T/cc.err" plugin_leaf)" 1000
check_eq "callcount counted plugin_work" "$(calls "$T/cc.err" plugin_work)" 1
check_eq "callcount counted main" "$(calls "$T/cc.err" main)" 1
check_eq "the plugin loaded after the attach is not in the link" "$(calls "$T/cc.err" late_leaf)" missing

# The same under AddressSanitizer: every access of callcount's handlers and
# report is checked.  libneedle keeps some allocations on purpose (old site
# indexes a trapped thread may still read): leaks inside it are not reported.
libasan=$(gcc -print-file-name=libasan.so)
echo "leak:libneedle.so" >"$T/lsan.supp"
ASAN_OPTIONS=exitcode=99 LSAN_OPTIONS="suppressions=$T/lsan.supp" \
	LD_PRELOAD="$libasan $BUILD/libneedle.so $API/libcallcount_asan.so" "$PROG" >"$T/asan.out" 2>"$T/asan.err"
rc=$?
check_eq "callcount under AddressSanitizer: exit 0" "$rc" 0
check "no AddressSanitizer report" bash -c "! grep -q 'ERROR: \(Address\|Leak\)Sanitizer' '$T/asan.err'"
check_eq "under AddressSanitizer: plugin_leaf counted" "$(calls "$T/asan.err" plugin_leaf)" 1000
[ "$rc" -eq 0 ] || sed -n '1,25s/^/      /p' "$T/asan.err"

# Preloaded alone, callcount brings libneedle in after the C library, where
# it cannot interpose: callcount says so and does not attach.
LD_PRELOAD="$BUILD/examples/libcallcount.so" "$PROG" >"$T/alone.out" 2>"$T/alone.err"
check_eq "callcount preloaded alone: exit 0" "$?" 0
check "it says to preload libneedle first" grep -q 'libneedle.so is loaded after the C library; preload it first' "$T/alone.err"
check_eq "the program runs untraced" "$(expected_out "$T/alone.out")" "$(expected_out "$T/plain.out")"
