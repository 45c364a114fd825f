/* test_site_forms - every site form is found, normalized, patched, hit an
 * exact number of times, and restored to its "off" bytes.
 *
 * Built twice: as a PIE (gcc NOPs, endbr64 variants, clang NOP5, fentry
 * call through the GOT, a dlopen'ed library) and as a non-PIE linked with
 * -pg (NOP5 from -mnop-mcount, fentry call through the PLT). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "forms.h"
#include "harness.h"
#include "needle.h"

#define CALLS 1000

static _Atomic long entries, exits, cookies_matched;
static _Atomic long last_ret;

/* The cookie carries the argument from entry to exit; the exit handler
 * checks it against the return value (argument + delta). */
static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)data;
	*cookie = ctx->func->ip ^ needle_arg(ctx, 0);
	entries++;
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	long delta = (long)(intptr_t)data;
	exits++;
	last_ret = (long)(int)needle_retval(ctx);
	if ((cookie ^ ctx->func->ip) == (uint64_t)(last_ret - delta))
		cookies_matched++;
}

typedef int (*form_fn)(int);

/* The protection of the mapping that holds addr, as "r-xp" etc. */
static void page_perms(uint64_t addr, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long lo, hi;
	char perms[5];
	strcpy(out, "?");
	while (f && fscanf(f, "%llx-%llx %4s %*[^\n]", &lo, &hi, perms) == 3)
		if (addr >= lo && addr < hi) {
			strcpy(out, perms);
			break;
		}
	if (f)
		fclose(f);
}

static _Atomic int spin_stop;
static __attribute__((unused)) void *spinner(void *arg)
{
	form_fn fn = (form_fn)arg;
	long s = 0;
	while (!spin_stop)
		s += fn(1);
	return (void *)s;
}

static void check_form(const char *name, form_fn fn, int expect_form, int delta)
{
	struct needle_site_info info = { .sz = sizeof(info) };
	int id = needle_site_find(name);
	uint8_t before[5];

	CHECK(id >= 0, "%s: site found", name);
	if (id < 0)
		return;
	CHECK_EQ(needle_site_info((uint32_t)id, &info), 0, "%s: site info", name);
	CHECK_EQ(info.form, expect_form, "%s: form", name);
	CHECK_EQ(info.func_ip, (uint64_t)(uintptr_t)fn, "%s: func_ip is the symbol", name);
	memcpy(before, (void *)info.addr, 5);
	CHECK(!memcmp(before, info.off_bytes, 5), "%s: site holds its off bytes before attach", name);
	CHECK(before[0] == 0x0f && before[1] == 0x1f, "%s: site is a single NOP5", name);

	struct needle_link *link = NULL;
	const char *pat[] = { name };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1,
		.entry = on_entry, .exit = on_exit_, .user_data = (void *)(intptr_t)delta,
	};
	entries = exits = cookies_matched = 0;
	CHECK_EQ(needle_attach(&opts, &link), 1, "%s: attach traces one function", name);
	/* A JMP to the stub and the calling trampoline, or with
	 * NEEDLE_CALLING=0 a CALL. */
	const char *calling = getenv("NEEDLE_CALLING");
	uint8_t op = calling && !strcmp(calling, "0") ? 0xe8 : 0xe9;
	CHECK(((uint8_t *)info.addr)[0] == op, "%s: site is a %s while attached", name, op == 0xe8 ? "CALL" : "JMP");
	long sum = 0;
	for (int i = 0; i < CALLS; i++)
		sum += fn(i);
	CHECK_EQ(sum, (long)CALLS * (CALLS - 1) / 2 + (long)CALLS * delta, "%s: results unchanged", name);
	CHECK_EQ(entries, CALLS, "%s: exact entry count", name);
	CHECK_EQ(exits, CALLS, "%s: exact exit count", name);
	CHECK_EQ(last_ret, CALLS - 1 + delta, "%s: exit handler sees the return value", name);
	CHECK_EQ(cookies_matched, CALLS, "%s: every exit gets its own call's cookie", name);
	char perms[5];
	page_perms(info.addr, perms);
	CHECK(!strcmp(perms, "r-xp"), "%s: code page back to r-x while attached (%s)", name, perms);
	CHECK_EQ(needle_link_detach(link), 0, "%s: detach", name);
	CHECK(!memcmp((void *)info.addr, before, 5), "%s: original bytes restored", name);
	page_perms(info.addr, perms);
	CHECK(!strcmp(perms, "r-xp"), "%s: code page r-x after detach (%s)", name, perms);
	fn(1);
	CHECK_EQ(entries, CALLS, "%s: no entry after detach", name);
	needle_link_destroy(link);
}

int main(void)
{
	CHECK(needle_refresh() > 0, "sites discovered at start-up");
#ifdef FORMS_PIE
	check_form("form_gcc_nops", form_gcc_nops, NEEDLE_FORM_GCC_NOPS, 1);
	check_form("form_gcc_endbr", form_gcc_endbr, NEEDLE_FORM_GCC_NOPS, 2);
	check_form("form_clang_nop5", form_clang_nop5, NEEDLE_FORM_NOP5, 3);
	check_form("form_clang_endbr", form_clang_endbr, NEEDLE_FORM_NOP5, 4);
	check_form("form_fentry_call", form_fentry_call, NEEDLE_FORM_FENTRY_CALL, 5);

	/* clang writes "nopl 8(%rax,%rax,1)"; needle keeps it verbatim rather
	 * than replacing it with its own NOP5. */
	static const uint8_t clang_nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x08 };
	struct needle_site_info info = { .sz = sizeof(info) };
	needle_site_info((uint32_t)needle_site_find("form_clang_nop5"), &info);
	CHECK(!memcmp(info.off_bytes, clang_nop5, 5), "clang NOP5 kept verbatim");

	/* A library loaded after start-up, while other threads run traced
	 * code: its gcc NOPs are normalized with those threads stopped. */
	pthread_t spin[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&spin[i], NULL, spinner, (void *)form_gcc_nops);
	void *lib = dlopen(FORMS_LIB, RTLD_NOW);
	CHECK(lib != NULL, "dlopen %s", FORMS_LIB);
	if (lib) {
		CHECK(needle_site_find("form_dlopen") == -ENOENT, "library sites unknown before refresh");
		form_fn fn = (form_fn)dlsym(lib, "form_dlopen");
		CHECK(needle_refresh() > 0, "refresh after dlopen");
		check_form("form_dlopen", fn, NEEDLE_FORM_GCC_NOPS, 7);
	}
	spin_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(spin[i], NULL);
#else
	check_form("form_mnop_mcount", form_mnop_mcount, NEEDLE_FORM_NOP5, 6);
	check_form("form_fentry_call", form_fentry_call, NEEDLE_FORM_FENTRY_CALL, 5);
	check_form("form_gcc_nops", form_gcc_nops, NEEDLE_FORM_GCC_NOPS, 1);
#endif
	return harness_exit();
}
