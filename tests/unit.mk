# unit.mk - unit tests of internals (tests/unit/*.c).  Each test program
# is compiled together with the source files of the unit it tests, with
# the include flags that part of needle is built with (AGENT_INC for the
# agent, CLI_INC for the format and the reader), so that it reaches
# internal functions and state, not only what libneedle.so exports.
UNIT_CFLAGS := -std=gnu11 -D_GNU_SOURCE -O2 -g $(WARN) -Itests

# Consumers: the test counts what consumer.c allocates and frees (the
# linker sends consumer.c's malloc, realloc and free to the test's
# wrappers), and can make one allocation fail.
UNIT_CONSUMER_SRC := tests/unit/test_consumer.c src/agent/dispatch/consumer.c
$(TEST_BUILD)/unit/test_consumer: $(UNIT_CONSUMER_SRC) src/agent/dispatch/consumer.h include/needle.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(AGENT_INC) $(UNIT_CONSUMER_SRC) -o $@ \
		-Wl,--wrap=malloc -Wl,--wrap=realloc -Wl,--wrap=free -Wl,--wrap=calloc

UNIT_SITES_SRC := tests/unit/test_site_table.c src/agent/sites/site_table.c
$(TEST_BUILD)/unit/test_site_table: $(UNIT_SITES_SRC) src/agent/sites/site_table.h include/needle.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(AGENT_INC) $(UNIT_SITES_SRC) -o $@

$(TEST_BUILD)/unit/test_shm_free: tests/unit/test_shm_free.c src/common/shm_layout.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -Isrc $< -o $@ -lpthread

$(TEST_BUILD)/unit/test_varint: tests/unit/test_varint.c src/format/varint.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CLI_INC) $< -o $@

# The writer and the reader, as `needle record` and the views use them.
UNIT_TRACE_SRC := tests/unit/test_trace_roundtrip.c $(wildcard src/format/*.c) $(wildcard src/reader/*.c) \
	src/common/tsc.c
$(TEST_BUILD)/unit/test_trace_roundtrip: $(UNIT_TRACE_SRC) $(wildcard src/format/*.h) $(wildcard src/reader/*.h) \
		src/common/shm_layout.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CLI_INC) $(UNIT_TRACE_SRC) -o $@ $(CLI_LIBS)

# -A / -R values through the file: raw and packed data blocks.
UNIT_BLOCKS_SRC := tests/unit/test_data_blocks.c $(wildcard src/format/*.c) $(wildcard src/reader/*.c) src/common/tsc.c
$(TEST_BUILD)/unit/test_data_blocks: $(UNIT_BLOCKS_SRC) $(wildcard src/format/*.h) $(wildcard src/reader/*.h) \
		src/common/shm_layout.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CLI_INC) $(UNIT_BLOCKS_SRC) -o $@ $(CLI_LIBS)
TESTS += $(TEST_BUILD)/unit/test_data_blocks

# needle record -p's check of the target's ELF class and machine.
$(TEST_BUILD)/unit/test_exe_class: tests/unit/test_exe_class.c src/cli/util/exe_class.c src/cli/util/exe_class.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -Isrc tests/unit/test_exe_class.c src/cli/util/exe_class.c -o $@

TESTS += $(TEST_BUILD)/unit/test_exe_class
TESTS += $(TEST_BUILD)/unit/test_varint $(TEST_BUILD)/unit/test_shm_free $(TEST_BUILD)/unit/test_consumer \
	$(TEST_BUILD)/unit/test_site_table $(TEST_BUILD)/unit/test_trace_roundtrip

# The fault-tolerant string copy: linked with every agent object, so that
# the program's sigaction, signal, pthread_sigmask and longjmp reach the
# agent's interposers (in the executable, ahead of the C library's).
$(TEST_BUILD)/unit/test_safe_copy: tests/unit/test_safe_copy.c $(AGENT_OBJ) tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(AGENT_INC) $< $(AGENT_OBJ) -o $@ $(AGENT_LIBS)

# And with the AddressSanitizer build of the agent: the copy's handler is
# instrumented C there, and the runtime installs SIGSEGV and SIGBUS
# handlers of its own at start-up, behind the interposers' back.
$(TEST_BUILD)/unit/test_safe_copy_asan: tests/unit/test_safe_copy.c $(ASAN_OBJ) tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(ASAN) $(AGENT_INC) $< $(ASAN_OBJ) -o $@ $(AGENT_LIBS)

TESTS += $(TEST_BUILD)/unit/test_safe_copy $(TEST_BUILD)/unit/test_safe_copy_asan

# The codec of needle record's configuration for the agent.
$(TEST_BUILD)/unit/test_record_config: tests/unit/test_record_config.c src/common/record_config.c \
		src/common/record_config.h tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -Isrc tests/unit/test_record_config.c src/common/record_config.c -o $@
TESTS += $(TEST_BUILD)/unit/test_record_config

# The DWARF placement rules (src/cli/args/dwarf_params.c), on a fixture of
# chosen signatures built by gcc at -O0 and -O2 and by clang at -O0 (each
# compiler named: the expected values are the ABI's, their DWARF differs),
# one built without -g, and a file that is not ELF.
DWARF_FIXTURE_SRC := tests/unit/dwarf_fixture.c tests/unit/dwarf_fixture2.c
DWARF_FIXTURE_CFLAGS := -std=gnu11 -g $(WARN) -Wno-psabi
DWARF_FIXTURES := $(addprefix $(TEST_BUILD)/unit/dwarf_fixture_,gcc_O0 gcc_O2 clang_O0 nodebug)
$(TEST_BUILD)/unit/dwarf_fixture_gcc_O0: $(DWARF_FIXTURE_SRC)
	@mkdir -p $(dir $@)
	gcc $(DWARF_FIXTURE_CFLAGS) -O0 $^ -o $@
$(TEST_BUILD)/unit/dwarf_fixture_gcc_O2: $(DWARF_FIXTURE_SRC)
	@mkdir -p $(dir $@)
	gcc $(DWARF_FIXTURE_CFLAGS) -O2 $^ -o $@
$(TEST_BUILD)/unit/dwarf_fixture_clang_O0: $(DWARF_FIXTURE_SRC)
	@mkdir -p $(dir $@)
	clang $(DWARF_FIXTURE_CFLAGS) -O0 $^ -o $@
$(TEST_BUILD)/unit/dwarf_fixture_nodebug: $(DWARF_FIXTURE_SRC)
	@mkdir -p $(dir $@)
	gcc $(filter-out -g,$(DWARF_FIXTURE_CFLAGS)) -g0 -O0 $^ -o $@

UNIT_DWARF_SRC := tests/unit/test_dwarf_params.c src/cli/args/dwarf_params.c
$(TEST_BUILD)/unit/test_dwarf_params: $(UNIT_DWARF_SRC) src/cli/args/dwarf_params.h src/common/cxx_name.h \
		src/common/value_spec.h tests/harness.h $(DWARF_FIXTURES)
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CLI_INC) \
		-DFIXTURE_GCC_O0='"$(abspath $(TEST_BUILD))/unit/dwarf_fixture_gcc_O0"' \
		-DFIXTURE_GCC_O2='"$(abspath $(TEST_BUILD))/unit/dwarf_fixture_gcc_O2"' \
		-DFIXTURE_CLANG_O0='"$(abspath $(TEST_BUILD))/unit/dwarf_fixture_clang_O0"' \
		-DFIXTURE_NODEBUG='"$(abspath $(TEST_BUILD))/unit/dwarf_fixture_nodebug"' \
		-DFIXTURE_SOURCE='"$(abspath tests/unit/dwarf_fixture.c)"' \
		$(UNIT_DWARF_SRC) -o $@ $(CLI_LIBS)
TESTS += $(TEST_BUILD)/unit/test_dwarf_params

# The grammar of -A, -R and -F value specs and what arg_plan_resolve
# makes of them (src/cli/args/arg_specs.c), against the DWARF fixture
# above; cli_error is the test's, to compare what is said.
UNIT_ARG_SPECS_SRC := tests/unit/test_arg_specs.c src/cli/args/arg_specs.c src/cli/args/libc_protos.c src/cli/args/dwarf_params.c
$(TEST_BUILD)/unit/test_arg_specs: $(UNIT_ARG_SPECS_SRC) src/cli/args/args.h src/cli/args/dwarf_params.h \
		src/cli/args/program_libs.h src/cli/util/cli_util.h src/common/value_spec.h src/common/cxx_name.h \
		tests/harness.h $(TEST_BUILD)/unit/dwarf_fixture_gcc_O0 $(TEST_BUILD)/unit/dwarf_fixture_nodebug
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CLI_INC) \
		-DFIXTURE_GCC_O0='"$(abspath $(TEST_BUILD))/unit/dwarf_fixture_gcc_O0"' \
		-DFIXTURE_NODEBUG='"$(abspath $(TEST_BUILD))/unit/dwarf_fixture_nodebug"' \
		$(UNIT_ARG_SPECS_SRC) -o $@ $(CLI_LIBS)
TESTS += $(TEST_BUILD)/unit/test_arg_specs

# What the views print: durations, integers, the replay line's prefix,
# an event's values (src/cli/view/view_format.c, src/cli/util/cli_util.c),
# with the reader for the names of values (SEC_ARGS).
UNIT_VIEW_FORMAT_SRC := tests/unit/test_view_format.c src/cli/view/view_format.c src/cli/util/cli_util.c \
	$(wildcard src/reader/*.c) $(wildcard src/format/*.c) src/common/tsc.c
$(TEST_BUILD)/unit/test_view_format: $(UNIT_VIEW_FORMAT_SRC) src/cli/view/view_format.h src/cli/util/cli_util.h \
		$(wildcard src/reader/*.h) $(wildcard src/format/*.h) src/common/shm_layout.h src/common/value_spec.h \
		tests/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CLI_INC) $(UNIT_VIEW_FORMAT_SRC) -o $@ $(CLI_LIBS) -lm
TESTS += $(TEST_BUILD)/unit/test_view_format
