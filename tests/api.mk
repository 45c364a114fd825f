# api.mk - the public API as a library user sees it (tests/api/): exported
# symbols and versions, interposition, where handlers run, and the
# callcount example on a program whose sites grow.
API_BUILD := $(TEST_BUILD)/api
API_DEFS := -DLIBNEEDLE_DIR='"$(abspath $(BUILD))"' -DNEEDLE_HEADER='"$(abspath include/needle.h)"'

# -Isrc: the agent's list of interposed functions (agent/base/interpose.h),
# checked against the exports and the sources.
$(TEST_BUILD)/api/test_api_symbols: tests/api/test_api_symbols.c tests/api/elf_syms.h include/needle.h \
		src/agent/base/interpose.h $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(API_DEFS) -DNEEDLE_AGENT_SRC='"$(abspath src/agent)"' -Isrc $< -o $@ $(TEST_LINK) -lelf

# Not linked with libneedle: it preloads it.
$(TEST_BUILD)/api/test_api_interpose: tests/api/test_api_interpose.c tests/api/elf_syms.h $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(API_DEFS) $< -o $@ -lelf -lstdc++ -lgcc_s -ldl -lpthread

$(API_BUILD)/header_c99.o: tests/api/header_c99.c include/needle.h
	@mkdir -p $(dir $@)
	gcc -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -c $< -o $@
$(API_BUILD)/header_cxx.o: tests/api/header_cxx.cpp include/needle.h
	@mkdir -p $(dir $@)
	g++ -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c $< -o $@
$(API_BUILD)/header_clang.o: tests/api/header_c99.c include/needle.h
	@mkdir -p $(dir $@)
	clang -std=c11 -pedantic -Wall -Wextra -Werror -Iinclude -Dheader_c99_regs_ok=header_clang_regs_ok -c $< -o $@
$(TEST_BUILD)/api/test_api_handlers: tests/api/test_api_handlers.c $(API_BUILD)/header_c99.o \
		$(API_BUILD)/header_cxx.o $(API_BUILD)/header_clang.o $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) $(PFE) $(filter %.c %.o,$^) -o $@ $(TEST_LINK)

# callcount on a program that loads plugins (test_api_callcount.sh).
$(API_BUILD)/libapi_plugin.so: tests/api/plugin.c
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(PFE) -fPIC -shared $< -o $@
$(API_BUILD)/libapi_late.so: tests/api/plugin.c
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(PFE) -DLATE -fPIC -shared $< -o $@
$(API_BUILD)/libapi_host.so: tests/api/plugin_host.c $(API_BUILD)/libapi_plugin.so $(LIBNEEDLE)
	gcc $(TEST_CFLAGS) -DPLUGIN='"$(abspath $(API_BUILD))/libapi_plugin.so"' -fPIC -shared $< -o $@ $(TEST_LINK)
$(API_BUILD)/callcount_prog: tests/api/callcount_prog.c $(API_BUILD)/libapi_host.so $(API_BUILD)/libapi_late.so
	gcc $(TEST_CFLAGS) $(PFE) -DLATE_PLUGIN='"$(abspath $(API_BUILD))/libapi_late.so"' $< -o $@ \
		-L$(API_BUILD) -lapi_host -Wl,-rpath,$(abspath $(API_BUILD)) -ldl
$(API_BUILD)/libcallcount_asan.so: examples/callcount.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) $(ASAN) -fPIC -shared $< -o $@ $(TEST_LINK)
$(TEST_BUILD)/api/test_api_callcount: tests/api/test_api_callcount.sh $(API_BUILD)/callcount_prog \
		$(API_BUILD)/libcallcount_asan.so $(BUILD)/examples/libcallcount.so
	$(SCRIPT_TEST)

TESTS += $(TEST_BUILD)/api/test_api_symbols $(TEST_BUILD)/api/test_api_interpose $(TEST_BUILD)/api/test_api_handlers $(TEST_BUILD)/api/test_api_direct $(TEST_BUILD)/api/test_api_probe \
	$(TEST_BUILD)/api/test_api_callcount

# Direct handlers, built as needle.h asks (test_api_direct.c).
# Entry-only links, their handler built as needle.h asks.
$(TEST_BUILD)/api/test_api_probe: tests/api/test_api_probe.c tests/api/abi_funcs.h tests/api/direct_handlers.c $(LIBNEEDLE)
	@mkdir -p $(API_BUILD)
	gcc $(TEST_CFLAGS) -mgeneral-regs-only -c tests/api/direct_handlers.c -o $(API_BUILD)/probe_handlers.o
	gcc $(TEST_CFLAGS) $(PFE) tests/api/test_api_probe.c $(API_BUILD)/probe_handlers.o -o $@ $(TEST_LINK)
$(TEST_BUILD)/api/test_api_direct: tests/api/test_api_direct.c tests/api/abi_funcs.h tests/api/direct_handlers.c $(LIBNEEDLE)
	@mkdir -p $(dir $@)
	gcc $(TEST_CFLAGS) -mgeneral-regs-only -c tests/api/direct_handlers.c -o $(API_BUILD)/direct_handlers.o
	gcc $(TEST_CFLAGS) $(PFE) tests/api/test_api_direct.c $(API_BUILD)/direct_handlers.o -o $@ $(TEST_LINK)
