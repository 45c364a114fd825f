-- bench_lua.lua [ROUNDS] - the Lua interpreter (Debian's source, built
-- with patchable entries) running a loop of table, string and math work;
-- the loop's time, measured inside the program, goes to stderr as
-- "loop_ns X" so that start-up and exit are not counted.
local rounds = tonumber(arg and arg[1]) or 20000
local t0 = os.clock()
local acc, t = 0, {}
for i = 1, rounds do
	t[i % 64 + 1] = string.format("%d:%d", i, i * 3)
	acc = acc + #t[i % 64 + 1] + math.floor(math.sqrt(i))
	if i % 7 == 0 then table.insert(t, tostring(acc)) table.remove(t) end
end
local t1 = os.clock()
io.stderr:write(string.format("loop_ns %.0f\n", (t1 - t0) * 1e9))
print(acc)
