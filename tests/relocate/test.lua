-- A Lua workload with known counts of C-level calls: print (luaB_print)
-- 38 times, math.sqrt (math_sqrt) 1000 times, string.format
-- (str_format) 1 time.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
for i = 1, 37 do print(i, fib(i % 15)) end
local s = 0
for i = 1, 1000 do s = s + math.sqrt(i) end
print(string.format("%.6f", s))
