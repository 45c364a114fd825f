/* auto_prog - functions whose arguments and return values needle record
 * --auto-args names and types from DWARF: integers of every width and
 * sign, char, bool, an enum, doubles and a float, strings (NULL and a bad
 * pointer too), structs passed and returned in registers (INTEGER, SSE
 * and mixed eightbytes), one passed in memory, varargs and a void
 * function.  Prints every call as replay should show it, so that a test
 * compares the two exactly.
 *
 *   auto_prog          the calls, once each (and t_count 100 times)
 *   auto_prog serve F  call t_count until the file F exists (for -p)
 *   auto_prog segv     its own SIGSEGV handler recovers from its own
 *                      faults, around string captures of bad pointers
 *   auto_prog crash    a fault it has no handler for: dies of SIGSEGV
 *   auto_prog handler  a SIGUSR1 handler installed with a full sa_mask
 *                      calls t_name with a bad pointer
 *   auto_prog top      t_top runs on a stack whose top is followed by an
 *                      inaccessible page */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

enum mode { M_READ = 1, M_WRITE = 2, M_APPEND = 4 };
struct pt { int x, y; };
struct vec2 { double x, y; };
struct rec { long id; float w, h; };
struct big { long a, b, c; };

#define KEEP __attribute__((noinline)) __attribute__((used))

KEEP long t_ints(int8_t a, uint16_t b, int32_t c, uint64_t d, int64_t e, char ch)
{
	__asm__ volatile("");
	return (long)a + b + c + (long)d + e + ch;
}

KEEP double t_fp(double x, float y)
{
	__asm__ volatile("");
	return x * y;
}

KEEP int t_enum(enum mode m, bool on)
{
	__asm__ volatile("");
	return on ? (int)m : -1;
}

KEEP size_t t_str(const char *key, const char *other)
{
	__asm__ volatile("" : : "r"(other));
	return key ? strlen(key) : 0;
}

KEEP int t_pt(struct pt p, short k)
{
	__asm__ volatile("");
	return p.x * p.y + k;
}

KEEP struct pt t_mkpt(int x, int y)
{
	__asm__ volatile("");
	return (struct pt){ x, y };
}

KEEP struct vec2 t_vec(struct vec2 v, double k)
{
	__asm__ volatile("");
	return (struct vec2){ v.x * k, v.y * k };
}

KEEP long t_rec(struct rec r)
{
	__asm__ volatile("");
	return r.id + (long)(r.w * r.h);
}

KEEP long t_big(struct big b, int after)
{
	__asm__ volatile("");
	return b.a + b.b + b.c + after;
}

KEEP int t_var(int n, ...)
{
	va_list ap;
	int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

/* Returned in memory: the caller passes its address in rdi, so x is in
 * rsi and s in rdx. */
KEEP struct big t_mkbig(long x, const char *s)
{
	__asm__ volatile("" : : "r"(s));
	return (struct big){ x, x + 1, x + 2 };
}

/* A union's members share a register: shown by the first. */
union num { long l; double d; };
KEEP long t_union(union num v, int k)
{
	__asm__ volatile("");
	return v.l + k;
}

/* long double comes back in st0: no hidden argument, x in rdi; its 80
 * bits are shown. */
KEEP long double t_ld(int x)
{
	__asm__ volatile("");
	return x * 1.5L;
}

/* __float128 and a 16-byte vector each take one xmm register. */
typedef float v4sf __attribute__((vector_size(16)));
KEEP double t_wide(__float128 q, v4sf v, double d, int n)
{
	__asm__ volatile("");
	return (double)q + v[0] + d + n;
}

/* Six integer and eight floating-point registers, every one a value. */
KEEP double t_many(long a, long b, long c, long d, long e, long f, double g, double h, double i, double j,
		   double k, double l, double m, double n)
{
	__asm__ volatile("");
	return (double)(a + b + c + d + e + f) + g + h + i + j + k + l + m + n;
}

/* Past the registers: the 7th and later integer arguments, the 9th and
 * later doubles, and what the ABI passes in memory (a struct of more
 * than 16 bytes; a long double, 16-byte aligned) take words of the
 * stack, in order. */
struct mixed { char tag; float w; long n; double d; };
KEEP long t_stack(long a, long b, long c, long d, long e, long f, long g, int h, const char *s)
{
	__asm__ volatile("" : : "r"(s));
	return a + b + c + d + e + f + g + h;
}

KEEP double t_fpstack(double a, double b, double c, double d, double e, double f, double g, double h, double i,
		      float j, struct mixed m)
{
	__asm__ volatile("");
	return a + b + c + d + e + f + g + h + i + j + m.tag + m.w + (double)m.n + m.d;
}

KEEP long t_align(long a, long b, long c, long d, long e, long f, int g, long double h, int i)
{
	__asm__ volatile("");
	return a + b + c + d + e + f + g + (long)h + i;
}

/* Alignment from a member (clang puts _Alignas there, gcc on the type
 * too): s takes 16-byte aligned words, after g's. */
struct m16 { _Alignas(16) long a; long b, c; };
KEEP long t_m16(long a, long b, long c, long d, long e, long f, long g, struct m16 s, long h)
{
	__asm__ volatile("");
	return a + b + c + d + e + f + g + s.a + s.b + s.c + h;
}

/* Aligned to 32: where it goes this reader does not place, so it is not
 * shown; the registers after it still are. */
struct m32 { _Alignas(32) long a; long b; };
KEEP long t_m32(long g, struct m32 s, long h)
{
	__asm__ volatile("");
	return g + s.a + s.b + h;
}

/* An __int128 with one integer register left goes to memory, and g takes
 * that register (the ABI); clang 14 places them otherwise.  What follows
 * an __int128 in memory is not shown, for any compiler, rather than a
 * wrong value. */
KEEP long t_i128(long a, long b, long c, long d, long e, __int128 x, long g)
{
	__asm__ volatile("");
	return a + b + c + d + e + (long)x + (long)(x >> 64) + g;
}

/* Defined without a prototype (K&R C): callers promote the float to a
 * double. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wold-style-definition"
#pragma GCC diagnostic ignored "-Wdeprecated-non-prototype"
KEEP int t_kr(f) float f;
{
	__asm__ volatile("");
	return (int)(f * 2);
}
#pragma GCC diagnostic pop
int t_kr();

/* Doubles shown with every digit they need. */
KEEP double t_prec(double x)
{
	__asm__ volatile("");
	return x * 2;
}

static volatile int sink;

KEEP void t_void(unsigned x)
{
	sink = (int)x;
}

KEEP int t_count(int i)
{
	__asm__ volatile("");
	return i * 2;
}

/* Always called with b = 7: gcc -O2 makes t_clone.constprop.0, which
 * takes a alone while its DWARF still lists a and b. */
static __attribute__((noinline)) int t_clone(int a, int b)
{
	return a * b + (a ^ b);
}

static const char *bool_name(bool b)
{
	return b ? "true" : "false";
}

static const char *mode_name(enum mode m)
{
	return m == M_READ ? "M_READ" : m == M_WRITE ? "M_WRITE" : m == M_APPEND ? "M_APPEND" : "?";
}

/* Takes a string it never reads (the tracer does). */
KEEP int t_name(const char *name)
{
	__asm__ volatile("" : : "r"(name));
	return 1;
}

static sigjmp_buf recover;
/* Addresses the compiler cannot see as constants (no -Warray-bounds). */
static volatile uintptr_t bad_base = 0x2000;
static volatile sig_atomic_t faults;
static void *volatile fault_addr;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	faults++;
	fault_addr = si->si_addr;
	siglongjmp(recover, 1);
}

/* Faults of the program's own, each caught by its handler, between
 * calls whose string argument is a bad pointer (read by the tracer). */
static int segv_mode(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	for (volatile int i = 0; i < 5; i++) {
		t_name((const char *)(uintptr_t)(0x100 + i));
		if (!sigsetjmp(recover, 1))
			*(volatile int *)(bad_base + 8 * (uintptr_t)i) = i;
		printf("fault %d at %p\n", (int)faults, fault_addr);
	}
	struct sigaction old;
	sigaction(SIGSEGV, NULL, &old);
	printf("handler %s\n", old.sa_sigaction == on_segv ? "mine" : "not mine");
	return 0;
}

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled += t_name((const char *)(uintptr_t)(0x200 + handled));
	t_name("in handler");
}

/* Inside the handler every signal but SIGKILL and SIGSTOP is blocked, as
 * sigfillset(&sa_mask) asks; the first t_name, outside, is read first. */
static int handler_mode(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigfillset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	t_name((const char *)0x100);
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	struct sigaction old;
	sigaction(SIGUSR1, NULL, &old);
	int full = sigismember(&old.sa_mask, SIGSEGV) == 1 && sigismember(&old.sa_mask, SIGBUS) == 1 &&
		   sigismember(&old.sa_mask, SIGTRAP) == 1;
	printf("handled %d, mask %s\n", (int)handled, full ? "full" : "not full");
	return 0;
}

/* A function run by makecontext on a stack that ends where an
 * inaccessible page starts: the words above its return address soon
 * cannot be read. */
static ucontext_t top_main, top_ctx;

KEEP void t_top(void)
{
	__asm__ volatile("");
	printf("t_top ran\n");
}

static int top_mode(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 9 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 8 * page, (size_t)page, PROT_NONE))
		return 1;
	getcontext(&top_ctx);
	top_ctx.uc_stack.ss_sp = m;
	top_ctx.uc_stack.ss_size = 8 * (size_t)page;
	top_ctx.uc_link = &top_main;
	makecontext(&top_ctx, t_top, 0);
	swapcontext(&top_main, &top_ctx);
	printf("back\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "top"))
		return top_mode();
	if (argc == 2 && !strcmp(argv[1], "segv"))
		return segv_mode();
	if (argc == 2 && !strcmp(argv[1], "handler"))
		return handler_mode();
	if (argc == 2 && !strcmp(argv[1], "crash")) {
		t_name((const char *)0x10);
		printf("crashing\n");
		fflush(stdout);
		*(volatile int *)(bad_base - 0x1fe8) = 1;
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "serve")) {
		for (int i = 0; access(argv[2], F_OK); i++) {
			int r = t_count(i);
			printf("t_count(i=%d) = %d;\n", i, r);
			fflush(stdout);
			usleep(1000);
		}
		return 0;
	}
	long l = t_ints(-5, 60000, -100000, 1ull << 40, -(1ll << 50), 'q');
	printf("t_ints(a=%d, b=%u, c=%d, d=%llu, e=%lld, ch='%c') = %ld;\n", -5, 60000, -100000, 1ull << 40,
	       -(1ll << 50), 'q', l);
	double d = t_fp(2.5, 0.25f);
	printf("t_fp(x=%g, y=%g) = %g;\n", 2.5, 0.25, d);
	for (int i = 0; i < 3; i++) {
		enum mode m = (enum mode)(1 << i);
		int r = t_enum(m, i != 1);
		printf("t_enum(m=%s, on=%s) = %d;\n", mode_name(m), bool_name(i != 1), r);
	}
	int r = t_enum((enum mode)3, true);
	/* M_READ | M_WRITE: single bits of mode, shown as their OR. */
	printf("t_enum(m=M_WRITE|M_READ, on=true) = %d;\n", r);
	size_t n = t_str("user:42", NULL);
	printf("t_str(key=\"user:42\", other=NULL) = %zu;\n", n);
	n = t_str("", (const char *)0x10);
	printf("t_str(key=\"\", other=(bad ptr 0x10)) = %zu;\n", n);
	r = t_pt((struct pt){ 3, -4 }, 7);
	printf("t_pt(p.x=3, p.y=-4, k=7) = %d;\n", r);
	struct pt p = t_mkpt(-1, 2);
	printf("t_mkpt(x=-1, y=2) = {x=%d, y=%d};\n", p.x, p.y);
	struct vec2 v = t_vec((struct vec2){ 1.5, -2 }, 2);
	printf("t_vec(v.x=1.5, v.y=-2, k=2) = {x=%g, y=%g};\n", v.x, v.y);
	l = t_rec((struct rec){ 77, 1.5f, 4 });
	printf("t_rec(r.id=77, r.w=1.5, r.h=4) = %ld;\n", l);
	l = t_big((struct big){ 1, 2, 3 }, 9);
	printf("t_big(b.a=1, b.b=2, b.c=3, after=9) = %ld;\n", l);
	r = t_var(3, 10, 20, 30);
	printf("t_var(n=3, ...) = %d;\n", r);
	t_void(12345);
	printf("t_void(x=12345);\n");
	struct big b = t_mkbig(5, "hi");
	printf("t_mkbig(x=5, s=\"hi\");\n");
	l = t_union((union num){ .l = 40 }, 2);
	printf("t_union(v.l=40, k=2) = %ld;\n", l);
	long double ld = t_ld(3);
	printf("t_ld(x=3) = %.6Lg;\n", ld);
	d = t_wide(1.0Q, (v4sf){ 2, 0, 0, 0 }, 2.5, 7);
	printf("t_wide(d=2.5, n=7) = %g;\n", d);
	sink += (int)(b.c + ld);
	d = t_many(1, 2, 3, 4, 5, 6, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5);
	printf("t_many(a=1, b=2, c=3, d=4, e=5, f=6, g=0.5, h=1.5, i=2.5, j=3.5, k=4.5, l=5.5, m=6.5, n=7.5) = %g;\n", d);
	l = t_stack(1, 2, 3, 4, 5, 6, -7, 8, "on the stack");
	printf("t_stack(a=1, b=2, c=3, d=4, e=5, f=6, g=-7, h=8, s=\"on the stack\") = %ld;\n", l);
	d = t_fpstack(0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, (struct mixed){ 'x', 2.5f, -9, 0.125 });
	printf("t_fpstack(a=0.5, b=1, c=1.5, d=2, e=2.5, f=3, g=3.5, h=4, i=4.5, j=5, m.tag='x', m.w=2.5, m.n=-9, "
	       "m.d=0.125) = %g;\n", d);
	l = t_align(1, 2, 3, 4, 5, 6, 7, 8.0L, 9);
	printf("t_align(a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9) = %ld;\n", l);
	l = t_m16(1, 2, 3, 4, 5, 6, 7, (struct m16){ -1, -2, -3 }, -11);
	printf("t_m16(a=1, b=2, c=3, d=4, e=5, f=6, g=7, s.a=-1, s.b=-2, s.c=-3, h=-11) = %ld;\n", l);
	l = t_m32(-12, (struct m32){ -4, -5 }, -13);
	printf("t_m32(g=-12, h=-13) = %ld;\n", l);
	l = t_i128(1, 2, 3, 4, 5, (__int128)(((unsigned __int128)22 << 64) | 21), -23);
#if defined(__clang__) && defined(__OPTIMIZE__)
	/* clang -O2's DWARF places a..e where the ABI does not either. */
	printf("t_i128();\n");
#else
	printf("t_i128(a=1, b=2, c=3, d=4, e=5) = %ld;\n", l);
#endif
	r = t_kr(1.5f);
	printf("t_kr(f=1.5) = %d;\n", r);
	d = t_prec(1.0000001);
	printf("t_prec(x=1.0000001) = %.8g;\n", d);
	for (int i = 0; i < 100; i++)
		sink += t_count(i);
	for (int i = 0; i < 5; i++)
		sink += t_clone(i + argc, 7);
	return 0;
}
