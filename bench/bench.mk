# bench.mk - benchmarks.  `make bench` writes build/bench/results.json and
# prints a table (bench/run.sh).
BENCH_BUILD := $(BUILD)/bench
BENCH_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Iinclude

$(BENCH_BUILD)/gen/bench_funcs.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh bench 10000 > $@

$(BENCH_BUILD)/bench_patch: bench/bench_patch.c $(BENCH_BUILD)/gen/bench_funcs.c $(LIBNEEDLE)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $(filter %.c,$^) -o $@ \
		-L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD)) -lpthread

BENCH_PROGS := $(BENCH_BUILD)/bench_patch


$(BENCH_BUILD)/bench_loop: bench/bench_loop.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_loop $(NEEDLE) $(BUILD)/tests/cli/threads

$(BENCH_BUILD)/bench_threads: bench/bench_threads.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@ -L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD)) -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_threads

bench: $(BENCH_PROGS)
	bench/run.sh $(BENCH_BUILD)
