# robust.mk - robustness checks (docs/design.md, "Robustness checks"):
# UndefinedBehaviorSanitizer builds of the agent, of the stress tests and
# of the needle command; a ThreadSanitizer build of the dispatch stress
# test; a libFuzzer harness for the trace reader; and the soak.
# `make test` runs them all for a bounded time; `make check-sanitizers`
# runs only the sanitizer programs; `make fuzz` and `make soak` run long.
# The sanitizer builds use gcc, whose runtimes the test programs link.

# Leaks reported and not fixed yet (tests/robust/known_leaks.supp, one line
# each, removed when the fix lands) are held back in every LeakSanitizer run
# under make, tests/format/test_corrupt.sh's reader fuzzing included.
export LSAN_OPTIONS ?= suppressions=$(abspath tests/robust/known_leaks.supp)

# --- UndefinedBehaviorSanitizer: the agent, three test programs, the CLI.
# gcc leaves float-cast-overflow out of -fsanitize=undefined; clang does not.
UBSAN := -fsanitize=undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
UBSAN_OBJ := $(patsubst $(BUILD)/obj/%,$(BUILD)/ubsan/obj/%,$(AGENT_OBJ))
LIBNEEDLE_UBSAN := $(BUILD)/ubsan/libneedle.so

$(BUILD)/ubsan/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; gcc $(BASE_CFLAGS) $(UBSAN) -fPIC -fvisibility=hidden $(AGENT_INC) $(FILE_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/ubsan/obj/%.o: src/%.S
	@mkdir -p $(dir $@)
	@echo "  CC $@"; gcc -fPIC $(AGENT_INC) $(ASFLAGS) -MMD -MP -c $< -o $@
$(LIBNEEDLE_UBSAN): $(UBSAN_OBJ)
	@echo "  LD $@"; gcc $(UBSAN) -shared -Wl,-z,defs -Wl,-soname,libneedle.so $^ -o $@ $(AGENT_LIBS)

# The command beside its agent: `build/ubsan/needle record` preloads
# build/ubsan/libneedle.so.
UBSAN_CLI_OBJ := $(patsubst $(BUILD)/cli-obj/%,$(BUILD)/ubsan/cli-obj/%,$(CLI_OBJ))
NEEDLE_UBSAN := $(BUILD)/ubsan/needle
$(BUILD)/ubsan/cli-obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; gcc $(BASE_CFLAGS) $(UBSAN) $(CLI_INC) -MMD -MP -c $< -o $@
$(NEEDLE_UBSAN): $(UBSAN_CLI_OBJ) | $(LIBNEEDLE_UBSAN)
	@echo "  LD $@"; gcc $(UBSAN) $^ -o $@ $(CLI_LIBS)

TEST_LINK_UBSAN := $(UBSAN) -L$(BUILD)/ubsan -lneedle -Wl,-rpath,$(abspath $(BUILD))/ubsan -lpthread -ldl
$(TEST_BUILD)/robust/test_stress_ubsan: tests/agent/test_stress.c $(TEST_BUILD)/gen/stress_funcs.c $(LIBNEEDLE_UBSAN)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(UBSAN) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK_UBSAN)
$(TEST_BUILD)/robust/test_args_ubsan: tests/agent/test_args.c $(LIBNEEDLE_UBSAN)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(UBSAN) $(PFE) $< -o $@ $(TEST_LINK_UBSAN)
$(TEST_BUILD)/robust/test_dispatch_stress_ubsan: tests/agent/test_dispatch_stress.c $(TEST_BUILD)/gen/dstress_funcs.c $(LIBNEEDLE_UBSAN)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(UBSAN) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK_UBSAN)
# Records with the UBSan command and agent, reads with the UBSan reader.
$(TEST_BUILD)/robust/test_ubsan_cli: tests/robust/ubsan_cli.sh $(NEEDLE_UBSAN) $(LIBNEEDLE_UBSAN) $(CLI_PROGS)
	$(SCRIPT_TEST)

# --- ThreadSanitizer: the agent, the RCU/dispatch stress and the stress
# test.  patch_batch.c is built without instrumentation: its byte stores
# into the program's code would be checked against shadow memory that TSan
# maps read-only for read-only mappings (code), and fault.  Everything
# else, the RCU read side, dispatch and the handlers included, is checked.
TSAN := -fsanitize=thread -fno-omit-frame-pointer
TSAN_OBJ := $(patsubst $(BUILD)/obj/%,$(BUILD)/tsan/obj/%,$(AGENT_OBJ))
LIBNEEDLE_TSAN := $(BUILD)/tsan/libneedle.so
TSAN_FILE := $(TSAN)
$(BUILD)/tsan/obj/agent/patch/patch_batch.o: TSAN_FILE :=
# The sigaction interposer (and what it calls) runs inside TSan's own
# start-up, when it installs its signal handlers: before TSan can take an
# instrumented call.
$(BUILD)/tsan/obj/agent/patch/sigmask_watch.o: TSAN_FILE :=
$(BUILD)/tsan/obj/agent/patch/thread_stop.o: TSAN_FILE :=
$(BUILD)/tsan/obj/agent/base/interpose.o: TSAN_FILE :=
$(BUILD)/tsan/obj/agent/base/altstack.o: TSAN_FILE :=
$(BUILD)/tsan/obj/agent/base/safe_copy.o: TSAN_FILE :=
$(BUILD)/tsan/obj/agent/base/signal_front.o: TSAN_FILE :=

$(BUILD)/tsan/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; gcc $(BASE_CFLAGS) $(TSAN_FILE) -fPIC -fvisibility=hidden $(AGENT_INC) $(FILE_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/tsan/obj/%.o: src/%.S
	@mkdir -p $(dir $@)
	@echo "  CC $@"; gcc -fPIC $(AGENT_INC) $(ASFLAGS) -MMD -MP -c $< -o $@
$(LIBNEEDLE_TSAN): $(TSAN_OBJ)
	@echo "  LD $@"; gcc $(TSAN) -shared -Wl,-z,defs -Wl,-soname,libneedle.so $^ -o $@ $(AGENT_LIBS)

TEST_LINK_TSAN := $(TSAN) -L$(BUILD)/tsan -lneedle -Wl,-rpath,$(abspath $(BUILD))/tsan -lpthread -ldl
$(TEST_BUILD)/robust/test_dispatch_stress_tsan: tests/agent/test_dispatch_stress.c $(TEST_BUILD)/gen/dstress_funcs.c $(LIBNEEDLE_TSAN)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(TSAN) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK_TSAN)
$(TEST_BUILD)/robust/test_stress_tsan: tests/agent/test_stress.c $(TEST_BUILD)/gen/stress_funcs.c $(LIBNEEDLE_TSAN)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(TSAN) -O1 $(PFE) $(filter %.c,$^) -o $@ $(TEST_LINK_TSAN)

SANITIZER_TESTS := $(TEST_BUILD)/robust/test_stress_ubsan $(TEST_BUILD)/robust/test_args_ubsan \
	$(TEST_BUILD)/robust/test_dispatch_stress_ubsan $(TEST_BUILD)/robust/test_ubsan_cli \
	$(TEST_BUILD)/robust/test_dispatch_stress_tsan $(TEST_BUILD)/robust/test_stress_tsan

-include $(UBSAN_OBJ:.o=.d) $(UBSAN_CLI_OBJ:.o=.d) $(TSAN_OBJ:.o=.d)

TESTS += $(SANITIZER_TESTS)

.PHONY: check-sanitizers
check-sanitizers: $(SANITIZER_TESTS) $(TEST_BUILD)/agent/test_stress_asan $(TEST_BUILD)/agent/test_args_asan \
		$(TEST_BUILD)/agent/test_dispatch_stress_asan
	@export NEEDLE_BUILD=$(abspath $(BUILD)); fails=0; \
	for t in $^; do echo "== $$t"; $$t || fails=$$((fails + 1)); done; \
	echo "check-sanitizers: $$fails program(s) failed"; [ $$fails -eq 0 ]

# --- The trace reader under libFuzzer (clang), with ASan and UBSan.  The
# seed corpus is checked in (tests/format/corpus/, made by
# tests/format/make_corpus.sh, and tests/format/findings/, the inputs of
# findings reported); `make test` runs FUZZ_TEST_RUNS inputs from a fixed
# seed (the same inputs every time: a failure is the reader's, not luck's),
# `make fuzz` fuzzes for FUZZ_SECONDS and keeps what it finds in
# build/fuzz/corpus.  Findings are saved in build/fuzz/artifacts.
FUZZ_SECONDS ?= 600
FUZZ_TEST_RUNS ?= 3000
LIBFUZZER := -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer
FUZZER := $(TEST_BUILD)/fuzz/fuzz_reader_libfuzzer
FUZZ_SEEDS := $(wildcard tests/format/corpus/* tests/format/findings/*)
$(FUZZER): tests/format/fuzz_reader_libfuzzer.c $(READER_SRC)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -D_GNU_SOURCE -O1 -g $(WARN) $(LIBFUZZER) -Isrc \
		$^ -o $@ $(CLI_LIBS)
# UBSan is recoverable in the fuzzer, so that tests/robust/known_findings.supp
# can hold back a reported finding; UBSAN_OPTIONS=halt_on_error=1 stops at
# any other.  tests/robust/known_leaks.supp does the same for leaks.
$(TEST_BUILD)/fuzz/seed.stamp: $(FUZZ_SEEDS) tests/robust/known_findings.supp tests/robust/known_leaks.supp
	@mkdir -p $(TEST_BUILD)/fuzz/seed; rm -f $(TEST_BUILD)/fuzz/seed/*
	cp $(FUZZ_SEEDS) $(TEST_BUILD)/fuzz/seed/
	cp tests/robust/known_findings.supp tests/robust/known_leaks.supp $(TEST_BUILD)/fuzz/
	touch $@
$(TEST_BUILD)/robust/test_fuzz_reader_libfuzzer: tests/robust/fuzz_reader.sh $(FUZZER) $(TEST_BUILD)/fuzz/seed.stamp tests/robust.mk
	@mkdir -p $(dir $@)
	sed 's/@FUZZ_TEST_RUNS@/$(FUZZ_TEST_RUNS)/g' $< >$@; chmod +x $@

TESTS += $(TEST_BUILD)/robust/test_fuzz_reader_libfuzzer

.PHONY: fuzz
fuzz: $(TEST_BUILD)/robust/test_fuzz_reader_libfuzzer
	@mkdir -p $(BUILD)/fuzz/corpus
	NEEDLE_BUILD=$(abspath $(BUILD)) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_CORPUS=$(abspath $(BUILD))/fuzz/corpus \
		$(TEST_BUILD)/robust/test_fuzz_reader_libfuzzer

# --- The soak (tests/robust/soak.c): 4 workers call traced functions of the
# program and of a dlopen'ed object while a controller attaches, detaches,
# forks, churns threads and reopens the object, with exact counts.  `make
# test` runs it for 20 s; `make soak` for SOAK_SECONDS, with SOAK_SEED to
# replay a run; the object is unloaded between uses unless SOAK_DLCLOSE=0.
SOAK_SECONDS ?= 600
SOAK_DLCLOSE ?= 1
$(TEST_BUILD)/gen/soak_funcs.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh soak 256 > $@
$(TEST_BUILD)/gen/soakdl_funcs.c: tests/gen_funcs.sh
	@mkdir -p $(dir $@); tests/gen_funcs.sh soakdl 64 > $@
$(TEST_BUILD)/robust/libsoakdl.so: $(TEST_BUILD)/gen/soakdl_funcs.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -fPIC -shared $< -o $@
$(TEST_BUILD)/robust/soak_funcs.o: $(TEST_BUILD)/gen/soak_funcs.c
	@mkdir -p $(dir $@); gcc $(TEST_CFLAGS) $(PFE) -c $< -o $@
# soak.c itself has no patchable entries: only the generated functions are traced.
$(TEST_BUILD)/robust/test_soak: tests/robust/soak.c $(TEST_BUILD)/robust/soak_funcs.o $(TEST_BUILD)/robust/libsoakdl.so $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) -DSOAK_LIB='"$(abspath $(TEST_BUILD))/robust/libsoakdl.so"' \
		$< $(TEST_BUILD)/robust/soak_funcs.o -o $@ $(TEST_LINK)

TESTS += $(TEST_BUILD)/robust/test_soak

.PHONY: soak
soak: $(TEST_BUILD)/robust/test_soak
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_DLCLOSE=$(SOAK_DLCLOSE) $(TEST_BUILD)/robust/test_soak

# What dlclose of a traced object once did (sites never forgotten: CALLs
# written over an object loaded again, or into a mapping that took its
# place), shown by a program of its own; `make test` runs it.
$(TEST_BUILD)/robust/dlclose_sites: tests/robust/dlclose_sites.c $(TEST_BUILD)/robust/libsoakdl.so $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) -DSOAK_LIB='"$(abspath $(TEST_BUILD))/robust/libsoakdl.so"' $< -o $@ $(TEST_LINK)

$(TEST_BUILD)/robust/test_dlclose_sites: tests/robust/dlclose_sites.sh $(TEST_BUILD)/robust/dlclose_sites
	$(SCRIPT_TEST)
TESTS += $(TEST_BUILD)/robust/test_dlclose_sites

.PHONY: robust-findings
robust-findings: $(TEST_BUILD)/robust/dlclose_sites
	$(TEST_BUILD)/robust/dlclose_sites
