/* test_api_symbols - what libneedle exports, as a program that links
 * against it sees it: the soname libneedle.so.1 behind the libneedle.so
 * symlink, exactly the NEEDLE_API functions of include/needle.h under the
 * version node that added them (NEEDLE_1.0, or the one in since_1_N),
 * exactly the interposed C library and C++ runtime functions (the
 * agent's NEEDLE_INTERPOSED list, src/agent/base/interpose.h) without a
 * version, and nothing else; in the agent's sources, NEEDLE_API marks
 * only functions of needle.h and NEEDLE_INTERPOSER only functions of the
 * list; the version macros and needle_version(). */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>

#include "agent/base/interpose.h"
#include "api/elf_syms.h"
#include "harness.h"
#include "needle.h"

/* The list the agent makes its enum and name table from: an interposer
 * defined without an entry, or an entry without a definition, fails
 * below. */
#define INTERPOSED_NAME(tag, name, traceable, real) #name,
static const char *const interposed[] = { NEEDLE_INTERPOSED(INTERPOSED_NAME) };
#undef INTERPOSED_NAME
#define N_INTERPOSED (sizeof(interposed) / sizeof(interposed[0]))

/* API added after NEEDLE_1.0, under NEEDLE_1.1. */
static const char *const since_1_1[] = { "needle_remote_attach", "needle_object_count", "needle_object_info",
					 "needle_refusal_name", "needle_site_match" };
#define N_SINCE_1_1 (sizeof(since_1_1) / sizeof(since_1_1[0]))
/* ... and under NEEDLE_1.2. */
static const char *const since_1_2[] = { "needle_is_return_hook" };
#define N_SINCE_1_2 (sizeof(since_1_2) / sizeof(since_1_2[0]))
/* ... and under NEEDLE_1.3. */
static const char *const since_1_3[] = { "needle_remote_release" };
#define N_SINCE_1_3 (sizeof(since_1_3) / sizeof(since_1_3[0]))

static int in_list(const char *name, char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return 1;
	return 0;
}

/* The functions a file declares or defines with marker ("NEEDLE_API "):
 * the identifier before the first '(' of each line that starts with it,
 * outside a #define and its continuation lines (a macro that defines
 * functions names them only where it is used), appended to out[*n..max). */
static void marked(const char *path, const char *marker, char **out, size_t *n, size_t max)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int in_define = 0;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && *n < max) {
		size_t len = strlen(line);
		int continued = len >= 2 && line[len - 2] == '\\';
		int skip = in_define || strstr(line, "#define");
		in_define = (in_define || strstr(line, "#define")) && continued;
		char *p = line + strspn(line, " \t");
		char *paren = strchr(p, '(');
		if (skip || strncmp(p, marker, strlen(marker)) || !paren)
			continue;
		char *end = paren;
		while (end > p && end[-1] == ' ')
			end--;
		char *start = end;
		while (start > p && (start[-1] == '_' || (start[-1] >= 'a' && start[-1] <= 'z') ||
				     (start[-1] >= 'A' && start[-1] <= 'Z') || (start[-1] >= '0' && start[-1] <= '9')))
			start--;
		out[(*n)++] = strndup(start, (size_t)(end - start));
	}
	fclose(f);
}

/* The functions include/needle.h declares NEEDLE_API. */
static size_t header_api(char **out, size_t max)
{
	size_t n = 0;

	marked(NEEDLE_HEADER, "NEEDLE_API ", out, &n, max);
	return n;
}

/* Every NEEDLE_API, NEEDLE_INTERPOSER and NEEDLE_INTERPOSER_SITE of the
 * agent's .c files. */
#define SRC_MAX 256
static char *src_api[SRC_MAX], *src_ip[SRC_MAX];
static size_t src_api_cnt, src_ip_cnt, src_files;

static int scan_source(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t len = strlen(path);

	(void)st;
	(void)ftw;
	if (type == FTW_F && len > 2 && !strcmp(path + len - 2, ".c")) {
		src_files++;
		marked(path, "NEEDLE_API ", src_api, &src_api_cnt, SRC_MAX);
		marked(path, "NEEDLE_INTERPOSER ", src_ip, &src_ip_cnt, SRC_MAX);
		marked(path, "NEEDLE_INTERPOSER_SITE ", src_ip, &src_ip_cnt, SRC_MAX);
	}
	return 0;
}

int main(void)
{
	char link_target[PATH_MAX] = "";
	struct stat st;
	struct elf_syms lib, self;
	char *api[64];
	size_t api_cnt = header_api(api, 64);

	/* The files. */
	CHECK(lstat(LIBNEEDLE_DIR "/libneedle.so", &st) == 0 && S_ISLNK(st.st_mode),
	      "build/libneedle.so is a symlink");
	ssize_t len = readlink(LIBNEEDLE_DIR "/libneedle.so", link_target, sizeof(link_target) - 1);
	if (len > 0)
		link_target[len] = 0;
	CHECK(!strcmp(link_target, "libneedle.so.1"), "it points at libneedle.so.1 (%s)", link_target);
	if (elf_syms_read(LIBNEEDLE_DIR "/libneedle.so.1", &lib)) {
		CHECK(0, "libneedle.so.1 is readable");
		return harness_exit();
	}
	char expect_soname[32];
	snprintf(expect_soname, sizeof(expect_soname), "libneedle.so.%d", NEEDLE_VERSION_MAJOR);
	CHECK(lib.soname && !strcmp(lib.soname, "libneedle.so.1") && !strcmp(lib.soname, expect_soname),
	      "soname is libneedle.so.1, the major version (%s)", lib.soname ? lib.soname : "none");

	/* The API as the header declares it. */
	CHECK(api_cnt >= 13 && in_list("needle_attach", api, api_cnt) && in_list("needle_version", api, api_cnt),
	      "include/needle.h declares %zu NEEDLE_API functions", api_cnt);
	/* The markers in the agent's sources. */
	nftw(NEEDLE_AGENT_SRC, scan_source, 16, FTW_PHYS);
	CHECK(src_files > 10 && src_ip_cnt > 10, "the agent's sources are read (%zu files, %zu NEEDLE_INTERPOSER)",
	      src_files, src_ip_cnt);
	for (size_t i = 0; i < src_api_cnt; i++)
		if (!in_list(src_api[i], api, api_cnt))
			CHECK(0, "%s is defined NEEDLE_API but needle.h does not declare it (an interposer is NEEDLE_INTERPOSER)",
			      src_api[i]);
	for (size_t i = 0; i < src_ip_cnt; i++)
		if (!in_list(src_ip[i], (char *const *)interposed, N_INTERPOSED))
			CHECK(0, "%s is defined NEEDLE_INTERPOSER but is not in NEEDLE_INTERPOSED (interpose.h)", src_ip[i]);
	int defines_1_0 = 0;
	for (int i = 2; i < ELF_SYMS_MAX_VERSIONS; i++)
		if (lib.verdefs[i] && !strcmp(lib.verdefs[i], "NEEDLE_1.0"))
			defines_1_0 = 1;
	CHECK(defines_1_0, "libneedle.so.1 defines the version NEEDLE_1.0");

	/* Every exported symbol, against the two lists. */
	size_t api_seen = 0, ip_seen = 0, unexpected = 0;
	for (size_t i = 0; i < lib.cnt; i++) {
		const struct elf_sym *e = &lib.v[i];
		if (!e->defined || (e->bind != STB_GLOBAL && e->bind != STB_WEAK))
			continue;
		if (e->abs && !strcmp(e->name, e->version))
			continue; /* the symbol ld gives the version definition itself */
		if (in_list(e->name, api, api_cnt)) {
			api_seen++;
			const char *want = in_list(e->name, (char *const *)since_1_3, N_SINCE_1_3)   ? "NEEDLE_1.3"
					   : in_list(e->name, (char *const *)since_1_2, N_SINCE_1_2) ? "NEEDLE_1.2"
					   : in_list(e->name, (char *const *)since_1_1, N_SINCE_1_1) ? "NEEDLE_1.1"
												     : "NEEDLE_1.0";
			if (strcmp(e->version, want) || e->hidden) {
				CHECK(0, "%s is exported as %s@@%s (%s%s%s)", e->name, e->name, want,
				      e->hidden ? "@" : "@@", e->version, e->hidden ? ", hidden" : "");
				unexpected++;
			}
		} else if (in_list(e->name, (char *const *)interposed, N_INTERPOSED)) {
			ip_seen++;
			if (e->version[0]) {
				CHECK(0, "interposed %s is exported without a version (has %s)", e->name, e->version);
				unexpected++;
			}
		} else {
			CHECK(0, "%s (%s) is exported but is neither API nor interposed", e->name, e->version);
			unexpected++;
		}
	}
	CHECK_EQ(api_seen, api_cnt, "every NEEDLE_API function of needle.h is exported");
	CHECK_EQ(ip_seen, N_INTERPOSED, "every function of NEEDLE_INTERPOSED is exported");
	for (size_t i = 0; i < N_INTERPOSED; i++) {
		const struct elf_sym *e = elf_syms_find(&lib, interposed[i]);
		if (!e || !e->defined)
			CHECK(0, "%s, in NEEDLE_INTERPOSED, is exported", interposed[i]);
	}
	CHECK_EQ(unexpected, 0, "nothing else is exported; API under its version node, interposers unversioned");
	for (size_t i = 0; i < api_cnt; i++) {
		const struct elf_sym *e = elf_syms_find(&lib, api[i]);
		if (!e || !e->defined)
			CHECK(0, "%s is exported", api[i]);
	}

	/* A program linked with -lneedle (this one) depends on libneedle.so.1
	 * and binds needle_* at NEEDLE_1.0. */
	if (elf_syms_read("/proc/self/exe", &self) == 0) {
		const struct elf_sym *e = elf_syms_find(&self, "needle_version");
		CHECK(e && !e->defined && !strcmp(e->version, "NEEDLE_1.0") && !strcmp(e->file, "libneedle.so.1"),
		      "this program references needle_version@NEEDLE_1.0 in libneedle.so.1 (%s in %s)",
		      e ? e->version : "-", e ? e->file : "-");
		elf_syms_free(&self);
	}

	/* Versions. */
	CHECK_EQ(NEEDLE_VERSION, NEEDLE_VERSION_MAJOR * 10000 + NEEDLE_VERSION_MINOR * 100 + NEEDLE_VERSION_PATCH,
		 "NEEDLE_VERSION is major * 10000 + minor * 100 + patch");
	CHECK(NEEDLE_VERSION_CODE(1, 2, 3) < NEEDLE_VERSION_CODE(1, 10, 0) &&
	      NEEDLE_VERSION_CODE(1, 99, 99) < NEEDLE_VERSION_CODE(2, 0, 0), "NEEDLE_VERSION_CODE orders versions");
#if NEEDLE_VERSION < NEEDLE_VERSION_CODE(1, 0, 0)
	CHECK(0, "NEEDLE_VERSION is usable in #if");
#endif
	CHECK_EQ(needle_version(), NEEDLE_VERSION, "needle_version() is the header's NEEDLE_VERSION");

	elf_syms_free(&lib);
	for (size_t i = 0; i < api_cnt; i++)
		free(api[i]);
	for (size_t i = 0; i < src_api_cnt; i++)
		free(src_api[i]);
	for (size_t i = 0; i < src_ip_cnt; i++)
		free(src_ip[i]);
	return harness_exit();
}
