#!/usr/bin/env bash
# test_relocate_lua - Debian's own Lua interpreter, /usr/bin/lua5.4 as
# shipped, traced with relocated sites (--sites=all) while it runs a Lua
# workload: a real interpreter loop that longjmps out of coroutines and
# errors, runs finalizers and calls the C library.  Debian's lua5.4 source
# package carries no test suite, so the workload is written here.
#
# Debian links lua5.4 with its core built in (liblua5.4.la, -static) and
# exports the C API from the executable itself (-Wl,-E), so the Lua C API
# functions (lua_pushinteger, lua_resume ...) are found in /usr/bin/lua5.4's
# .dynsym, not in liblua5.4.so.0, which the interpreter never loads.
. "$(dirname "$0")/../lib.sh"
unset NEEDLE_SITES # needle record's default: --sites=all
LUA=/usr/bin/lua5.4
if [ ! -x "$LUA" ]; then
	fail "lua5.4: $LUA is not installed (scripts/setup.sh installs Debian's lua5.4)"
	exit 0
fi

# The interpreter's coroutines and errors are setjmp/longjmp: the C
# library's _setjmp and __sigsetjmp return twice and must stay untraced
# (refused as such), or a longjmp returns through a hooked return without
# its shadow frame.
# Large enough for the whole run (about 3,300 chunks of 16 KiB), so that a
# reader starved of the CPU by other jobs cannot drop events and spoil the
# exact counts.
RECORD=("$NEEDLE" record --sites=all --buffer-size=128)

cat >"$T/w.lua" <<'LUAEOF'
-- lua5.4 w.lua N [exit3]: a fixed workload, then N rounds of calls that each
-- make exactly one call of some C library functions.
local N = tonumber(arg[1]) or 0
local lines = 0
local function emit(...) lines = lines + 1; io.write(string.format(...)) end

-- strings and patterns
local text = "the quick brown fox jumps over the lazy dog; 42 foxes, 7 dogs, 1999 jumps"
local words, nums = {}, {}
for w in text:gmatch("%a+") do words[#words + 1] = w end
for n in text:gmatch("%d+") do nums[#nums + 1] = tonumber(n) end
local upper, nsub = text:gsub("(%a)(%a*)", function(a, b) return a:upper() .. b end)
emit("words %d nums %s subs %d\n", #words, table.concat(nums, "+"), nsub)
emit("%s\n", upper)
emit("%q %5.2f %-6s| %x %o %e %g\n", "a\"b\n\0c", math.pi, "left", 48879, 8, 12345.678, 1e300 * 10)
emit("%s\n", (("abc"):rep(5, "-")):reverse())
emit("find %d %d %s\n", text:find("(%d+) foxes"))
for k, v in ("k1=v1, k2=v2 ,k3 = v3"):gmatch("%s*(%w+)%s*=%s*(%w+)%s*") do emit("%s:%s ", k, v) end
emit("%s\n", (text:gsub("%f[%w]%w+", { fox = "cat", dog = "cow" })))

-- tables, and table.sort calling back into Lua for every comparison
local recs = {}
local seed = 12345
local function rnd(m) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % m end
for i = 1, 3000 do recs[i] = { id = i, key = rnd(1000), name = "r" .. rnd(100000) } end
local compares = 0
table.sort(recs, function(a, b)
	compares = compares + 1
	if a.key ~= b.key then return a.key < b.key end
	return a.id > b.id
end)
local sorted = true
for i = 2, #recs do
	local a, b = recs[i - 1], recs[i]
	if a.key > b.key or (a.key == b.key and a.id < b.id) then sorted = false end
end
emit("sorted %s (%d compares) first %d/%d last %d/%d\n", tostring(sorted), compares,
	recs[1].key, recs[1].id, recs[#recs].key, recs[#recs].id)
local t = {}
for i = 1, 100 do table.insert(t, i * i) end
table.remove(t, 1); table.insert(t, 1, -1)
emit("move %s unpack %d\n", table.concat(table.move(t, 1, 5, 1, {}), ","), select("#", table.unpack(t)))
local count, keys = {}, {}
for _, w in ipairs(words) do count[w] = (count[w] or 0) + 1 end
for k in pairs(count) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do emit("%s=%d ", k, count[k]) end
emit("\n")

-- closures
local function counter(step)
	local n = 0
	return function() n = n + step; return n end
end
local c1, c2 = counter(1), counter(10)
for _ = 1, 99 do c1(); c2() end
local fns, acc = {}, 0
for i = 1, 10 do fns[i] = function(x) return x * i end end
for i = 1, 10 do acc = acc + fns[i](i) end
emit("closures %d %d sum %d\n", c1(), c2(), acc)

-- coroutines: 80 + 1 yields, 80 + 2 resumes
local gen = coroutine.wrap(function()
	local a, b = 0, 1
	for _ = 1, 80 do coroutine.yield(a); a, b = b, a + b end
end)
local fib
for _ = 1, 80 do fib = gen() end
emit("fib79 %d\n", fib)
local co = coroutine.create(function(x)
	local y = coroutine.yield(x * 2)
	error({ code = y })
end)
local r1, v1 = coroutine.resume(co, 21)
local r2, v2 = coroutine.resume(co, 5)
emit("co %s %d %s %d %s\n", tostring(r1), v1, tostring(r2), v2.code, coroutine.status(co))

-- pcall and error: with the coroutine's, 4 errors
local okp, msg = pcall(error, "plain", 0)
emit("pcall %s %s\n", tostring(okp), msg)
okp, msg = pcall(function() local z = nil; return z.field end)
emit("pcall %s %s\n", tostring(okp), (msg:gsub("^.-:%d+: ", "")))
okp, msg = xpcall(function() error({ 1, 2, 3 }) end, function(e) return #e end)
emit("xpcall %s %d\n", tostring(okp), msg)

-- integer and float math
local isum, fsum = 0, 0.0
for i = 1, 10000 do isum = isum + i * i; fsum = fsum + 1 / i end
emit("isum %d fsum %.12f\n", isum, fsum)
emit("%d %d %d %s %s\n", 7 // 2, -7 // 2, 7 % -3, tostring(7 / 2), tostring(2 ^ 10))
emit("%d %d %s %d\n", math.maxinteger, math.mininteger, tostring(math.maxinteger + 1 == math.mininteger), 0xff ~ 0x0f)
emit("%.6f %.6f %.6f %s %s\n", math.sqrt(2), math.sin(1), math.log(10, 2), tostring(math.tointeger(3.0)), tostring(1 // 0.0))
emit("%s %s %s %.3f\n", math.type(1), math.type(1.0), tostring(math.ult(1, -1)), math.fmod(-7.5, 2))

-- string.pack / unpack
local packed = string.pack("<i4 d s2 z B j", -123456, 3.25, "packed", "zero", 255, math.mininteger)
local a, b, s, z, u, j, nextpos = string.unpack("<i4 d s2 z B j", packed)
emit("pack %d bytes: %d %.2f %s %s %d %d %d packsize %d\n", #packed, a, b, s, z, u, j, nextpos, string.packsize("i4 i8 d"))

-- utf8
local u8 = "añ€😀"
local cps = {}
for _, cp in utf8.codes(u8) do cps[#cps + 1] = cp end
emit("utf8 len %d bytes %d cps %s char %s offset %d\n", utf8.len(u8), #u8, table.concat(cps, ","),
	utf8.char(72, 228, 8364), utf8.offset(u8, 3))

-- garbage collection: two tables in a cycle, one with a finalizer, and garbage
local collected = 0
do
	local x, y = {}, {}
	x.other, y.other = y, x
	setmetatable(x, { __gc = function() collected = collected + 1 end })
	local junk = {}
	for i = 1, 20000 do junk[i] = { i, tostring(i) } end
end
collectgarbage()
collectgarbage()
emit("gc collected %d\n", collected)

-- many small writes through stdio
for i = 1, 2000 do emit("%5d %08x %-8.3f %s\n", i, i * 2654435761 % 4294967296, i / 7, ("*"):rep(i % 17)) end

-- The first gmtime_r reads TZ (tzset) once: done here, it happens whatever N.
emit("%s\n", os.date("!%Y-%m-%d %H:%M:%S", 1700000000))

-- One-to-one calls, N times: os.clock -> clock, os.date("!%d", t) ->
-- gmtime_r and one strftime, os.getenv -> getenv.
local unset = 0
for _ = 1, N do
	os.clock()
	os.date("!%d", 86400)
	if os.getenv("NEEDLE_LUA_UNSET") == nil then unset = unset + 1 end
end
emit("unset %d\n", unset)
io.write(string.format("lines %d\n", lines + 1))
if arg[2] == "exit3" then os.exit(3) end
LUAEOF
unset NEEDLE_LUA_UNSET

# Started with -E, so that no LUA_INIT or LUA_PATH of the caller's changes
# what runs.
"$LUA" -E "$T/w.lua" 1000 >"$T/plain.out"
"${RECORD[@]}" -o "$T/n1000.data" -- "$LUA" -E "$T/w.lua" 1000 >"$T/n1000.out" 2>"$T/n1000.err"
# Kept before the check: a $(...) in its arguments would reset $?.
rc=$?
check_eq "lua5.4: traced in full, exit 0 ($(tail -1 "$T/n1000.err"))" "$rc" 0
check "lua5.4: output identical to a run left alone ($(wc -l <"$T/plain.out") lines)" cmp -s "$T/plain.out" "$T/n1000.out"
"${RECORD[@]}" -o "$T/n0.data" -- "$LUA" -E "$T/w.lua" 0 >"$T/n0.out" 2>"$T/n0.err"
check_eq "lua5.4 with N=0: traced in full, exit 0" "$?" 0

"$LUA" -E "$T/w.lua" 0 exit3 >"$T/exit3.plain"
check_eq "os.exit(3): status 3 left alone" "$?" 3
"${RECORD[@]}" -o "$T/exit3.data" -- "$LUA" -E "$T/w.lua" 0 exit3 >"$T/exit3.out" 2>"$T/exit3.err"
check_eq "os.exit(3): status 3 traced" "$?" 3
check "os.exit(3): output identical, flushed by exit" cmp -s "$T/exit3.plain" "$T/exit3.out"

for f in n0 n1000; do
	check_eq "$f: no event lost" "$("$NEEDLE" info -i "$T/$f.data" | awk '/^lost events:/ { print $3 }')" 0
done

# The interpreter's own start-up and the fixed workload make the same calls
# in both runs, so the difference is the N loop's alone.
ncalls() { local n; n=$(calls "$1" "$2"); [ "$n" = missing ] && n=0; echo "$n"; }
for f in clock getenv gmtime_r strftime lua_pushnumber; do
	n0=$(ncalls "$T/n0.data" "$f")
	n1=$(ncalls "$T/n1000.data" "$f")
	check_eq "N=1000 over N=0: $f called exactly 1000 times more ($n1 - $n0)" "$((n1 - n0))" 1000
done

# The Lua C API, in lua5.4's own .dynsym.
for f in lua_pushinteger luaL_checkinteger; do
	n=$(ncalls "$T/n0.data" "$f")
	check "lua API: $f traced ($n calls)" test "$n" -gt 0
done
check_eq "lua API: lua_yieldk once per coroutine.yield" "$(calls "$T/n0.data" lua_yieldk)" 81
check_eq "lua API: lua_resume once per resume" "$(calls "$T/n0.data" lua_resume)" 82
check_eq "lua API: lua_error once per error() called from Lua" "$(calls "$T/n0.data" lua_error)" 3
"$NEEDLE" info -i "$T/n0.data" >"$T/n0.info"
check "info: lua5.4's functions relocated ($(grep -o 'lua5\.4: .*relocated ([0-9.]*%)' "$T/n0.info"))" \
	grep -qE '/lua5\.4: 0 compiled, [1-9][0-9]* of [0-9]+ relocated' "$T/n0.info"
check "info: the C library's functions relocated ($(grep -o 'libc\.so\.6: .*relocated ([0-9.]*%)' "$T/n0.info"))" \
	grep -qE '/libc\.so\.6: 0 compiled, [1-9][0-9]* of [0-9]+ relocated' "$T/n0.info"
check_eq "info: of the C library's functions that return twice, vfork alone refused as such (setjmp, _setjmp, __sigsetjmp, getcontext are entry-only sites)" \
	"$(grep -o 'libc\.so\.6: .*' "$T/n0.info" | grep -o 'returns twice [0-9]*')" "returns twice 1"
# Every protected call (LUAI_TRY: each lua_resume, pcall, load) is a
# _setjmp line; the __sigsetjmp it jumps to is none.
nsj=$(ncalls "$T/n0.data" _setjmp)
check "lua5.4's _setjmp: a call for each lua_resume at least ($nsj)" test "$nsj" -ge "$(calls "$T/n0.data" lua_resume)"
check_eq "lua5.4's _setjmp: no __sigsetjmp line, the jump it makes" "$(ncalls "$T/n0.data" __sigsetjmp)" 0

# The replay is a few hundred MB: only what is checked is kept.
"$NEEDLE" replay --mark-unwound -i "$T/n0.data" 2>"$T/replay.err" |
	awk '{ n++ } / lua_yieldk \(unwound\) \*\/$/ { y++ } END { print n + 0, y + 0 }' >"$T/replay.sum"
rc=${PIPESTATUS[0]}
read -r rlines ryield <"$T/replay.sum"
check_eq "replay: runs to completion, exit 0 ($rlines lines)" "$rc" 0
check "replay: output is not empty" test "$rlines" -gt 1000
check_eq "replay: every coroutine.yield leaves lua_yieldk by longjmp (unwound)" "$ryield" 81
