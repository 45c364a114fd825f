/* test_trap - the SIGTRAP path, made deterministic: an int3 is written
 * over a site by hand, as a patch batch does mid-flight, and the handler
 * must emulate the site's target instruction (CALL while attached, NOP
 * while detached).  Traps that are not needle's reach the program's own
 * SIGTRAP handler, whether it was installed before or after needle's. */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "needle.h"

__attribute__((noinline)) long target(long x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static long entries;
static volatile sig_atomic_t program_traps;

static int on_entry(const struct needle_ctx *ctx, uint64_t *cookie, void *data)
{
	(void)ctx;
	(void)cookie;
	(void)data;
	entries++;
	return 0;
}

static void program_handler(int sig)
{
	(void)sig;
	program_traps++;
}

static void poke(uint64_t addr, uint8_t byte)
{
	void *page = (void *)(addr & ~4095ull);
	mprotect(page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC);
	*(volatile uint8_t *)addr = byte;
	mprotect(page, 8192, PROT_READ | PROT_EXEC);
}

static struct needle_link *attach_target(void)
{
	struct needle_link *link = NULL;
	const char *pat[] = { "target" };
	struct needle_attach_opts opts = {
		.sz = sizeof(opts), .patterns = pat, .pattern_cnt = 1, .entry = on_entry,
	};
	CHECK_EQ(needle_attach(&opts, &link), 1, "attach target");
	return link;
}

int main(void)
{
	struct needle_site_info info = { .sz = sizeof(info) };
	int id = needle_site_find("target");

	CHECK(id >= 0 && needle_site_info((uint32_t)id, &info) == 0, "target has a site");

	/* The program's handler, installed before needle's. */
	signal(SIGTRAP, program_handler);
	struct needle_link *link = attach_target();

	/* In flight towards CALL: the handler must emulate the call. */
	/* The site's first byte while attached: a CALL or, for a calling
	 * entry, a JMP to its stub. */
	uint8_t first = *(volatile uint8_t *)(uintptr_t)info.addr;
	CHECK(first == 0xe8 || first == 0xe9, "attached site is a CALL or a JMP");
	poke(info.addr, 0xcc);
	long r = target(5);
	poke(info.addr, first);
	CHECK_EQ(r, 16, "result through an emulated CALL");
	CHECK_EQ(entries, 1, "emulated CALL reached the entry handler");
	CHECK_EQ(program_traps, 0, "needle's own trap not passed to the program");

	/* A trap that is not needle's goes to the program's handler. */
	__asm__ volatile("int3");
	CHECK_EQ(program_traps, 1, "program's int3 reached its handler installed before needle's");
	raise(SIGTRAP);
	CHECK_EQ(program_traps, 2, "raised SIGTRAP reached the program's handler");

	CHECK_EQ(needle_link_detach(link), 0, "detach");
	needle_link_destroy(link);

	/* In flight towards NOP: the handler must skip the 5 bytes. */
	poke(info.addr, 0xcc);
	r = target(6);
	poke(info.addr, info.off_bytes[0]);
	CHECK_EQ(r, 19, "result through an emulated NOP");
	CHECK_EQ(entries, 1, "emulated NOP did not dispatch");

	/* The program replaces needle's handler; the next batch puts needle's
	 * back in front and still chains to the program's. */
	signal(SIGTRAP, program_handler);
	__asm__ volatile("int3");
	CHECK_EQ(program_traps, 3, "program's handler installed after needle's runs");
	link = attach_target();
	poke(info.addr, 0xcc);
	r = target(7);
	poke(info.addr, first);
	CHECK_EQ(r, 22, "emulated CALL after the program replaced the handler");
	CHECK_EQ(entries, 2, "entry handler ran");
	__asm__ volatile("int3");
	CHECK_EQ(program_traps, 4, "chained to the program's newer handler");
	needle_link_destroy(link);
	CHECK(!memcmp((void *)info.addr, info.off_bytes, 5), "site restored");
	return harness_exit();
}
