/* test_no_sites - built without patchable entries: attach must fail with
 * -ENOEXEC and a message that names the compiler flags that add them. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "needle.h"

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

int main(void)
{
	struct needle_link *link = NULL;
	const char *pat[] = { "main" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1, .entry = on_entry,
	};

	needle_set_print(capture);
	CHECK_EQ(needle_site_count(), 0, "no sites in a program built without the flags");
	CHECK_EQ(needle_attach(&opts, &link), -ENOEXEC, "attach fails with -ENOEXEC");
	CHECK(strstr(message, "-fpatchable-function-entry=5") != NULL, "message names the flag: %s", message);
	return harness_exit();
}
