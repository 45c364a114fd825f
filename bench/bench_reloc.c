/* bench_reloc - relocated sites (functions no compiler prepared), printed
 * as "key value" lines (run with NEEDLE_SITES=all):
 *   bench_reloc LIB count N   relocated_count_handler_ns: N calls of
 *                             bench_count_target (in LIB, built without
 *                             patchable entries) with a counting entry-only
 *                             link (NEEDLE_ATTACH_ENTRY_ONLY), minus the
 *                             untraced call; and
 *                             nop5_count_handler_ns_same_object (the same
 *                             body with a compiled NOP5 entry, same object);
 *                             both again with an ordinary entry handler
 *                             (relocated_count_ctx_handler_ns,
 *                             nop5_count_ctx_handler_ns_same_object);
 *                             relocated_extra_floor_ns, what a detour and
 *                             the full trampoline's saves cost by themselves
 *   bench_reloc LIB attach    relocated_discover_10k_ms (dlopen of LIB's
 *                             10,000 functions, then discovery: symbols,
 *                             FDEs, decoding, detours), relocated_attach_10k_ms
 *                             (one batch: every thread stopped, jmps written)
 *                             and their sum, relocated_attach_10k_ms_with_decoding
 * The same function body is measured as a NOP5 site by bench_patch. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "needle.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static _Atomic long hits;

static int count(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	return NEEDLE_SKIP_EXIT;
}

/* bench_direct_handlers.c, built with -mgeneral-regs-only. */
int bench_direct_count(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		       void *thread_data, uint64_t *cookie, void *user_data);

static double loop_ns(long (*fn)(long), long n);
#define NOT_A_SITE -1e9
/* The handler's cost on fn (ns per call): an entry-only link, or (ctx)
 * an ordinary entry handler; NOT_A_SITE if fn is not a site. */
static double handler_ns(long (*fn)(long), long n, double plain, int ctx)
{
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	struct needle_attach_opts o = { .sz = sizeof(o), .addrs = &addr, .addr_cnt = 1, .entry = count };
	struct needle_link *link;
	if (!ctx) {
		o.entry = NULL;
		o.direct_entry = bench_direct_count;
		o.flags = NEEDLE_ATTACH_ENTRY_ONLY;
	}
	if (needle_attach(&o, &link) != 1)
		return NOT_A_SITE;
	double traced = loop_ns(fn, n);
	needle_link_destroy(link);
	return traced - plain;
}

static double loop_ns(long (*fn)(long), long n)
{
	long s = 0;
	double best = 1e18;
	for (int r = 0; r < 5; r++) {
		double t0 = now_ms();
		for (long i = 0; i < n; i++)
			s += fn(i);
		double ns = (now_ms() - t0) * 1e6 / (double)n;
		if (ns < best)
			best = ns;
	}
	if (s == 42)
		puts("");
	return best;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	double t0 = now_ms();
	void *lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "bench_reloc: %s\n", dlerror());
		return 1;
	}
	int sites = needle_refresh();
	double discover = now_ms() - t0;
	if (!strcmp(argv[2], "count")) {
		long n = argc > 3 ? atol(argv[3]) : 20000000;
		long (*fn)(long) = (long (*)(long))dlsym(lib, "bench_count_target");
		double plain = loop_ns(fn, n);
		double probe = handler_ns(fn, n, plain, 0), ctx = handler_ns(fn, n, plain, 1);
		if (probe == NOT_A_SITE || ctx == NOT_A_SITE) {
			fprintf(stderr, "bench_reloc: bench_count_target is not a relocated site\n");
			return 1;
		}
		printf("relocated_untraced_call_ns %.3f\nrelocated_count_handler_ns %.3f\n", plain, probe);
		printf("relocated_count_ctx_handler_ns %.3f\n", ctx);
		/* The compiled NOP5 site of the same body, built the same way. */
		void *nop5_lib = argc > 4 ? dlopen(argv[4], RTLD_NOW) : NULL;
		if (nop5_lib)
			needle_refresh();
		long (*nop5)(long) = nop5_lib ? (long (*)(long))dlsym(nop5_lib, "bench_count_nop5") : NULL;
		struct needle_site_info info = { .sz = sizeof(info) };
		int id = nop5 ? needle_site_find("bench_count_nop5") : -1;
		if (id >= 0 && !needle_site_info((uint32_t)id, &info) && info.form != NEEDLE_FORM_RELOCATED) {
			double nplain = loop_ns(nop5, n);
			printf("nop5_count_handler_ns_same_object %.3f\n", handler_ns(nop5, n, nplain, 0));
			printf("nop5_count_ctx_handler_ns_same_object %.3f\n", handler_ns(nop5, n, nplain, 1));
		}
		/* The floor of the difference with a NOP5 site (bench_reloc_lib.c),
		 * measured untraced, after the detach. */
		long (*floor_plain)(long) = (long (*)(long))dlsym(lib, "bench_floor_plain");
		long (*floor_extra)(long) = (long (*)(long))dlsym(lib, "bench_floor_extra");
		if (floor_plain && floor_extra) {
			double a = loop_ns(floor_plain, n), b = loop_ns(floor_extra, n);
			printf("relocated_extra_floor_ns %.3f\n", b - a);
		}
		return 0;
	}
	long (*const *table)(long) = dlsym(lib, "bench_table");
	uint64_t *addrs = malloc(10000 * sizeof(*addrs));
	for (int i = 0; i < 10000; i++)
		addrs[i] = (uint64_t)(uintptr_t)table[i];
	struct needle_attach_opts o = { .sz = sizeof(o), .addrs = addrs, .addr_cnt = 10000, .entry = count };
	struct needle_link *link;
	double t1 = now_ms();
	int n = needle_attach(&o, &link);
	double attach = now_ms() - t1;
	if (n != 10000) {
		fprintf(stderr, "bench_reloc: attached %d of 10000 (%d sites)\n", n, sites);
		return 1;
	}
	printf("relocated_discover_10k_ms %.3f\nrelocated_attach_10k_ms %.3f\nrelocated_attach_10k_ms_with_decoding %.3f\n",
	       discover, attach, discover + attach);
	needle_link_destroy(link);
	return 0;
}
