/* dlclose_sites - what the agent does with the sites of an object that
 * was unloaded (docs/design.md: "dlclose of an object with sites is not
 * tracked").  Not part of `make test`: `make robust-findings` runs it.
 * Prints one line per case and exits 1 if any case misbehaves.
 *
 *   1. dlclose while a link is attached: the detach must still succeed.
 *   2. the object loaded again at the same address: its entries are five
 *      1-byte NOPs again (gcc); the agent must prepare them again before
 *      a CALL replaces them, or a thread between two NOPs runs the middle
 *      of the CALL (the soak with SOAK_DLCLOSE=1 dies of it).
 *   3. the old address taken by another mapping and the object loaded
 *      elsewhere: an attach by name must patch only the object's new
 *      entries, never write into the mapping at the old address. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "needle.h"

static int count(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	++*(long *)data;
	return 0;
}

static int attach(const char *pattern, long *hits, struct needle_link **link)
{
	const char *pat[] = { pattern };
	struct needle_attach_opts o = { .sz = sizeof(o), .patterns = pat, .pattern_cnt = 1,
					.entry = count, .user_data = hits };
	return needle_attach(&o, link);
}

static long (*const *load(void **h))(long)
{
	*h = dlopen(SOAK_LIB, RTLD_NOW);
	if (!*h) {
		printf("dlopen: %s\n", dlerror());
		return NULL;
	}
	needle_refresh();
	return dlsym(*h, "soakdl_table");
}

int main(void)
{
	struct needle_link *link;
	long hits = 0;
	int bad = 0, r;
	void *h;
	long (*const *tab)(long);

	setvbuf(stdout, NULL, _IONBF, 0);
	needle_set_print(NULL);
	/* 1 */
	if (!(tab = load(&h)) || attach("soakdl_*", &hits, &link) != 64)
		return 2;
	uintptr_t old = (uintptr_t)tab[0];
	dlclose(h);
	r = needle_link_detach(link);
	printf("1. dlclose with a link attached, then detach: %d%s\n", r, r ? " (FINDING: the link cannot be detached)" : "");
	bad |= r != 0;

	/* 2 */
	if (!(tab = load(&h)))
		return 2;
	const uint8_t *b = (const uint8_t *)tab[0];
	int same = (uintptr_t)tab[0] == old, nops = !memcmp(b, "\x90\x90\x90\x90\x90", 5);
	printf("2. loaded again %s; entry of soakdl_0: %02x %02x %02x %02x %02x, %d sites known%s\n",
	       same ? "at the same address" : "elsewhere", b[0], b[1], b[2], b[3], b[4], needle_site_count(),
	       same && nops ? " (FINDING: five 1-byte NOPs left for a CALL to replace)" : "");
	bad |= same && nops;
	dlclose(h);

	/* 3 */
	uint8_t *filler = mmap((void *)(old & ~0xfffull), 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (filler == MAP_FAILED)
		return 2;
	memset(filler, 0x11, 4096);
	if (!(tab = load(&h)))
		return 2;
	r = attach("soakdl_0", &hits, &link);
	const uint8_t *o = (const uint8_t *)old;
	int wrote = memcmp(o, "\x11\x11\x11\x11\x11", 5) != 0;
	printf("3. old address taken, loaded at %p: %d sites known, attach soakdl_0 -> %d; "
	       "data at the old entry: %02x %02x %02x %02x %02x%s\n", (void *)tab[0], needle_site_count(), r,
	       o[0], o[1], o[2], o[3], o[4], wrote ? " (FINDING: the attach wrote into another mapping)" : "");
	bad |= wrote || r != 1;
	return bad;
}
