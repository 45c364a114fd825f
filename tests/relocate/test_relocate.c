/* test_relocate - relocated sites on functions no compiler prepared
 * (tests/relocate/reloc_funcs.S, reloc_ifunc.c, in libreloc.so, built
 * without patchable entries; run with NEEDLE_SITES=all): the functions
 * that can be relocated are sites and run correctly traced, with exact
 * entry and exit counts from two threads; each one that must be refused
 * is not a site, and the object's refusal counts are exactly one per
 * reason; an IFUNC is traced under its own name in the implementation
 * its resolver picked. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "needle.h"

long rel_riprel_load(void);
long *rel_lea(void);
long rel_store(long);
int rel_jcc(int);
int rel_jmp(void);
int rel_endbr(void);
int rel_loop_back(int);
int rel_call_first(void);
long rel_call_retaddr(void);
int rel_call_reg(int (*)(void));
int rel_switch(int);
int rel_switch_into(int);
int rel_tail_ptr(int (*)(void));
int rel_goto_framed(void);
long rel_syscall(void);
int rel_jump_table(int);
int rel_tiny(int);
int reloc_pick(int);
long rel_stored(void);
int rel_keep_leaf(void);
int rel_keep_caller(void);
/* tests/api/direct_handlers.c */
int test_direct_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		      void *thread_data, uint64_t *cookie, void *user_data);
int test_direct_exit(const struct needle_func *func, uint64_t cookie, void *thread_data, void *user_data);
int test_probe_entry(const struct needle_func *func, const struct needle_regs *regs, uint64_t ret_addr,
		     void *thread_data, uint64_t *cookie, void *user_data);
extern _Atomic uint64_t probe_regs_misaligned, probe_last_ret;
extern const struct needle_func *_Atomic probe_last_func;
extern _Atomic uint64_t direct_entries, direct_exits;

static const char *const relocatable[] = { "rel_riprel_load", "rel_lea",	   "rel_store",	   "rel_jcc",
					   "rel_jmp",	      "rel_endbr",	   "reloc_pick",   "rel_call_first",
					   "rel_call_retaddr", "rel_switch", "rel_tail_ptr" };
#define N_RELOC (sizeof(relocatable) / sizeof(relocatable[0]))
static const char *const refused[] = { "rel_loop_back", "rel_call_reg",	  "rel_syscall",    "rel_jump_table",
				       "rel_tiny",      "rel_switch_into", "rel_goto_framed" };
#define N_REFUSED (sizeof(refused) / sizeof(refused[0]))

static _Atomic long entries[N_RELOC + 1], exits[N_RELOC + 1];
static int ids[N_RELOC];
static int bad_values;

static size_t slot_of(uint32_t id)
{
	for (size_t i = 0; i < N_RELOC; i++)
		if (ids[i] == (int)id)
			return i;
	return N_RELOC; /* not one of ours */
}

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)cookie;
	(void)data;
	atomic_fetch_add(&entries[slot_of(ctx->func->site_id)], 1);
	return 0;
}

static void on_exit_(const struct needle_ctx *ctx, uint64_t cookie, void *data)
{
	(void)cookie;
	(void)data;
	atomic_fetch_add(&exits[slot_of(ctx->func->site_id)], 1);
}

#define ROUNDS 1000

static void *calls(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		if (rel_riprel_load() != 0x1234567890 || *rel_lea() != 0x1234567890 || rel_store(i) != i ||
		    rel_jcc(i) != (i ? 1 : 2) || rel_jmp() != 42 || rel_endbr() != 7 || reloc_pick(i) != i + 100 ||
		    rel_loop_back(4) != 10 || rel_call_first() != 8 || rel_syscall() != getpid() ||
		    rel_jump_table(i) != 10 + (i & 1) || rel_tiny(i) != i ||
		    rel_call_retaddr() != (long)(uintptr_t)rel_call_retaddr + 5 ||
		    rel_call_reg((int (*)(void))rel_endbr) != 8 || rel_switch(i & 3) != 20 + (i & 3) ||
		    rel_switch(7 + i) != -1 || rel_switch_into(i & 1) != 10 + 10 * (i & 1) ||
		    rel_tail_ptr((int (*)(void))rel_endbr) != 7 || rel_goto_framed() != 5)
			__atomic_fetch_add(&bad_values, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* 1,000 calls of rel_keep_caller in a new thread: kept[0] the mask of
 * registers that came back changed. */
static void *keep_calls(void *arg)
{
	int *kept = arg;
	for (int i = 0; i < 1000; i++)
		kept[0] |= rel_keep_caller();
	return NULL;
}

static int site_of(const char *name, struct needle_site_info *info)
{
	int id = needle_site_find(name);
	if (id < 0)
		return id;
	info->sz = sizeof(*info);
	return needle_site_info((uint32_t)id, info) ? -1 : id;
}

int main(void)
{
	struct needle_site_info info;

	/* The object's refusals, one per reason. */
	int nobj = needle_object_count(), found = 0;
	for (int i = 0; i < nobj; i++) {
		struct needle_object_info oi = { .sz = sizeof(oi) };
		if (needle_object_info((uint32_t)i, &oi) || !strstr(oi.path, "libreloc.so"))
			continue;
		found = 1;
		static const struct {
			const char *reason;
			int cnt;
		} want[] = { { "branch into the patch", 2 }, /* rel_loop_back, rel_switch_into */
			     { "call in the patch", 1 },     /* rel_call_reg */
			     { "syscall in the patch", 1 },  /* rel_syscall */
			     { "jump table", 2 },            /* rel_jump_table, rel_goto_framed */
			     { "too short", 1 } };           /* rel_tiny */
		for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
			int got = -1;
			for (int r = 1; needle_refusal_name(r); r++)
				if (!strcmp(needle_refusal_name(r), want[w].reason))
					got = (int)oi.refused[r];
			CHECK_EQ(got, want[w].cnt, "libreloc.so: functions refused as '%s'", want[w].reason);
		}
		CHECK(oi.sites_relocated >= N_RELOC, "libreloc.so: %u functions relocated", oi.sites_relocated);
		CHECK_EQ(oi.sites_compiled, 0, "libreloc.so: no compiled site (built without patchable entries)");
	}
	CHECK(found, "libreloc.so is among the objects");

	for (size_t i = 0; i < N_RELOC; i++) {
		ids[i] = site_of(relocatable[i], &info);
		CHECK(ids[i] >= 0 && info.form == NEEDLE_FORM_RELOCATED && info.traceable, "%s is a relocated site",
		      relocatable[i]);
	}
	for (size_t i = 0; i < N_REFUSED; i++)
		CHECK(needle_site_find(refused[i]) < 0, "%s is refused (no site)", refused[i]);

	struct needle_link *link = NULL;
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = relocatable, .pattern_cnt = N_RELOC,
					.entry = on_entry, .exit = on_exit_ };
	int n = needle_attach(&o, &link);
	CHECK_EQ(n, N_RELOC, "attach to the relocated functions");

	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, calls, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(bad_values, 0, "every function returned what it returns untraced (traced or refused)");
	long want_total = 0;
	for (size_t i = 0; i < N_RELOC; i++) {
		/* rel_endbr is called directly and by rel_call_first,
		 * rel_call_reg and rel_tail_ptr; rel_switch twice a round. */
		long want = !strcmp(relocatable[i], "rel_endbr")    ? 8 * ROUNDS
			    : !strcmp(relocatable[i], "rel_switch") ? 4 * ROUNDS
								    : 2 * ROUNDS;
		want_total += want;
		CHECK_EQ(atomic_load(&entries[i]), want, "%s: every entry seen", relocatable[i]);
		CHECK_EQ(atomic_load(&exits[i]), want, "%s: every exit seen", relocatable[i]);
	}
	CHECK_EQ(rel_stored(), ROUNDS - 1, "the relocated rip-relative store wrote where the original does");

	CHECK_EQ(needle_link_destroy(link), 0, "detach");
	calls(NULL);
	CHECK_EQ(bad_values, 0, "after detach, every function still returns what it should");
	long total = 0;
	for (size_t i = 0; i < N_RELOC; i++)
		total += atomic_load(&entries[i]);
	CHECK_EQ(total, want_total, "no entry counted after detach");

	/* A caller that keeps values in caller-saved registers across a
	 * call of a leaf that leaves them alone (-fipa-ra): the relocated
	 * entry and the hijacked return give every one back, on the full
	 * path (a ctx, C handlers) and on the direct one. */
	const char *keep[] = { "rel_keep_leaf" };
	int mask = 0;
	for (int direct = 0; direct < 2; direct++) {
		struct needle_attach_opts k = { .sz = sizeof(k), .patterns = keep, .pattern_cnt = 1,
						.entry = on_entry, .exit = on_exit_, .thread_data_size = 32 };
		if (direct) {
			k.direct_entry = test_direct_entry;
			k.direct_exit = test_direct_exit;
		}
		CHECK_EQ(needle_attach(&k, &link), 1, "attach rel_keep_leaf (%s path)", direct ? "direct" : "full");
		mask = 0;
		for (int i = 0; i < 1000; i++)
			mask |= rel_keep_caller();
		CHECK_EQ(mask, 0, "%s path: no register the caller kept came back changed (mask of those that did)",
			 direct ? "direct" : "full");
		CHECK_EQ(needle_link_destroy(link), 0, "detach");
	}
	CHECK_EQ(atomic_load(&direct_entries), 999, "the direct path took every call but the thread's first");
	CHECK_EQ(atomic_load(&direct_exits), 1000, "and every return");

	/* And on the probe path (NEEDLE_ATTACH_ENTRY_ONLY), whose handler
	 * clobbers every register it may: the relocated entry's probe path
	 * puts each back, when it takes a call and when it declines one (a
	 * new thread's first, which has no state yet) to the C path. */
	static _Atomic uint64_t probes;
	struct needle_attach_opts p = { .sz = sizeof(p), .patterns = keep, .pattern_cnt = 1,
					.direct_entry = test_probe_entry, .user_data = (void *)&probes,
					.flags = NEEDLE_ATTACH_ENTRY_ONLY };
	CHECK_EQ(needle_attach(&p, &link), 1, "attach rel_keep_leaf entry only");
	struct needle_stats st0 = { .sz = sizeof(st0) }, st1 = { .sz = sizeof(st1) };
	needle_get_stats(&st0);
	mask = 0;
	for (int i = 0; i < 1000; i++)
		mask |= rel_keep_caller();
	needle_get_stats(&st1);
	CHECK_EQ(mask, 0, "probe path: no register the caller kept came back changed (mask of those that did)");
	CHECK_EQ(atomic_load(&probes), 1000, "probe path: every call counted once");
	CHECK_EQ(atomic_load(&probe_regs_misaligned), 0, "probe path: regs 16-byte aligned");
	const struct needle_func *pf = atomic_load(&probe_last_func);
	Dl_info caller_info = { 0 };
	CHECK(pf && !strcmp(pf->name, "rel_keep_leaf"), "probe path: the handler gets the function (%s)",
	      pf ? pf->name : "none");
	CHECK(dladdr((void *)(uintptr_t)atomic_load(&probe_last_ret), &caller_info) && caller_info.dli_sname &&
		      !strcmp(caller_info.dli_sname, "rel_keep_caller"),
	      "probe path: and the return address into its caller (%s)",
	      caller_info.dli_sname ? caller_info.dli_sname : "none");
	/* The probe path's assembly is the calling trampoline's: with
	 * NEEDLE_CALLING=0 (entries CALL their stubs) it is taken in C. */
	const char *calling = getenv("NEEDLE_CALLING");
	if (!calling || strcmp(calling, "0"))
		CHECK(st1.direct_c_entries + st1.full_path_entries - st0.direct_c_entries - st0.full_path_entries <= 2,
		      "probe path: the C paths took the site's first call only (%llu)",
		      (unsigned long long)(st1.direct_c_entries + st1.full_path_entries - st0.direct_c_entries -
					   st0.full_path_entries));
	atomic_store(&probes, 0);
	pthread_t kt;
	int kept[2] = { 0, 0 };
	pthread_create(&kt, NULL, keep_calls, kept);
	pthread_join(kt, NULL);
	CHECK_EQ(kept[0], 0, "probe path, a new thread: no register its caller kept came back changed");
	CHECK_EQ(atomic_load(&probes), 1000, "probe path, a new thread: every call counted once, its first declined "
					    "to the C path included");
	CHECK_EQ(needle_link_destroy(link), 0, "detach");
	return harness_exit();
}
