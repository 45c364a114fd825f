# tests.mk - test programs.  Each test program prints PASS:/FAIL: lines;
# tests/run.sh runs them all and prints the summary.
TEST_BUILD := $(BUILD)/tests
TEST_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Iinclude -Itests
TEST_LINK := -L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD)) -lpthread -ldl
PFE := -fpatchable-function-entry=5

# A test script that stays in the source tree (it sources tests/lib.sh
# beside it) but runs from build/tests: a two-line launcher.
define SCRIPT_TEST
	@mkdir -p $(dir $@); printf '#!/bin/sh\nexec bash %s "$$@"\n' "$(abspath $<)" > $@; chmod +x $@
endef

# Tests by subject.  Every test is an executable build/tests/TIER/test_*:
# a compiled program, or the launcher of a script tests/TIER/test_*.sh
# (a script needs no rule of its own unless it has prerequisites to name).
# tests/run.sh runs the tiers in this order and refuses a tier folder
# that is not listed here, so that no test is left out unseen.
TEST_TIERS := unit api agent record attach relocate views format robust servers uftrace-compat
define TIER_SCRIPTS
$(TEST_BUILD)/$(1)/test_%: tests/$(1)/test_%.sh
	$$(SCRIPT_TEST)
TESTS += $$(patsubst tests/$(1)/%.sh,$(TEST_BUILD)/$(1)/%,$$(wildcard tests/$(1)/test_*.sh))
endef
$(foreach t,$(TEST_TIERS),$(eval $(call TIER_SCRIPTS,$(t))))
# make test-quick's selection (tests/run.sh's syntax: TIER or TIER/NAME):
# the tiers that take seconds, and of the others one test of each
# mechanism.  About 80 s on 2 cores; what it leaves out (test_threads 54 s,
# test_attach_cycles 61 s, test_snapshot 37 s, the servers, the sanitizer
# builds, uftrace's suite...) runs in make test.
QUICK_TESTS := unit api agent format views record/test_record_* record/test_args record/test_ctl \
	record/test_cxx_names record/test_dlopen_search record/test_streaming record/test_subtrees \
	attach/test_inject attach/test_attach_sleepers relocate/test_relocate
empty :=
comma := ,
QUICK_SELECTION := $(subst $(empty) $(empty),$(comma),$(strip $(QUICK_TESTS)))

# Site forms: each object with its own compiler and flags.
$(TEST_BUILD)/forms/gcc.o: tests/agent/forms_gcc.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fcf-protection=none -c $< -o $@
$(TEST_BUILD)/forms/gcc_cet.o: tests/agent/forms_gcc_cet.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fcf-protection=full -c $< -o $@
$(TEST_BUILD)/forms/clang.o: tests/agent/forms_clang.c
	@mkdir -p $(dir $@); clang $(TEST_CFLAGS) $(PFE) -fcf-protection=none -c $< -o $@
$(TEST_BUILD)/forms/clang_cet.o: tests/agent/forms_clang_cet.c
	@mkdir -p $(dir $@); clang $(TEST_CFLAGS) $(PFE) -fcf-protection=full -c $< -o $@
$(TEST_BUILD)/forms/fentry_pie.o: tests/agent/forms_fentry.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -pg -mfentry -fPIE -c $< -o $@
$(TEST_BUILD)/forms/fentry_nopie.o: tests/agent/forms_fentry.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -pg -mfentry -fno-pie -c $< -o $@
$(TEST_BUILD)/forms/mnop.o: tests/agent/forms_mnop.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -pg -mfentry -mnop-mcount -fno-pie -c $< -o $@
$(TEST_BUILD)/forms/gcc_nopie.o: tests/agent/forms_gcc.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fno-pie -c $< -o $@
$(TEST_BUILD)/libforms.so: tests/agent/forms_lib.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fPIC -shared $< -o $@

$(TEST_BUILD)/agent/test_site_forms_pie: tests/agent/test_site_forms.c $(TEST_BUILD)/forms/gcc.o \
		$(TEST_BUILD)/forms/gcc_cet.o $(TEST_BUILD)/forms/clang.o $(TEST_BUILD)/forms/clang_cet.o \
		$(TEST_BUILD)/forms/fentry_pie.o $(TEST_BUILD)/libforms.so $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) -DFORMS_PIE -DFORMS_LIB='"$(abspath $(TEST_BUILD))/libforms.so"' \
		$(filter %.c %.o,$^) -o $@ $(TEST_LINK)

$(TEST_BUILD)/agent/test_site_forms_nopie: tests/agent/test_site_forms.c $(TEST_BUILD)/forms/mnop.o \
		$(TEST_BUILD)/forms/fentry_nopie.o $(TEST_BUILD)/forms/gcc_nopie.o $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) -fno-pie -no-pie -pg $(filter %.c %.o,$^) -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/agent/test_site_forms_pie $(TEST_BUILD)/agent/test_site_forms_nopie

$(TEST_BUILD)/gen/stress_funcs.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh stress 1200 > $@

$(TEST_BUILD)/agent/test_stress: tests/agent/test_stress.c $(TEST_BUILD)/gen/stress_funcs.c $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/agent/test_stress

# -O2 with patchable entries on every function of the test.
$(TEST_BUILD)/agent/test_%: tests/agent/test_%.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(PFE) $< -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/agent/test_args

$(TEST_BUILD)/agent/test_no_sites: tests/agent/test_no_sites.c $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) $< -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/agent/test_hostile $(TEST_BUILD)/agent/test_consumer_api
TESTS += $(TEST_BUILD)/agent/test_trap $(TEST_BUILD)/agent/test_sigtrap_blocked $(TEST_BUILD)/agent/test_stop_lost \
	$(TEST_BUILD)/agent/test_bad_input \
	$(TEST_BUILD)/agent/test_no_sites

# Under AddressSanitizer: the stress test and the argument test.
TEST_LINK_ASAN := -fsanitize=address -L$(BUILD)/asan -lneedle -Wl,-rpath,$(abspath $(BUILD))/asan -lpthread -ldl
$(TEST_BUILD)/agent/test_stress_asan: tests/agent/test_stress.c $(TEST_BUILD)/gen/stress_funcs.c $(LIBNEEDLE_ASAN)
	gcc $(TEST_CFLAGS) $(ASAN) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK_ASAN)
$(TEST_BUILD)/agent/test_args_asan: tests/agent/test_args.c $(LIBNEEDLE_ASAN)
	gcc $(TEST_CFLAGS) $(ASAN) $(PFE) $< -o $@ $(TEST_LINK_ASAN)

TESTS += $(TEST_BUILD)/agent/test_stress_asan $(TEST_BUILD)/agent/test_args_asan

# The same stress on relocated sites: 10,000 functions built without
# patchable entries, 300 rounds, under AddressSanitizer, run with
# NEEDLE_SITES=all.
$(TEST_BUILD)/gen/stress_funcs_mul3_10k.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh stress 10000 mul3 > $@
$(TEST_BUILD)/relocate/stress_reloc_asan: tests/agent/test_stress.c $(TEST_BUILD)/gen/stress_funcs_mul3_10k.c $(LIBNEEDLE_ASAN)
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(ASAN) -O1 -DFUNCS=10000 -DROUNDS=300 '-DSTRESS_EXPECT(a,i)=((a)*3+(i)+1)' '-DSTRESS_INDEX(r)=(((r)/3)>>32)' $(filter %.c,$^) -o $@ $(TEST_LINK_ASAN)
$(TEST_BUILD)/relocate/test_stress_reloc: tests/relocate/test_stress_reloc.sh $(TEST_BUILD)/relocate/stress_reloc_asan
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/relocate/test_stress_reloc

# Programs the script tests (tests/*/test_*.sh) run.
CLI_PROGS := $(patsubst tests/progs/%.c,$(TEST_BUILD)/progs/%,$(wildcard tests/progs/*.c))
$(TEST_BUILD)/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@ -lpthread
$(TEST_BUILD)/progs/srclines: tests/progs/srclines_part.h
# They use the libneedle in their process through needle.h (dlsym).
$(TEST_BUILD)/progs/graph_asm $(TEST_BUILD)/progs/graph_switch: $(TEST_BUILD)/progs/%: tests/progs/%.c include/needle.h
	@mkdir -p $(dir $@)
	gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude $(PFE) $< -o $@ -lpthread

TESTS += $(CLI_PROGS) $(NEEDLE) $(BUILD)/demo/kvstore

# uftrace 0.13's own test suite, its replay-graph tests run through needle
# (tests/uftrace-compat/run.py; the suite is read from its path, never
# copied here).
$(TEST_BUILD)/uftrace-compat/test_uftrace_compat: tests/uftrace-compat/test_uftrace_compat.sh tests/uftrace-compat/run.py \
		tests/uftrace-compat/shim/runtest.py tests/uftrace-compat/shim/uftrace $(NEEDLE) $(LIBNEEDLE)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/uftrace-compat/test_uftrace_compat

# The reader, fuzzed under AddressSanitizer (run by tests/format/test_corrupt.sh).
READER_SRC := $(wildcard src/reader/*.c) $(wildcard src/format/*.c)
$(TEST_BUILD)/fuzz_reader_asan: tests/format/fuzz_reader.c $(READER_SRC)
	gcc $(TEST_CFLAGS) $(ASAN) -Isrc $^ -o $@ $(CLI_LIBS)

TESTS += $(TEST_BUILD)/fuzz_reader_asan

# Control flow that skips or interrupts traced returns (tests/agent/test_unwind.sh).
$(TEST_BUILD)/progs/unwind_c_O0: tests/agent/unwind_c.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O0 -g $(PFE) $< -o $@ -lpthread
$(TEST_BUILD)/progs/unwind_c_O2: tests/agent/unwind_c.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g $(PFE) $< -o $@ -lpthread
# clang++: gcc 12 cannot link C++ with patchable entries in COMDAT groups.
$(TEST_BUILD)/progs/unwind_cpp: tests/agent/unwind_cpp.cpp
	@mkdir -p $(dir $@); clang++ -O2 -g $(PFE) $< -o $@ -lpthread

TESTS += $(TEST_BUILD)/progs/unwind_c_O0 $(TEST_BUILD)/progs/unwind_c_O2 $(TEST_BUILD)/progs/unwind_cpp

# LLVM XRay's entry sleds as sites (tests/agent/test_xray.sh): clang's
# -fxray-instrument and no needle flag.
$(TEST_BUILD)/progs/xray_prog: tests/agent/xray_prog.c
	@mkdir -p $(dir $@); clang -std=gnu11 -O2 -Wall -Wextra -Werror -fxray-instrument -fxray-instruction-threshold=1 $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/xray_prog

# Exit sites (tests/agent/test_exit_sites.sh): gcc's exit NOP5s (non-PIE:
# gcc has no -mnop-mcount for position-independent code; compiled with -pg,
# linked without, so no gmon profiling), and XRay's exit and tail sleds.
EXIT_SITE_CFLAGS := -fno-pic -pg -mfentry -mnop-mcount -mrecord-mcount -minstrument-return=nop5 -mrecord-return
$(TEST_BUILD)/progs/exit_prog_gcc: tests/agent/exit_prog.c
	@mkdir -p $(dir $@)
	gcc -std=gnu11 -O2 -Wall -Wextra -Werror $(EXIT_SITE_CFLAGS) -c $< -o $@.o
	gcc -no-pie $@.o -o $@ -lpthread
$(TEST_BUILD)/progs/exit_prog_xray: tests/agent/exit_prog.c
	@mkdir -p $(dir $@); clang -std=gnu11 -O2 -Wall -Wextra -Werror -fxray-instrument -fxray-instruction-threshold=1 $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/exit_prog_gcc $(TEST_BUILD)/progs/exit_prog_xray
# What the calling trampoline hands through (tests/record/test_direct.sh).
$(TEST_BUILD)/progs/calling_O0 $(TEST_BUILD)/progs/calling_O2: $(TEST_BUILD)/progs/calling_%: tests/progs/calling.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -$* -g -Wall -Wextra -Werror $(PFE) $< -o $@
TESTS += $(TEST_BUILD)/progs/calling_O0 $(TEST_BUILD)/progs/calling_O2

# Programs exec'ed, followed into the recording (tests/record/test_exec_follow.sh).
$(TEST_BUILD)/progs/exec_prog: tests/record/exec_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O0 -g -Wall -Wextra -Werror $(PFE) $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/exec_prog

# The kernel's side of each thread (tests/record/test_kernel.sh).
$(TEST_BUILD)/progs/kernel_prog: tests/record/kernel_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/kernel_prog

# The flight recorder (tests/record/test_snapshot.sh).
$(TEST_BUILD)/progs/snap_prog: tests/record/snap_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/snap_prog

# A thread borrowed in a restartable sleep (tests/attach/test_attach_sleep.sh).
$(TEST_BUILD)/progs/sleeper: tests/attach/sleeper.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $< -o $@
TESTS += $(TEST_BUILD)/progs/sleeper

# Arguments and return values (tests/record/test_args.sh).
$(TEST_BUILD)/progs/args_prog: tests/record/args_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/args_prog
# Grouping and filtering by those values (tests/views/test_args_views.sh).
$(TEST_BUILD)/progs/args_views_prog: tests/views/args_views_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/args_views_prog


$(TEST_BUILD)/progs/threads_scale: tests/agent/threads_scale.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(PFE) $< -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/progs/threads_scale

$(TEST_BUILD)/gen/dstress_funcs.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh dstress 1000 > $@
$(TEST_BUILD)/agent/test_dispatch_stress_asan: tests/agent/test_dispatch_stress.c $(TEST_BUILD)/gen/dstress_funcs.c $(LIBNEEDLE_ASAN)
	gcc $(TEST_CFLAGS) $(ASAN) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK_ASAN)

TESTS += $(TEST_BUILD)/agent/test_dispatch_stress_asan

# Fault injection (tests/robust/test_faults.sh): a preloaded shim fails the Nth
# allocation, mmap or mprotect made by libneedle's code.
$(TEST_BUILD)/robust/fault_shim.so: tests/robust/fault_shim.c
	@mkdir -p $(dir $@)
	gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared $< -o $@
$(TEST_BUILD)/robust/fault_api: tests/robust/fault_api.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(PFE) $< -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/robust/fault_shim.so $(TEST_BUILD)/robust/fault_api

# dlclose of traced objects (test_dlclose).
$(TEST_BUILD)/libdl_lib.so: tests/agent/dl_lib.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fPIC -shared $< -o $@
$(TEST_BUILD)/libdl_lib_b.so: tests/agent/dl_lib.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -DDL_PAD -fPIC -shared $< -o $@
$(TEST_BUILD)/agent/test_dlclose: tests/agent/test_dlclose.c $(TEST_BUILD)/libdl_lib.so $(TEST_BUILD)/libdl_lib_b.so $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) $(PFE) -DDL_LIB='"$(abspath $(TEST_BUILD))/libdl_lib.so"' \
		-DDL_LIB_B='"$(abspath $(TEST_BUILD))/libdl_lib_b.so"' $< -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/agent/test_dlclose
# Forks while libneedle walks the loaded objects: no child left with the
# loader's lock.
$(TEST_BUILD)/agent/test_fork_walk: tests/agent/test_fork_walk.c $(TEST_BUILD)/libdl_lib.so $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) $(PFE) -DDL_LIB='"$(abspath $(TEST_BUILD))/libdl_lib.so"' $< -o $@ $(TEST_LINK)
TESTS += $(TEST_BUILD)/agent/test_fork_walk

# 6-byte fentry calls normalized while threads run through them.
$(TEST_BUILD)/patch/libfentry_race.so: tests/agent/fentry_race_lib.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -fPIC -shared -pg -mfentry $< -o $@ -lpthread
$(TEST_BUILD)/patch/fentry_race: tests/agent/fentry_race.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) $< -o $@ -ldl
$(TEST_BUILD)/agent/test_fentry_race: tests/agent/test_fentry_race.sh $(TEST_BUILD)/patch/libfentry_race.so \
		$(TEST_BUILD)/patch/fentry_race $(NEEDLE) $(LIBNEEDLE)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/agent/test_fentry_race
include tests/api.mk
include tests/unit.mk
include tests/robust.mk

# Loading libneedle into a running process (src/cli/inject/inject.c).
$(TEST_BUILD)/attach/ticker: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) $< -o $@ -lpthread
# Attached to and detached from again and again: checks that its threads'
# calls, blocking syscalls, forks and dlopens were not disturbed.
$(TEST_BUILD)/attach/attach_target: tests/attach/attach_target.c | $(TEST_BUILD)/libdl_lib.so
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -pthread $< -o $@ -ldl
$(TEST_BUILD)/attach/inject_driver: tests/attach/inject_driver.c src/cli/inject/inject.c src/cli/inject/inject.h src/cli/util/procfs.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -Isrc tests/attach/inject_driver.c src/cli/inject/inject.c src/cli/util/procfs.c -o $@ -ldl
$(TEST_BUILD)/attach/test_inject: tests/attach/test_inject.sh $(TEST_BUILD)/attach/ticker $(TEST_BUILD)/attach/inject_driver $(LIBNEEDLE)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_inject

# needle record -p: the ticker in every site form, and in the forms it
# must refuse (no sites, static, 32-bit).
ATTACH_TICKERS := $(addprefix $(TEST_BUILD)/attach/ticker_,fentry nop_mcount clang cet plain static 32)
$(TEST_BUILD)/attach/ticker_fentry: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -pg -mfentry $< -o $@ -lpthread
$(TEST_BUILD)/attach/ticker_nop_mcount: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) -pg -mfentry -mnop-mcount -fno-pie -no-pie $< -o $@ -lpthread
$(TEST_BUILD)/attach/ticker_clang: tests/attach/ticker.c
	@mkdir -p $(dir $@); clang $(TEST_CFLAGS) $(PFE) $< -o $@ -lpthread
$(TEST_BUILD)/attach/ticker_cet: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fcf-protection=full $< -o $@ -lpthread
$(TEST_BUILD)/attach/ticker_plain: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $< -o $@ -lpthread
$(TEST_BUILD)/attach/ticker_static: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -static $< -o $@ -lpthread
$(TEST_BUILD)/attach/ticker_32: tests/attach/ticker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -m32 $< -o $@ -lpthread
ATTACH_DEPS := $(TEST_BUILD)/attach/attach_target $(TEST_BUILD)/attach/ticker $(ATTACH_TICKERS) \
	$(TEST_BUILD)/libdl_lib.so $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
$(TEST_BUILD)/attach/test_attach: tests/attach/test_attach.sh $(ATTACH_DEPS)
	$(SCRIPT_TEST)
$(TEST_BUILD)/attach/test_attach_cycles: tests/attach/test_attach_cycles.sh $(ATTACH_DEPS)
	$(SCRIPT_TEST)
$(TEST_BUILD)/attach/test_attach_errors: tests/attach/test_attach_errors.sh $(ATTACH_DEPS) $(TEST_BUILD)/unit/test_exe_class
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach $(TEST_BUILD)/attach/test_attach_cycles $(TEST_BUILD)/attach/test_attach_errors
# What needle record -p leaves in a process, and how it tells its end.
$(TEST_BUILD)/attach/leftover_target: tests/attach/leftover_target.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) $< -o $@ -lpthread
$(TEST_BUILD)/attach/test_attach_leftovers: tests/attach/test_attach_leftovers.sh $(TEST_BUILD)/attach/leftover_target $(ATTACH_DEPS)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_leftovers
# needle record -p again and again while threads and children come and go.
$(TEST_BUILD)/attach/churn_target: tests/attach/churn_target.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -pthread $< -o $@
$(TEST_BUILD)/attach/test_attach_churn: tests/attach/test_attach_churn.sh $(TEST_BUILD)/attach/churn_target $(ATTACH_DEPS)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_churn
# needle record -p killed between the agent's connect and its hello.
$(TEST_BUILD)/attach/kill_at_hello: tests/attach/kill_at_hello.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $< -o $@
$(TEST_BUILD)/attach/test_attach_kill: tests/attach/test_attach_kill.sh $(TEST_BUILD)/attach/kill_at_hello $(ATTACH_DEPS)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_kill
# The processes forked while a recording ran, let go when it ends.
$(TEST_BUILD)/attach/fork_target: tests/attach/fork_target.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -pthread $< -o $@
$(TEST_BUILD)/attach/test_attach_fork_release: tests/attach/test_attach_fork_release.sh \
		$(TEST_BUILD)/attach/fork_target $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_fork_release
# Two needle record -p on one process at once.
$(TEST_BUILD)/attach/test_attach_concurrent: tests/attach/test_attach_concurrent.sh $(ATTACH_DEPS)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_concurrent

# Event loops asleep in epoll_wait, sigsuspend, sigtimedwait, attached to.
$(TEST_BUILD)/attach/eventloop: tests/attach/eventloop.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) $< -o $@
$(TEST_BUILD)/attach/test_attach_eventloop: tests/attach/test_attach_eventloop.sh $(TEST_BUILD)/attach/eventloop \
		$(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_eventloop

# Threads asleep in epoll_wait, poll, select, read, a futex, left asleep
# behind a door while the C library's entries are rewritten.
$(TEST_BUILD)/attach/sleepers: tests/attach/sleepers.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) $< -o $@ -lpthread
$(TEST_BUILD)/attach/test_attach_sleepers: tests/attach/test_attach_sleepers.sh $(TEST_BUILD)/attach/sleepers \
		$(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_sleepers

# Threads that block every signal, held with ptrace for each batch.
$(TEST_BUILD)/attach/blocker: tests/attach/blocker.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) $< -o $@ -lpthread
$(TEST_BUILD)/attach/test_attach_blocker: tests/attach/test_attach_blocker.sh $(TEST_BUILD)/attach/blocker \
		$(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_blocker

# Relocated sites: hand-written functions in an object built without
# patchable entries (tests/relocate).
$(TEST_BUILD)/relocate/libreloc.so: tests/relocate/reloc_funcs.S tests/relocate/reloc_ifunc.c
	@mkdir -p $(dir $@); gcc -O2 -g -fPIC -shared $^ -o $@
$(TEST_BUILD)/relocate/reloc_api: tests/relocate/test_relocate.c $(TEST_BUILD)/relocate/libreloc.so \
		tests/api/direct_handlers.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) -mgeneral-regs-only -c tests/api/direct_handlers.c -o $@.direct.o
	gcc $(TEST_CFLAGS) $< $@.direct.o -o $@ -L$(TEST_BUILD)/relocate -lreloc \
		-Wl,-rpath,$(abspath $(TEST_BUILD))/relocate $(TEST_LINK)
$(TEST_BUILD)/relocate/test_relocate: tests/relocate/test_relocate.sh $(TEST_BUILD)/relocate/reloc_api
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/relocate/test_relocate
$(TEST_BUILD)/relocate/libc_workload: tests/relocate/libc_workload.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $< -o $@ -lpthread -lm
$(TEST_BUILD)/relocate/dl_later: tests/relocate/dl_later.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $< -o $@ -ldl
$(TEST_BUILD)/relocate/liblater.so: tests/relocate/later_lib.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared $< -o $@
$(TEST_BUILD)/relocate/test_relocate_real: tests/relocate/test_relocate_real.sh $(TEST_BUILD)/relocate/libc_workload \
		$(TEST_BUILD)/relocate/dl_later $(TEST_BUILD)/relocate/liblater.so $(ATTACH_DEPS)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/relocate/test_relocate_real
$(TEST_BUILD)/relocate/test_relocate_lua: tests/relocate/test_relocate_lua.sh $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/relocate/test_relocate_lua

# Arguments and return values named and typed from DWARF (tests/record/test_auto_args.sh).
$(TEST_BUILD)/progs/auto_prog: tests/record/auto_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@
TESTS += $(TEST_BUILD)/progs/auto_prog
# A call of an IFUNC whose old version is a plain function (libm's expf).
$(TEST_BUILD)/progs/ifunc_prog: tests/record/ifunc_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $< -o $@ -lm
TESTS += $(TEST_BUILD)/progs/ifunc_prog
# A function its compiler left without an entry in an object built for
# tracing (tests/record/test_sites_kind.sh).
$(TEST_BUILD)/progs/notrace_prog: tests/record/notrace_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@
TESTS += $(TEST_BUILD)/progs/notrace_prog
# The signals needle record --signal takes (tests/record/test_signal.sh).
$(TEST_BUILD)/progs/signal_prog: tests/record/signal_prog.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@
TESTS += $(TEST_BUILD)/progs/signal_prog
# The same under clang at -O0 and -O2: other DWARF locations (a frame
# base in rbp or rsp, values computed from a register).
$(TEST_BUILD)/progs/auto_prog_clang_O0: tests/record/auto_prog.c
	@mkdir -p $(dir $@); clang -std=gnu11 -O0 -g -Wall -Wextra -Werror $(PFE) $< -o $@
$(TEST_BUILD)/progs/auto_prog_clang_O2: tests/record/auto_prog.c
	@mkdir -p $(dir $@); clang -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@
TESTS += $(TEST_BUILD)/progs/auto_prog_clang_O0 $(TEST_BUILD)/progs/auto_prog_clang_O2
# -fpatchable-function-entry=M,N with N NOPs before each symbol (the
# section lists the first of them), with and without CET's endbr64.
$(TEST_BUILD)/progs/threads_pfe72: tests/progs/threads.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -fcf-protection=none -fpatchable-function-entry=7,2 $< -o $@ -lpthread
$(TEST_BUILD)/progs/threads_pfe83_cet: tests/progs/threads.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -fcf-protection=full -fpatchable-function-entry=8,3 $< -o $@ -lpthread
TESTS += $(TEST_BUILD)/progs/threads_pfe72 $(TEST_BUILD)/progs/threads_pfe83_cet
# No debug info and no libraries (--auto-args refuses it).
$(TEST_BUILD)/progs/static_nodebug: tests/record/static_nodebug.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -static -s $< -o $@
TESTS += $(TEST_BUILD)/progs/static_nodebug
# A library with DWARF of its own, and a program calling it and the C library.
$(TEST_BUILD)/progs/libauto_lib.so: tests/record/auto_lib.c tests/record/auto_lib2.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared $(PFE) $^ -o $@
$(TEST_BUILD)/progs/lib_prog: tests/record/lib_prog.c $(TEST_BUILD)/progs/libauto_lib.so
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@ \
		-L$(TEST_BUILD)/progs -lauto_lib -Wl,-rpath,$(abspath $(TEST_BUILD)/progs)
TESTS += $(TEST_BUILD)/progs/libauto_lib.so $(TEST_BUILD)/progs/lib_prog
# A library calling its own exported function through its PLT, built
# without patchable entries, and its caller (tests/record/test_libname.sh).
$(TEST_BUILD)/progs/libnest_lib.so: tests/record/nest_lib.c
	@mkdir -p $(dir $@); gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -fPIC -shared $< -o $@
$(TEST_BUILD)/progs/nest_prog: tests/record/nest_prog.c $(TEST_BUILD)/progs/libnest_lib.so
	@mkdir -p $(dir $@); gcc -std=gnu11 -O0 -g -Wall -Wextra -Werror $(PFE) $< -o $@ \
		-L$(TEST_BUILD)/progs -lnest_lib -Wl,-rpath,$(abspath $(TEST_BUILD)/progs)
TESTS += $(TEST_BUILD)/progs/libnest_lib.so $(TEST_BUILD)/progs/nest_prog
# C++ names: clang++ (gcc 12 cannot link C++ with patchable entries in COMDAT groups).
$(TEST_BUILD)/progs/cxx_prog: tests/record/cxx_prog.cpp
	@mkdir -p $(dir $@); clang++ -O2 -g -Wall -Wextra -Werror $(PFE) $< -o $@
# g++ without needle's flags (its entries relocated): DWARF without
# DW_AT_calling_convention, at -O0 and -O2.
$(TEST_BUILD)/progs/cxx_prog_gxx_O0: tests/record/cxx_prog.cpp
	@mkdir -p $(dir $@); g++ -O0 -g -Wall -Wextra -Werror $< -o $@
$(TEST_BUILD)/progs/cxx_prog_gxx_O2: tests/record/cxx_prog.cpp
	@mkdir -p $(dir $@); g++ -O2 -g -Wall -Wextra -Werror $< -o $@
# ... and linked --as-needed: it uses nothing of libstdc++, so the process
# has no C++ runtime (no demangler) at all.
$(TEST_BUILD)/progs/cxx_prog_noruntime: tests/record/cxx_prog.cpp
	@mkdir -p $(dir $@); g++ -O2 -g -fno-exceptions -Wall -Wextra -Werror -Wl,--as-needed $< -o $@
TESTS += $(TEST_BUILD)/progs/cxx_prog $(TEST_BUILD)/progs/cxx_prog_gxx_O0 $(TEST_BUILD)/progs/cxx_prog_gxx_O2 \
	$(TEST_BUILD)/progs/cxx_prog_noruntime
# std::string values (uftrace's /S): g++ -O0, its entries relocated.
$(TEST_BUILD)/progs/stdstring_prog: tests/record/stdstring_prog.cpp
	@mkdir -p $(dir $@); g++ -O0 -g -Wall -Wextra -Werror $< -o $@
TESTS += $(TEST_BUILD)/progs/stdstring_prog

# Runtimes that walk, copy or switch their own stacks and code: HotSpot
# and node (V8), recorded from the start and attached to under load.  The
# Java programs are compiled with javac into the build directory at test
# time; java, javac and node come from scripts/setup.sh.
RUNTIMES_DEPS := tests/lib.sh tests/servers/Hello.java tests/servers/HttpEcho.java \
	tests/servers/http_echo.js tests/servers/http_load.py $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
$(TEST_BUILD)/servers/test_runtimes_record: tests/servers/test_runtimes_record.sh $(RUNTIMES_DEPS)
	$(SCRIPT_TEST)
$(TEST_BUILD)/servers/test_runtimes_attach: tests/servers/test_runtimes_attach.sh $(RUNTIMES_DEPS)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/servers/test_runtimes_record $(TEST_BUILD)/servers/test_runtimes_attach

# Debian's own servers, as packaged (tests/servers: redis-server, nginx,
# memcached, PostgreSQL 15), under load, recorded with needle record -p:
# part of `make test` (about 3 minutes on 2 cores); `make test-servers`
# runs them alone.
SERVER_TESTS := tests/servers/test_redis.sh tests/servers/test_nginx.sh \
	tests/servers/test_memcached.sh tests/servers/test_postgres.sh
SERVERS_DEPS := tests/servers/lib.sh tests/servers/load.py tests/lib.sh $(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
$(patsubst tests/servers/test_%.sh,$(TEST_BUILD)/servers/test_%,$(SERVER_TESTS)): $(SERVERS_DEPS)
.PHONY: test-servers
test-servers: $(filter $(TEST_BUILD)/servers/%,$(TESTS))
	tests/run.sh $(TEST_BUILD) servers

# Signals that come while a thread is held: delivered as sent.
$(TEST_BUILD)/attach/sigq_target: tests/attach/sigq_target.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $< -o $@
$(TEST_BUILD)/attach/test_attach_signals: tests/attach/test_attach_signals.sh $(TEST_BUILD)/attach/sigq_target \
		$(NEEDLE) $(LIBNEEDLE) $(LIBNEEDLE_BOOT)
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/attach/test_attach_signals
