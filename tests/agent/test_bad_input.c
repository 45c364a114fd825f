/* test_bad_input - every misuse of the attach API gets a negative errno
 * and a message, and changes nothing. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "needle.h"

__attribute__((noinline)) long good_fn(long x)
{
	__asm__ volatile("");
	return x;
}

static char message[1024];
static int capture(enum needle_print_level level, const char *fmt, va_list ap)
{
	if (level == NEEDLE_WARN)
		vsnprintf(message, sizeof(message), fmt, ap);
	return 0;
}

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	return 0;
}

static long enabled_sites(void)
{
	struct needle_stats st = { .sz = sizeof(st) };
	needle_get_stats(&st);
	return (long)st.sites_enabled;
}

int main(void)
{
	struct needle_link *link = NULL;
	needle_set_print(capture);

	const char *nothing[] = { "no_such_function_*" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = nothing, .pattern_cnt = 1, .entry = on_entry,
	};
	CHECK_EQ(needle_attach(&opts, &link), -ENOENT, "a glob matching nothing: -ENOENT");
	CHECK(strstr(message, "no_such_function_*") != NULL, "message names the pattern: %s", message);

	const char *mixed[] = { "good_fn", "missing_fn" };
	opts.patterns = mixed;
	opts.pattern_cnt = 2;
	CHECK_EQ(needle_attach(&opts, &link), -ENOENT, "one bad name fails the whole attach");
	CHECK_EQ(enabled_sites(), 0, "nothing patched by a failed attach");

	uint64_t bad_addr = (uint64_t)(uintptr_t)&opts;
	struct needle_attach_opts aopts = {
		.sz = sizeof(aopts), .addrs = &bad_addr, .addr_cnt = 1, .entry = on_entry,
	};
	CHECK_EQ(needle_attach(&aopts, &link), -ENOENT, "an address that is no function: -ENOENT");

	uint64_t good_addr = (uint64_t)(uintptr_t)good_fn;
	aopts.addrs = &good_addr;
	CHECK_EQ(needle_attach(&aopts, &link), 1, "attach by function address");
	const char *good[] = { "good_fn" };
	struct needle_attach_opts xopts = {
		.sz = sizeof(xopts), .patterns = good, .pattern_cnt = 1, .entry = on_entry,
		.flags = NEEDLE_ATTACH_EXCLUSIVE,
	};
	struct needle_link *second = NULL;
	CHECK_EQ(needle_attach(&xopts, &second), -EBUSY, "exclusive attach on a traced function: -EBUSY");
	CHECK_EQ(needle_link_detach(link), 0, "first detach");
	CHECK_EQ(needle_link_detach(link), -ENOENT, "second detach: -ENOENT");
	CHECK_EQ(needle_link_detach_nosync(link), -ENOENT, "detach_nosync after detach: -ENOENT");
	needle_link_destroy(link);
	CHECK_EQ(enabled_sites(), 0, "site off after detach");

	CHECK_EQ(needle_attach(NULL, &link), -EINVAL, "NULL options: -EINVAL");
	struct needle_attach_opts none = { .sz = sizeof(none), .patterns = good, .pattern_cnt = 1 };
	CHECK_EQ(needle_attach(&none, &link), -EINVAL, "no handler: -EINVAL");
	struct needle_attach_opts small = { .sz = 8, .patterns = good, .pattern_cnt = 1, .entry = on_entry };
	CHECK_EQ(needle_attach(&small, &link), -EINVAL, "sz too small: -EINVAL");
	struct needle_attach_opts empty = { .sz = sizeof(empty), .entry = on_entry };
	CHECK_EQ(needle_attach(&empty, &link), -EINVAL, "no functions named: -EINVAL");
	CHECK_EQ(needle_link_detach(NULL), -EINVAL, "detach NULL: -EINVAL");
	return harness_exit();
}
