# bench.mk - benchmarks.  `make bench` writes build/bench/results.json and
# prints a table (bench/run.sh).
BENCH_BUILD := $(BUILD)/bench
BENCH_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Iinclude

$(BENCH_BUILD)/gen/bench_funcs.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh bench 10000 > $@

# The direct handlers are built as needle.h asks: -mgeneral-regs-only.
$(BENCH_BUILD)/bench_direct_handlers.o: bench/bench_direct_handlers.c include/needle.h
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -mgeneral-regs-only -c $< -o $@
$(BENCH_BUILD)/bench_patch: bench/bench_patch.c $(BENCH_BUILD)/gen/bench_funcs.c $(BENCH_BUILD)/bench_direct_handlers.o \
		$(LIBNEEDLE)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $(filter %.c %.o,$^) -o $@ \
		-L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD)) -lpthread

BENCH_PROGS := $(BENCH_BUILD)/bench_patch


$(BENCH_BUILD)/bench_loop: bench/bench_loop.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_loop $(NEEDLE) $(BUILD)/tests/progs/threads

# The kernel's side (--kernel): system calls and context switches.
$(BENCH_BUILD)/bench_kernel: bench/bench_kernel.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@ -lpthread
BENCH_PROGS += $(BENCH_BUILD)/bench_kernel

# The same loop built without any patching flag: needle reaches bench_small
# through a relocated entry (relocated_record_ns_per_call).  At -O0, so
# that bench_small is long enough to relocate (at -O2 it is "lea; ret", 5
# bytes: too short); the figure is traced minus untraced, both at -O0.
$(BENCH_BUILD)/bench_loop_plain: bench/bench_loop.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -O0 $< -o $@
BENCH_PROGS += $(BENCH_BUILD)/bench_loop_plain

# The same loop built for LLVM XRay (clang's entry and exit sleds, every
# function instrumented), traced by XRay's flight data recorder and by
# needle on the same binary.
$(BENCH_BUILD)/bench_loop_xray: bench/bench_loop.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -O2 -fxray-instrument -fxray-instruction-threshold=1 $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_loop_xray

# The same loop with gcc's exit sites (EXIT_SITE_CFLAGS, tests.mk), and the
# hook ablation of bench_patch built the same way: exits taken at the
# compiler's NOP5 before the ret instead of a hijacked return.
$(BENCH_BUILD)/bench_loop_exit: bench/bench_loop.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) $(EXIT_SITE_CFLAGS) -c $< -o $@.o
	gcc -no-pie $@.o -o $@
$(BENCH_BUILD)/bench_patch_exit: bench/bench_patch.c $(BENCH_BUILD)/gen/bench_funcs.c $(BENCH_BUILD)/bench_direct_handlers.o \
		$(LIBNEEDLE)
	gcc $(BENCH_CFLAGS) $(EXIT_SITE_CFLAGS) -c bench/bench_patch.c -o $@.o
	gcc $(BENCH_CFLAGS) $(EXIT_SITE_CFLAGS) -c $(BENCH_BUILD)/gen/bench_funcs.c -o $@.funcs.o
	gcc -no-pie $@.o $@.funcs.o $(BENCH_BUILD)/bench_direct_handlers.o -o $@ -L$(BUILD) -lneedle \
		-Wl,-rpath,$(abspath $(BUILD)) -lpthread

# The floor: a compiler-hook tracer's two {address, rdtsc} stores per call
# into a never-drained ring, and rdtsc's own throughput (bench_floor.c).
$(BENCH_BUILD)/bench_floor: bench/bench_floor.c bench/bench_floor_fn.c bench/floor_hooks.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fno-pic -c bench/bench_floor.c -o $@.o
	gcc $(BENCH_CFLAGS) -fno-pic -c bench/floor_hooks.c -o $@.hooks.o
	gcc $(BENCH_CFLAGS) -fno-pic -pg -mfentry -minstrument-return=call -c bench/bench_floor_fn.c -o $@.fn.o
	gcc -no-pie $@.o $@.hooks.o $@.fn.o -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_loop_exit $(BENCH_BUILD)/bench_patch_exit $(BENCH_BUILD)/bench_floor

# The floor under a stop's hold: tgkill to a running thread's handler,
# idle and with every CPU busy (bench_stop_floor.c; bench_servers.sh).
$(BENCH_BUILD)/bench_stop_floor: bench/bench_stop_floor.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) $< -o $@ -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_stop_floor

# The program's view of the reader's wake-ups: per-iteration percentiles.
$(BENCH_BUILD)/bench_iter: bench/bench_iter.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_iter

# Argument capture (-A) against plain recording of the same function.
$(BENCH_BUILD)/bench_args: bench/bench_args.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_args

$(BENCH_BUILD)/bench_threads: bench/bench_threads.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@ -L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD)) -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_threads

# The reader-writer-lock ablation of the dispatch path, built only for
# bench_probe: same agent, -DNEEDLE_RCU_ABLATION_RWLOCK.
ABLATION_OBJ := $(patsubst $(BUILD)/obj/%,$(BUILD)/ablation/obj/%,$(AGENT_OBJ))
$(BUILD)/ablation/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; $(CC) $(BASE_CFLAGS) -DNEEDLE_RCU_ABLATION_RWLOCK -fPIC -fvisibility=hidden $(AGENT_INC) $(FILE_CFLAGS) \
		-MMD -MP -c $< -o $@
$(BUILD)/ablation/obj/%.o: src/%.S
	@mkdir -p $(dir $@)
	$(CC) -fPIC $(AGENT_INC) -MMD -MP -c $< -o $@
# Rebuilt when a header changes, as the agent is: objects built against
# an older struct layout made a library that traced nothing.
-include $(ABLATION_OBJ:.o=.d)
$(BUILD)/ablation/$(LIBNEEDLE_SONAME): $(ABLATION_OBJ) $(LIBNEEDLE_MAP)
	$(CC) $(LIBNEEDLE_LDFLAGS) $(ABLATION_OBJ) -o $@ $(AGENT_LIBS)

$(BENCH_BUILD)/bench_probe: bench/bench_probe.c $(BENCH_BUILD)/bench_direct_handlers.o $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< $(BENCH_BUILD)/bench_direct_handlers.o -o $@ -L$(BUILD) -lneedle \
		-Wl,-rpath,$(abspath $(BUILD)) -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_probe $(BUILD)/ablation/libneedle.so

# liburcu-bp through its shared object, against needle's inlined read side.
$(BENCH_BUILD)/bench_rcu: bench/bench_rcu.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) $(AGENT_INC) $< -o $@ -lurcu-bp -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_rcu

# The views on a trace of deep stacks (bench_views.c: workload and driver).
$(BENCH_BUILD)/bench_views: bench/bench_views.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_views

# A running process with 10,000 functions, for needle record -p.
$(BENCH_BUILD)/bench_attach_target: bench/bench_attach_target.c $(BENCH_BUILD)/gen/bench_funcs.c
	gcc $(BENCH_CFLAGS) -fpatchable-function-entry=5 $^ -o $@ -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_attach_target $(LIBNEEDLE) $(LIBNEEDLE_BOOT)

# Relocated sites: the same bodies, built without patchable entries.
$(BENCH_BUILD)/libbench_reloc_count.so: bench/bench_reloc_lib.c
	gcc $(BENCH_CFLAGS) -fPIC -shared $< -o $@
$(BENCH_BUILD)/libbench_reloc_nop5.so: bench/bench_reloc_nop5.c
	gcc $(BENCH_CFLAGS) -fPIC -shared $< -o $@
# 10,000 functions whose first instruction is 5 bytes or more (x * 3 + i:
# one lea), so that each can be relocated.
$(BENCH_BUILD)/gen/reloc_funcs.c:
	@mkdir -p $(dir $@); awk 'BEGIN { for (i = 0; i < 10000; i++) \
		printf "__attribute__((noinline)) long bench_%d(long x) { __asm__ volatile(\"\"); return x * 3 + %d; }\n", i, i + 1; \
		printf "long (*const bench_table[10000])(long) = {\n"; for (i = 0; i < 10000; i++) printf "\tbench_%d,\n", i; print "};" }' > $@
$(BENCH_BUILD)/libbench_reloc_funcs.so: $(BENCH_BUILD)/gen/reloc_funcs.c
	gcc $(BENCH_CFLAGS) -fPIC -shared $< -o $@
$(BENCH_BUILD)/bench_reloc: bench/bench_reloc.c $(LIBNEEDLE) $(BENCH_BUILD)/libbench_reloc_count.so $(BENCH_BUILD)/libbench_reloc_nop5.so \
		$(BENCH_BUILD)/libbench_reloc_funcs.so $(BENCH_BUILD)/bench_direct_handlers.o
	gcc $(BENCH_CFLAGS) $< $(BENCH_BUILD)/bench_direct_handlers.o -o $@ -L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD)) \
		-ldl -lpthread

BENCH_PROGS += $(BENCH_BUILD)/bench_reloc $(BUILD)/tests/relocate/libc_workload

# One C library function in a timed loop, traced by needle and by
# bpftrace (bench_libc_uprobes.sh): a program nobody built for needle.
$(BENCH_BUILD)/bench_libc_hits: bench/bench_libc_hits.c
	@mkdir -p $(dir $@)
	gcc $(BENCH_CFLAGS) $< -o $@

BENCH_PROGS += $(BENCH_BUILD)/bench_libc_hits

bench: $(BENCH_PROGS) $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	bench/run.sh $(BENCH_BUILD)
	bench/bench_servers.sh $(BENCH_BUILD)

# Debian's servers under load, attached to (bench/bench_servers.sh), alone:
# 4-6 minutes; merges its keys into results.json and results.txt.
.PHONY: bench-servers
bench-servers: $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT) $(BENCH_BUILD)/bench_stop_floor
	bench/bench_servers.sh $(BENCH_BUILD)
