#!/usr/bin/env bash
# test_real_programs - Lua and zlib, built from Debian's source packages with
# -fpatchable-function-entry=5 (tests/relocate/build_real_programs.sh): output
# byte-identical to an untraced run, exact call counts for the functions the
# workload calls a known number of times, and the nesting of zlib's calls.
. "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")/.." && pwd)
TP="$BUILD/third_party"

if ! "$HERE/relocate/build_real_programs.sh" "$BUILD" >"$T/build.log" 2>&1; then
	fail "fetch and build Lua and zlib from Debian source packages"
	tail -5 "$T/build.log"
	exit 0
fi
pass "Lua and zlib built from Debian source packages"

plain=$("$TP/lua" "$HERE/relocate/test.lua")
traced=$("$NEEDLE" record -o "$T/lua.data" -- "$TP/lua" "$HERE/relocate/test.lua" 2>/dev/null)
check_eq "lua: output byte-identical" "$traced" "$plain"
check_eq "lua: print called 38 times" "$(calls "$T/lua.data" luaB_print)" 38
check_eq "lua: math.sqrt called 1000 times" "$(calls "$T/lua.data" math_sqrt)" 1000
check_eq "lua: string.format called once" "$(calls "$T/lua.data" str_format)" 1
check_eq "lua: one state created" "$(calls "$T/lua.data" luaL_newstate)" 1
check_eq "lua: one state closed" "$(calls "$T/lua.data" lua_close)" 1
"$NEEDLE" export --format=folded -i "$T/lua.data" -o "$T/lua.folded"
check_eq "lua: every print runs under main's protected call" \
	"$(grep -E ';luaB_print ' "$T/lua.folded" | grep -cv ';main;')" 0

plain=$("$TP/zlib_driver" 200)
traced=$("$NEEDLE" record -o "$T/z.data" -- "$TP/zlib_driver" 200 2>/dev/null)
check_eq "zlib: output byte-identical" "$traced" "$plain"
check_eq "zlib: compress2 200 times" "$(calls "$T/z.data" compress2)" 200
check_eq "zlib: uncompress 200 times" "$(calls "$T/z.data" uncompress)" 200
check_eq "zlib: deflate once per compress2" "$(calls "$T/z.data" deflate)" 200
check_eq "zlib: deflateEnd once per compress2" "$(calls "$T/z.data" deflateEnd)" 200
check_eq "zlib: inflate once per uncompress" "$(calls "$T/z.data" inflate)" 200
check_eq "zlib: inflateEnd once per uncompress" "$(calls "$T/z.data" inflateEnd)" 200
"$NEEDLE" export --format=folded -i "$T/z.data" -o "$T/z.folded"
check_eq "zlib: deflate is only called from compress2" \
	"$(grep -E ';deflate ' "$T/z.folded" | grep -cvE ';main;round_trip[^;]*;compress2;deflate ')" 0
check_eq "zlib: inflate is only called from uncompress" \
	"$(grep -E ';inflate ' "$T/z.folded" | grep -cvE ';main;round_trip[^;]*;uncompress;uncompress2;inflate ')" 0
