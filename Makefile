# needle - build, test and benchmark.  `make` builds the agent library and
# the command; `make test` runs every test; `make bench` runs benchmarks.
CC ?= gcc
BUILD ?= build
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror
AGENT_DIRS := base sites arch/x86_64 patch rcu thread dispatch link record
# One include root: every include names its folder ("agent/patch/patch_batch.h"),
# and tests/check_layers.sh checks that each points down the layers.
AGENT_INC := -Iinclude -Isrc
# Zydis' headers without their shared-library export attributes: Zydis is
# linked in (AGENT_LIBS).
AGENT_INC += -DZYDIS_STATIC_BUILD -DZYCORE_STATIC_BUILD
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) $(CFLAGS)

COMMON_SRC := $(wildcard src/common/*.c)
AGENT_SRC := $(wildcard src/agent/*.c) $(foreach d,$(AGENT_DIRS),$(wildcard src/agent/$(d)/*.c)) $(COMMON_SRC)
AGENT_ASM := $(wildcard src/agent/*.S) $(wildcard src/agent/dispatch/*.S) $(wildcard src/agent/arch/x86_64/*.S)
AGENT_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(AGENT_SRC)) $(patsubst src/%.S,$(BUILD)/obj/%.o,$(AGENT_ASM))
# libelf, libdw and Zydis are linked into libneedle, rebuilt from Debian's
# sources by scripts/build_deps.sh (why: see its top comment), with zlib and
# xz from Debian's static archives; --exclude-libs hides every symbol they
# define, so the only library a traced process gains is libneedle.
DEPS ?= .deps
DEPS_LIBS := $(DEPS)/lib/libdw.a $(DEPS)/lib/libelf.a $(DEPS)/lib/libZydis.a
AGENT_LIBS := $(DEPS_LIBS) -Wl,-Bstatic -lz -llzma -Wl,-Bdynamic -Wl,--exclude-libs,ALL \
	-lpthread -ldl -lgcc_s

# libneedle.so.1 (the soname, bumped with NEEDLE_VERSION_MAJOR) and the
# libneedle.so symlink that -lneedle and `needle record` use.  The version
# script exports the API under NEEDLE_1.0 (see src/agent/libneedle.map).
LIBNEEDLE_SONAME := libneedle.so.1
LIBNEEDLE_MAP := src/agent/libneedle.map
LIBNEEDLE_LDFLAGS := -shared -Wl,-soname,$(LIBNEEDLE_SONAME) -Wl,--version-script,$(LIBNEEDLE_MAP)
LIBNEEDLE := $(BUILD)/libneedle.so
NEEDLE := $(BUILD)/needle
# `import needle` (below).
PYNEEDLE := $(BUILD)/python/needle.so
# What needle record -p loads on the thread it borrows (src/boot/boot.c).
LIBNEEDLE_BOOT := $(BUILD)/libneedle-boot.so

.PHONY: all test tests bench clean demo
all: $(LIBNEEDLE) $(NEEDLE) $(LIBNEEDLE_BOOT) $(PYNEEDLE)

# The needle command: cli -> reader/format -> common.
CLI_SRC := $(wildcard src/cli/*.c src/cli/*/*.c) $(wildcard src/reader/*.c) $(wildcard src/format/*.c) $(COMMON_SRC)
CLI_OBJ := $(patsubst src/%.c,$(BUILD)/cli-obj/%.o,$(CLI_SRC))
CLI_INC := -Iinclude -Isrc
# libdw and libelf: DWARF for --auto-args (src/cli/args/dwarf_params.c); zlib:
# CRC32 of sections; libstdc++: the C++ demangler; ncurses: needle tui.
CLI_LIBS := -ldw -lelf -lz -ldeflate -lseccomp -lstdc++ -lncurses

$(BUILD)/cli-obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; $(CC) $(BASE_CFLAGS) $(CLI_INC) -MMD -MP -c $< -o $@

$(LIBNEEDLE_BOOT): src/boot/boot.c src/common/attach_protocol.h
	@echo "  CC $@"; $(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden -Isrc -shared -Wl,-z,defs $< -o $@

$(NEEDLE): $(CLI_OBJ)
	@echo "  LD $@"; $(CC) $^ -o $@ $(CLI_LIBS)

# `import needle` (src/python): the reader and the values' formatting,
# built position-independent into a CPython extension for Debian's
# python3 (python3-dev); `needle script` runs scripts with it.
PYTHON3_CONFIG ?= /usr/bin/python3-config
PY_SRC := src/python/needle_module.c src/cli/view/view_format.c src/cli/util/cli_util.c \
	$(wildcard src/reader/*.c) $(wildcard src/format/*.c) $(COMMON_SRC)
$(PYNEEDLE): $(PY_SRC) $(wildcard src/python/*.h src/reader/*.h src/format/*.h src/cli/view/*.h src/common/*.h)
	@test -x $(PYTHON3_CONFIG) || { echo "needle: $(PYTHON3_CONFIG) is missing: run scripts/setup.sh (python3-dev)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@echo "  CC $@"; $(CC) $(BASE_CFLAGS) -fPIC -shared -fvisibility=hidden $(CLI_INC) \
		$(shell $(PYTHON3_CONFIG) --includes 2>/dev/null) $(PY_SRC) -o $@ $(CLI_LIBS) -lm


# The direct path (src/agent/*/*_direct.c) runs with only the
# general-purpose registers saved: it must touch no vector register, and
# call no sanitizer runtime (which would).  Every agent build adds
# FILE_CFLAGS last.
%_direct.o: FILE_CFLAGS := -mgeneral-regs-only -fno-sanitize=all

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; $(CC) $(BASE_CFLAGS) -fPIC -fvisibility=hidden $(AGENT_INC) $(FILE_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: src/%.S
	@mkdir -p $(dir $@)
	@echo "  CC $@"; $(CC) -fPIC $(AGENT_INC) $(ASFLAGS) -MMD -MP -c $< -o $@

$(DEPS_LIBS):
	@echo "needle: $@ is missing: run scripts/setup.sh (it builds libneedle's static libraries with scripts/build_deps.sh)" >&2; exit 1

$(BUILD)/$(LIBNEEDLE_SONAME): $(AGENT_OBJ) $(LIBNEEDLE_MAP) $(DEPS_LIBS)
	@echo "  CC $@"; $(CC) $(LIBNEEDLE_LDFLAGS) -Wl,-z,defs $(AGENT_OBJ) -o $@ $(AGENT_LIBS)

# Every libneedle.so (this one, the AddressSanitizer build's, the benchmark
# ablation's) is a symlink to the libneedle.so.1 beside it.
%/libneedle.so: %/$(LIBNEEDLE_SONAME)
	@echo "  LN $@"; ln -sfn $(LIBNEEDLE_SONAME) $@

# The same agent built with AddressSanitizer, for the stress tests.
ASAN := -fsanitize=address -fno-omit-frame-pointer
ASAN_OBJ := $(patsubst $(BUILD)/obj/%,$(BUILD)/asan/obj/%,$(AGENT_OBJ))
LIBNEEDLE_ASAN := $(BUILD)/asan/libneedle.so

$(BUILD)/asan/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC $@"; $(CC) $(BASE_CFLAGS) $(ASAN) -fPIC -fvisibility=hidden $(AGENT_INC) $(FILE_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/asan/obj/%.o: src/%.S
	@mkdir -p $(dir $@)
	$(CC) -fPIC $(AGENT_INC) $(ASFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/asan/$(LIBNEEDLE_SONAME): $(ASAN_OBJ) $(LIBNEEDLE_MAP)
	$(CC) $(ASAN) $(LIBNEEDLE_LDFLAGS) $(ASAN_OBJ) -o $@ $(AGENT_LIBS)

TESTS :=
include tests/tests.mk
include bench/bench.mk

# make test: everything (what CI runs); make test-unit: the unit tier;
# make test-quick: what a developer runs before each commit (under two
# minutes on 2 cores: the tiers and single tests of QUICK_TESTS); a tier
# alone: tests/run.sh build/tests TIER [PATTERN].
.PHONY: test-unit test-quick
tests: $(TESTS)
test: tests
	tests/run.sh $(TEST_BUILD)
test-unit: tests
	tests/run.sh $(TEST_BUILD) unit
test-quick: tests
	tests/run.sh $(TEST_BUILD) '$(QUICK_SELECTION)'

clean:
	rm -rf $(BUILD)

-include $(AGENT_OBJ:.o=.d) $(ASAN_OBJ:.o=.d) $(CLI_OBJ:.o=.d)

# The bundled demo and the API example that runs on it.
DEMO_CFLAGS := -std=gnu11 -O2 -g -fno-inline -Wall -Wextra -Werror -fpatchable-function-entry=5
$(BUILD)/demo/kvstore: demo/kvstore.c
	@mkdir -p $(dir $@)
	$(CC) $(DEMO_CFLAGS) $< -o $@ -lpthread

$(BUILD)/examples/libcallcount.so: examples/callcount.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g $(WARN) -Iinclude -fPIC -shared $< -o $@ \
		-L$(BUILD) -lneedle -Wl,-rpath,$(abspath $(BUILD))

# needle's main job on the demo: record it, show the function graph (its
# first lines) and the per-function report.
demo: all $(BUILD)/demo/kvstore $(BUILD)/examples/libcallcount.so
	$(NEEDLE) record -o $(BUILD)/demo/needle.data -- $(BUILD)/demo/kvstore 4 20000
	@echo; echo "== needle replay (first 40 lines of $$($(NEEDLE) replay -i $(BUILD)/demo/needle.data | wc -l))"
	@$(NEEDLE) replay -i $(BUILD)/demo/needle.data | head -40
	@echo; echo "== needle report"
	@$(NEEDLE) report -i $(BUILD)/demo/needle.data
	@echo; echo "== needle info"
	@$(NEEDLE) info -i $(BUILD)/demo/needle.data
