/* test_arg_specs - the grammar of needle record's -A, -R and -F value
 * specs (src/cli/args/arg_specs.c) as README's "Arguments and return
 * values" gives it: what arg_plan_add_spec and arg_plan_add_filter accept
 * and keep, each of their refusals with its exact line (cli_error is this
 * program's), the limits of common/value_spec.h at and past their edge,
 * duplicates (kept, in order); then arg_plan_resolve's agent lines
 * ("GLOB\tA|R\tkind:index:fmt:bits:shift,...[\tSCOPE]", filters
 * "GLOB\titem\tOP\tVALUE"), the views' labels and its refusals, without
 * debug info (registers only), against the DWARF of test_dwarf_params's
 * gcc -O0 fixture (types, names, the checks), against it as a library's,
 * and --auto-args on it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/args/args.h"
#include "cli/args/dwarf_params.h"
#include "cli/util/cli_util.h"
#include "common/value_spec.h"
#include "harness.h"

/* The command's error line, kept to be compared. */
static char said[8192];
static int said_cnt;

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(said, sizeof(said), fmt, ap);
	va_end(ap);
	said_cnt++;
}

static const char *str(const char *s)
{
	return s ? s : "(null)";
}

#define CHECK_STR(got, want, ...)                                                          \
	do {                                                                               \
		const char *g_ = str(got), *w_ = str(want);                                \
		CHECK(!strcmp(g_, w_), __VA_ARGS__);                                       \
		if (strcmp(g_, w_))                                                        \
			printf("      got      '%s'\n      expected '%s'\n", g_, w_);          \
	} while (0)

/* One spec (-A, or -R when ret) into a fresh plan: accepted, silently,
 * kept as the line "A<spec>" (or "R<spec>"). */
static void accept_spec(const char *spec, int ret)
{
	struct arg_plan p = { 0 };
	char want[VALUE_SPEC_MAX + 8];

	said_cnt = 0;
	int r = arg_plan_add_spec(&p, spec, ret);
	snprintf(want, sizeof(want), "%c%s", ret ? 'R' : 'A', spec);
	CHECK(r == 0 && !said_cnt && p.specs && !strcmp(p.specs, want) && !p.value_filters && !p.value_globs,
	      "%s '%.80s%s' accepted, kept as given", ret ? "-R" : "-A", spec, strlen(spec) > 80 ? "..." : "");
	if (said_cnt)
		printf("      said: %s\n", said);
	arg_plan_free(&p);
}

/* Refused with -1 and the line want (NULL: the usage line), the plan
 * left as it was. */
static void refuse_spec(const char *spec, int ret, const char *why, const char *want)
{
	struct arg_plan p = { 0 };
	char usage[VALUE_SPEC_MAX + 200];

	if (!want) {
		snprintf(usage, sizeof(usage), "%s needs GLOB@SPEC (e.g. %s), not '%s'", ret ? "-R" : "-A",
			 ret ? "'kv_*@retval/d'" : "'kv_get@arg1/u,arg2/x'", spec);
		want = usage;
	}
	said_cnt = 0;
	said[0] = 0;
	int r = arg_plan_add_spec(&p, spec, ret);
	CHECK(r == -1 && said_cnt == 1 && !strcmp(said, want) && !p.specs, "%s refused: %s", ret ? "-R" : "-A", why);
	if (strcmp(said, want))
		printf("      said     '%s'\n      expected '%s'\n", said, want);
	arg_plan_free(&p);
}

static void accept_filter(const char *spec, const char *glob)
{
	struct arg_plan p = { 0 };

	said_cnt = 0;
	int r = arg_plan_add_filter(&p, spec);
	CHECK(r == 0 && !said_cnt && p.value_filters && !strcmp(p.value_filters, spec) && p.value_globs &&
		      !strcmp(p.value_globs, glob) && !p.specs,
	      "-F '%.80s' accepted: glob '%.40s' traced", spec, glob);
	if (said_cnt)
		printf("      said: %s\n", said);
	arg_plan_free(&p);
}

static void refuse_filter(const char *spec, const char *why, const char *want)
{
	struct arg_plan p = { 0 };
	char usage[VALUE_SPEC_MAX + 200];

	if (!want) {
		snprintf(usage, sizeof(usage), "-F '%s': a value filter is GLOB@ARG OP VALUE, e.g. -F 'kv_get@arg2>1000'",
			 spec);
		want = usage;
	}
	said_cnt = 0;
	said[0] = 0;
	int r = arg_plan_add_filter(&p, spec);
	CHECK(r == -1 && said_cnt == 1 && !strcmp(said, want) && !p.value_filters && !p.value_globs,
	      "-F refused: %s", why);
	if (strcmp(said, want))
		printf("      said     '%s'\n      expected '%s'\n", said, want);
	arg_plan_free(&p);
}

static char *repeat(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = 0;
	return buf;
}

/* README's register names, the letter of each spec's 'is not argN' line. */
static void refuse_name(const char *spec, const char *tok)
{
	char want[600];

	snprintf(want, sizeof(want),
		 "-A '%s': '%s' is not argN (1-6 a register, 7-255 the stack), fparg1..fparg8, retval or a "
		 "parameter's name",
		 spec, tok);
	refuse_spec(spec, 0, spec, want);
}

static void refuse_format(const char *spec, const char *fmt)
{
	char want[600];

	snprintf(want, sizeof(want), "-A '%s': '/%s' is not a format (d u x c p f s S, with 8/16/32/64 bits: d32, x16, f32; i for d; "
		 "f80 or 80 a long double)",
		 spec, fmt);
	refuse_spec(spec, 0, spec, want);
}

static void test_add_spec(void)
{
	char buf[1100], spec[1300];

	accept_spec("kv_get@arg1/u,arg2/x", 0);
	accept_spec("kv_*@retval/d", 1);
	/* The glob may hold spaces and commas (a C++ name), and any glob
	 * characters. */
	accept_spec("f(long, long)@arg1", 0);
	accept_spec("kv_[gp]?t*@arg3", 0);
	/* Every format, every size; c alone; a string; stack words 7 to 255;
	 * fparg1..8 with f; names of parameters and fields. */
	accept_spec("f@arg1/d8,arg2/u16,arg3/x32,arg4/p64,arg5/c,arg6/s", 0);
	accept_spec("f@arg1/d,arg1/u,arg1/x,arg1/c,arg1/p,arg1/f,arg1/s", 0);
	accept_spec("f@arg7,arg8/x,arg255/d32", 0);
	accept_spec("f@fparg1,fparg8/f32,fparg2/f64,fparg3/f", 0);
	accept_spec("f@arg1/i,arg2/i8,arg3/i64,arg4/64,fparg1/32,fparg2/64", 0); /* uftrace's spellings */
	accept_spec("f@key,p.x,a[0],_n9/x", 0);
	accept_spec("f@retval/f32", 1);
	accept_spec("f@retval,retval/x", 1); /* the same value twice: kept */
	/* Names that look like registers but are not numbered are names. */
	accept_spec("f@arg,args,fparg,retvalue", 0);
	/* 16 values. */
	accept_spec("f@arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,arg10,arg11,arg12,arg13,arg14,arg15,arg16", 0);
	/* A name of 47 bytes (VALUE_LABEL_MAX with its NUL). */
	snprintf(spec, sizeof(spec), "f@%s", repeat(buf, 'k', VALUE_LABEL_MAX - 1));
	accept_spec(spec, 0);
	/* A glob of VALUE_GLOB_MAX bytes; a spec of VALUE_SPEC_MAX. */
	snprintf(spec, sizeof(spec), "%s@arg1", repeat(buf, 'g', VALUE_GLOB_MAX));
	accept_spec(spec, 0);
	/* A spec of VALUE_SPEC_MAX bytes, every part at its limit: a glob of
	 * VALUE_GLOB_MAX, names of VALUE_LABEL_MAX - 1; and one byte more. */
	char g[VALUE_GLOB_MAX + 1], n[VALUE_LABEL_MAX];
	repeat(g, 'g', VALUE_GLOB_MAX);
	repeat(n, 'n', VALUE_LABEL_MAX - 1);
	size_t off = (size_t)snprintf(spec, sizeof(spec), "%s@", g);
	for (int i = 0; i < 15; i++)
		off += (size_t)snprintf(spec + off, sizeof(spec) - off, "%s,", n);
	off += (size_t)snprintf(spec + off, sizeof(spec) - off, "%.*s", (int)(VALUE_SPEC_MAX - off), n);
	CHECK_EQ(strlen(spec), VALUE_SPEC_MAX, "(a spec of VALUE_SPEC_MAX bytes, 16 names)");
	accept_spec(spec, 0);
	strcat(spec, "n");
	refuse_spec(spec, 0, "the same, a byte longer: VALUE_SPEC_MAX + 1", NULL);
	snprintf(spec, sizeof(spec), "g@%s", repeat(buf, 'k', VALUE_SPEC_MAX - 1));
	refuse_spec(spec, 0, "a spec of VALUE_SPEC_MAX + 1 bytes, one long name", NULL);

	/* Duplicates and merging: every spec is a line, in the order given,
	 * -A and -R mixed, the same one twice kept twice. */
	struct arg_plan p = { 0 };
	said_cnt = 0;
	int r = arg_plan_add_spec(&p, "kv_get@arg1", 0) | arg_plan_add_spec(&p, "kv_get@retval", 1) |
		arg_plan_add_spec(&p, "kv_get@arg1", 0) | arg_plan_add_spec(&p, "kv_*@arg2/x", 0);
	CHECK(!r && !said_cnt, "four specs accepted");
	CHECK_STR(p.specs, "Akv_get@arg1\nRkv_get@retval\nAkv_get@arg1\nAkv_*@arg2/x", "... a line each, in order");
	/* A refused one leaves those before it. */
	CHECK_EQ(arg_plan_add_spec(&p, "kv_get@arg0", 0), -1, "a fifth, refused");
	CHECK_STR(p.specs, "Akv_get@arg1\nRkv_get@retval\nAkv_get@arg1\nAkv_*@arg2/x", "... the four kept");
	CHECK(arg_plan_wanted(&p), "a plan with specs wants DWARF");
	arg_plan_free(&p);
	CHECK(!p.specs && !p.value_filters && !p.value_globs && !p.args && !p.arg_filters && !p.arg_labels &&
		      !p.auto_args && !arg_plan_wanted(&p),
	      "arg_plan_free empties the plan");

	/* GLOB@SPEC itself. */
	/* Without '@': uftrace's -A PATTERN, what debug info gives of the
	 * functions it names; a regular expression is checked. */
	struct arg_plan bare = { 0 };
	CHECK(!arg_plan_add_spec(&bare, "kv_get", 0) && !arg_plan_add_spec(&bare, "^kv_", 1) && !bare.specs &&
		      bare.auto_patterns && !strcmp(bare.auto_patterns, "Akv_get\nR^kv_") && arg_plan_wanted(&bare),
	      "-A PATTERN / -R PATTERN: kept as auto patterns, a line per side");
	arg_plan_free(&bare);
	refuse_spec("^(kv", 0, "a pattern that is not a regular expression", "-A '^(kv' is not a regular expression");
	refuse_spec("@arg1", 0, "no glob", NULL);
	refuse_spec("kv_get@", 0, "nothing after @", NULL);
	refuse_spec("kv_get@arg1\targ2", 0, "a tab", NULL);
	refuse_spec("kv_get@arg1\narg2", 0, "a newline (specs are lines)", NULL);
	refuse_spec("kv\tget@arg1", 0, "a tab in the glob", NULL);
	snprintf(spec, sizeof(spec), "%s@arg1", repeat(buf, 'g', VALUE_GLOB_MAX + 1));
	refuse_spec(spec, 0, "a glob of VALUE_GLOB_MAX + 1 bytes", NULL);

	/* Empty values. */
	refuse_spec("f@arg1,,arg2", 0, "two commas", "-A 'f@arg1,,arg2': an empty value in the list");
	refuse_spec("f@,arg1", 0, "a leading comma", "-A 'f@,arg1': an empty value in the list");
	refuse_spec("f@arg1,", 0, "a trailing comma", "-A 'f@arg1,': an empty value in the list");
	refuse_spec("f@retval,", 1, "a trailing comma (-R)", "-R 'f@retval,': an empty value in the list");

	/* Names: registers out of range, characters a name has not. */
	refuse_name("f@arg0", "arg0");
	refuse_name("f@arg256", "arg256");
	refuse_name("f@fparg0", "fparg0");
	refuse_name("f@fparg9", "fparg9");
	refuse_name("f@arg1x", "arg1x");
	refuse_name("f@fpargx", "fpargx");
	refuse_name("f@arg1,ke-y", "ke-y");
	refuse_name("f@a b", "a b");
	refuse_name("f@p->x", "p->x");
	refuse_name("f@/d", "");
	/* An index that wraps around 32 bits is out of range, not arg1. */
	refuse_name("f@arg4294967297", "arg4294967297");
	refuse_name("f@fparg4294967297", "fparg4294967297");
	/* A name of VALUE_LABEL_MAX bytes: no room for its NUL. */
	snprintf(spec, sizeof(spec), "f@%s", repeat(buf, 'k', VALUE_LABEL_MAX));
	refuse_name(spec, buf);

	/* Formats. */
	refuse_format("f@arg1/", "");
	refuse_format("f@arg1/q", "q");
	refuse_format("f@arg1/D", "D");
	refuse_format("f@arg1/d7", "d7");
	refuse_format("f@arg1/d128", "d128");
	refuse_format("f@arg1/d0", "d0");
	refuse_format("f@arg1/du", "du");
	refuse_format("f@arg1/s8", "s8");
	refuse_format("f@arg1/s64", "s64");
	refuse_format("f@arg1/d80", "d80"); /* 80 bits: a long double only */
	refuse_spec("f@arg1/80", 0, "f@arg1/80",
		    "-A 'f@arg1/80': a long double (/80) is passed on the stack: give its place, fpargN/80%stack+N "
		    "(N its first stack word)");
	refuse_format("f@arg1/i7", "i7");
	refuse_format("f@arg1/i64x", "i64x");
	refuse_format("f@arg1/f8", "f8");
	refuse_format("f@arg1/f16", "f16");
	refuse_format("f@arg1/d/x", "d/x");

	/* Which side a value is on. */
	refuse_spec("f@retval", 0, "retval with -A", "-A 'f@retval': -A takes arguments; the return value goes with -R");
	refuse_spec("f@arg1,retval", 0, "retval in an -A list",
		    "-A 'f@arg1,retval': -A takes arguments; the return value goes with -R");
	refuse_spec("f@arg1", 1, "argN with -R", "-R 'f@arg1': -R takes retval only");
	refuse_spec("f@fparg1", 1, "fpargN with -R", "-R 'f@fparg1': -R takes retval only");
	refuse_spec("f@ret", 1, "a name with -R", "-R 'f@ret': -R takes retval only");
	refuse_spec("f@retval,x", 1, "a name after retval with -R", "-R 'f@retval,x': -R takes retval only");
	/* An xmm register is read as a float. */
	refuse_spec("f@fparg1/d", 0, "fparg1/d",
		    "-A 'f@fparg1/d': fparg1 is a floating-point register: format f (f32 or f64)");
	refuse_spec("f@fparg3/x32", 0, "fparg3/x32",
		    "-A 'f@fparg3/x32': fparg3 is a floating-point register: format f (f32 or f64)");
	refuse_spec("f@fparg2/s", 0, "fparg2/s",
		    "-A 'f@fparg2/s': fparg2 is a floating-point register: format f (f32 or f64)");
	/* 17 values: VALUE_ITEMS_MAX + 1. */
	refuse_spec("f@arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,arg10,arg11,arg12,arg13,arg14,arg15,arg16,arg17", 0,
		    "17 values",
		    "-A 'f@arg1,arg2,arg3,arg4,arg5,arg6,arg7,arg8,arg9,arg10,arg11,arg12,arg13,arg14,arg15,arg16,arg17': "
		    "at most 16 values per function");
}

static void test_add_filter(void)
{
	char buf[1100], spec[1300];

	accept_filter("kv_get@arg2>1000", "kv_get");
	accept_filter("kv_get@len>=8", "kv_get");
	accept_filter("f@arg1==3", "f");
	accept_filter("f@arg1!=3", "f");
	accept_filter("f@arg1<3", "f");
	accept_filter("f@arg1<=3", "f");
	accept_filter("f@arg1>=3", "f");
	/* Integers decimal, 0x hex, negative, up to 2^64 - 1; a number with
	 * a point (for a floating-point value: checked at resolve). */
	accept_filter("f@arg1==-5", "f");
	accept_filter("f@arg1/x32==0x7fFF", "f");
	accept_filter("f@arg1/u==18446744073709551615", "f");
	accept_filter("f@arg1/d==-9223372036854775808", "f");
	accept_filter("f@fparg1<2.5", "f");
	accept_filter("f@fparg1/f32>-1e3", "f");
	accept_filter("f(long, long)@arg2==0", "f(long, long)");
	accept_filter("kv_*@key.len<=16", "kv_*");
	snprintf(spec, sizeof(spec), "%s@arg1==1", repeat(buf, 'g', VALUE_GLOB_MAX));
	accept_filter(spec, buf);
	/* A name of 47 bytes. */
	snprintf(spec, sizeof(spec), "f@%s==1", repeat(buf, 'k', VALUE_LABEL_MAX - 1));
	accept_filter(spec, "f");

	/* Every filter a line, its glob a line, in order, duplicates kept. */
	struct arg_plan p = { 0 };
	said_cnt = 0;
	int r = arg_plan_add_filter(&p, "kv_get@arg2>1000") | arg_plan_add_filter(&p, "kv_put@arg1==0") |
		arg_plan_add_filter(&p, "kv_get@arg2>1000") | arg_plan_add_spec(&p, "kv_get@arg1", 0);
	CHECK(!r && !said_cnt, "three filters and a spec accepted");
	CHECK_STR(p.value_filters, "kv_get@arg2>1000\nkv_put@arg1==0\nkv_get@arg2>1000", "... the filters, a line each");
	CHECK_STR(p.value_globs, "kv_get\nkv_put\nkv_get", "... their globs, a line each");
	CHECK_STR(p.specs, "Akv_get@arg1", "... the spec apart");
	arg_plan_free(&p);

	/* GLOB@ARG OP VALUE itself. */
	refuse_filter("kv_get>3", "no @", NULL);
	refuse_filter("@arg1>3", "no glob", NULL);
	refuse_filter("f@arg1 > 3", "a space after @", NULL);
	refuse_filter("f@arg1>3\t", "a tab", NULL);
	refuse_filter("f@arg1>3\nf@arg2>3", "a newline", NULL);
	snprintf(spec, sizeof(spec), "%s@arg1==1", repeat(buf, 'g', VALUE_GLOB_MAX + 1));
	refuse_filter(spec, "a glob of VALUE_GLOB_MAX + 1 bytes", NULL);
	snprintf(spec, sizeof(spec), "f@arg1==%s", repeat(buf, '1', VALUE_SPEC_MAX - 7));
	refuse_filter(spec, "a spec of VALUE_SPEC_MAX + 1 bytes", NULL);

	const char *ops = "a value filter is GLOB@ARG OP VALUE with OP one of == != < <= > >=";
	snprintf(spec, sizeof(spec), "-F 'f@arg1': %s", ops);
	refuse_filter("f@arg1", "no operator", spec);
	snprintf(spec, sizeof(spec), "-F 'f@==3': %s", ops);
	refuse_filter("f@==3", "no name before the operator", spec);
	snprintf(spec, sizeof(spec), "-F 'f@arg1=3': %s", ops);
	refuse_filter("f@arg1=3", "a single =", spec);
	snprintf(spec, sizeof(spec), "-F 'f@arg1!3': %s", ops);
	refuse_filter("f@arg1!3", "a single !", spec);
	snprintf(spec, sizeof(spec), "-F 'f@arg1=>3': %s", ops);
	refuse_filter("f@arg1=>3", "=>", spec);

	refuse_filter("f@arg1>", "no value", "-F 'f@arg1>': '' is not a number");
	refuse_filter("f@arg1>abc", "a word", "-F 'f@arg1>abc': 'abc' is not a number");
	refuse_filter("f@arg1<>3", "<>", "-F 'f@arg1<>3': '>3' is not a number");
	refuse_filter("f@arg1===3", "===", "-F 'f@arg1===3': '=3' is not a number");
	refuse_filter("f@arg1>3x", "a number and more", "-F 'f@arg1>3x': '3x' is not a number");

	/* The name, as in -A. */
	refuse_filter("f@arg0>1", "arg0",
		      "-F 'f@arg0>1': 'arg0' is not argN (1-6 a register, 7-255 the stack), fparg1..fparg8, retval or a "
		      "parameter's name");
	refuse_filter("f@arg1/q>1", "a format that is none",
		      "-F 'f@arg1/q>1': '/q' is not a format (d u x c p f s S, with 8/16/32/64 bits: d32, x16, f32; i for d; "
		      "f80 or 80 a long double)");
	snprintf(spec, sizeof(spec), "f@%s==1", repeat(buf, 'k', VALUE_LABEL_MAX));
	char want[2600];
	snprintf(want, sizeof(want),
		 "-F '%s': '%s' is not argN (1-6 a register, 7-255 the stack), fparg1..fparg8, retval or a parameter's "
		 "name",
		 spec, buf);
	refuse_filter(spec, "a name of VALUE_LABEL_MAX bytes", want);
	snprintf(spec, sizeof(spec), "f@%s==1", repeat(buf, 'k', VALUE_LABEL_MAX + 8));
	snprintf(want, sizeof(want), "-F '%s': '%s' is too long a name", spec, buf);
	refuse_filter(spec, "a name of VALUE_LABEL_MAX + 8 bytes", want);
	refuse_filter("f@retval==0", "the return value",
		      "-F 'f@retval==0': the return value is known only when the call ends, after its calls were "
		      "recorded; filter on it in the views (needle replay --ret-ne)");
	refuse_filter("f@arg1/s==0", "a string",
		      "-F 'f@arg1/s==0': a filter compares numbers; a string format cannot be compared");
	/* As in -A: an xmm register is compared as a float. */
	refuse_filter("f@fparg1/d>1", "fparg1/d",
		      "-F 'f@fparg1/d>1': fparg1 is a floating-point register: format f (f32 or f64)");
}

/* A plan of these -A (ret 0) and -R (ret 1) specs, -F filters and
 * --auto-args, resolved against exe (and libs): its return. */
struct given {
	const char *spec;
	int ret; /* 0 -A, 1 -R, 2 -F */
};

static int resolve(struct arg_plan *p, const char *exe, const struct program_libs *libs, int auto_args,
		   const struct given *g, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->auto_args = auto_args;
	for (size_t i = 0; i < n; i++)
		if (g[i].ret == 2 ? arg_plan_add_filter(p, g[i].spec) : arg_plan_add_spec(p, g[i].spec, g[i].ret)) {
			printf("      could not add '%s': %s\n", g[i].spec, said);
			return -100;
		}
	said_cnt = 0;
	said[0] = 0;
	return arg_plan_resolve(p, exe, libs);
}

/* One spec resolved against exe: its args line (or filter line), and no
 * labels. */
static void resolves_to(const char *exe, const char *what, const char *spec, int ret, const char *line,
			const char *labels)
{
	struct arg_plan p;
	struct given g = { spec, ret };

	int r = resolve(&p, exe, NULL, 0, &g, 1);
	CHECK(r == 0 && !said_cnt, "%s: '%s' resolves", what, spec);
	if (said_cnt)
		printf("      said: %s\n", said);
	CHECK_STR(ret == 2 ? p.arg_filters : p.args, line, "%s: '%s' is the agent's '%s'", what, spec, line);
	CHECK_STR(p.arg_labels, labels, "%s: '%s' labels", what, spec);
	arg_plan_free(&p);
}

static void resolve_refuses(const char *exe, const char *what, const char *spec, int ret, const char *want)
{
	struct arg_plan p;
	struct given g = { spec, ret };

	int r = resolve(&p, exe, NULL, 0, &g, 1);
	CHECK(r == -1 && said_cnt == 1 && !strcmp(said, want), "%s: '%s' refused at resolve", what, spec);
	if (strcmp(said, want))
		printf("      said     '%s'\n      expected '%s'\n", said, want);
	arg_plan_free(&p);
}

#define NO_DWARF "/nonexistent/needle-no-such-program"

static void test_resolve_registers(void)
{
	const char *w = "no DWARF";
	struct arg_plan p = { 0 };

	/* Nothing asked: nothing read, nothing made. */
	CHECK(arg_plan_resolve(&p, NO_DWARF, NULL) == 0 && !p.args && !p.arg_filters && !p.arg_labels,
	      "an empty plan resolves to nothing");

	/* Without debug info: registers, their formats as given, 64 bits
	 * unless said (c: 8), d for an integer, f for fpargN, no scope. */
	resolves_to(NO_DWARF, w, "kv_get@arg1/u,arg2/x", 0, "kv_get\tA\t0:1:u:64:0,0:2:x:64:0", NULL);
	resolves_to(NO_DWARF, w, "kv_get@arg1,arg3/d16,arg4/c,arg5/s,arg6/p32", 0,
		    "kv_get\tA\t0:1:a:64:0~,0:3:d:16:0,0:4:c:8:0,0:5:s:64:0,0:6:p:32:0", NULL);
	resolves_to(NO_DWARF, w, "f@fparg2,fparg8/f32", 0, "f\tA\t1:2:f:64:0~,1:8:f:32:0", NULL);
	resolves_to(NO_DWARF, w, "f@arg7,arg255/f", 0, "f\tA\t0:7:a:64:0~,0:255:f:64:0", NULL);
	resolves_to(NO_DWARF, w, "kv_*@retval", 1, "kv_*\tR\t2:0:a:64:0~", NULL);
	/* A float return value is in xmm0 (kind 3). */
	resolves_to(NO_DWARF, w, "f@retval/f", 1, "f\tR\t3:0:f:64:0", NULL);
	resolves_to(NO_DWARF, w, "f@retval/f32,retval/x", 1, "f\tR\t3:0:f:32:0,2:0:x:64:0", NULL);
	resolves_to(NO_DWARF, w, "f@retval/s", 1, "f\tR\t2:0:s:64:0", NULL);
	resolves_to(NO_DWARF, w, "kv_get@arg2>1000", 2, "kv_get\t0:2:a:64:0\t>\t1000", NULL);
	resolves_to(NO_DWARF, w, "f@arg1/x32==0x10", 2, "f\t0:1:x:32:0\t==\t0x10", NULL);
	resolves_to(NO_DWARF, w, "f@arg1!=-1", 2, "f\t0:1:a:64:0\t!=\t-1", NULL);
	resolves_to(NO_DWARF, w, "f@arg1/u<=18446744073709551615", 2, "f\t0:1:u:64:0\t<=\t18446744073709551615", NULL);
	resolves_to(NO_DWARF, w, "f@fparg1>=2.5", 2, "f\t1:1:f:64:0\t>=\t2.5", NULL);
	resolves_to(NO_DWARF, w, "f@fparg1/f32<-1e3", 2, "f\t1:1:f:32:0\t<\t-1e3", NULL);

	/* What only DWARF could place, or a value for a register's format. */
	resolve_refuses(NO_DWARF, w, "kv_get@key", 0, "-A 'kv_get@key': naming a parameter ('key') needs debug info for kv_get");
	resolve_refuses(NO_DWARF, w, "kv_*@key", 0, "-A 'kv_*@key': a parameter's name needs one function, not a glob");
	resolve_refuses(NO_DWARF, w, "kv_get.constprop.0@key", 0,
			"-A 'kv_get.constprop.0@key': kv_get.constprop.0 is a compiler's clone of a function, which may "
			"take other parameters than its debug info lists: name values by register (argN, fpargN)");
	resolve_refuses(NO_DWARF, w, "f@arg2/f", 0,
			"-A 'f@arg2/f': arg2 is an integer register; a floating-point argument is fpargN");
	resolve_refuses(NO_DWARF, w, "f@key>3", 2, "-F 'f@key>3': naming a parameter ('key') needs debug info for f");
	resolve_refuses(NO_DWARF, w, "f@arg1>1.5", 2,
			"-F 'f@arg1>1.5': '1.5' is not an integer that fits 64 bits (decimal, 0x hex, or negative)");
	resolve_refuses(NO_DWARF, w, "f@arg1>18446744073709551616", 2,
			"-F 'f@arg1>18446744073709551616': '18446744073709551616' is not an integer that fits 64 bits "
			"(decimal, 0x hex, or negative)");
	resolve_refuses(NO_DWARF, w, "f@arg1>-9223372036854775809", 2,
			"-F 'f@arg1>-9223372036854775809': '-9223372036854775809' is not an integer that fits 64 bits "
			"(decimal, 0x hex, or negative)");
	resolve_refuses(NO_DWARF, w, "f@fparg1>1e400", 2, "-F 'f@fparg1>1e400': '1e400' is not a number");

	/* Several: the agent's lines in the order given; -F apart. */
	struct given g[] = {
		{ "b@arg2", 0 }, { "a@retval", 1 }, { "b@arg2", 0 }, { "a@arg1<0", 2 }, { "a@arg1>=10", 2 },
	};
	CHECK_EQ(resolve(&p, NO_DWARF, NULL, 0, g, 5), 0, "three specs and two filters resolve");
	CHECK_STR(p.args, "b\tA\t0:2:a:64:0~\na\tR\t2:0:a:64:0~\nb\tA\t0:2:a:64:0~", "... the specs' lines, in order");
	CHECK_STR(p.arg_filters, "a\t0:1:a:64:0\t<\t0\na\t0:1:a:64:0\t>=\t10", "... the filters', in order");
	CHECK_STR(p.value_globs, "a\na", "... the filters' globs traced");
	arg_plan_free(&p);
	/* The first refusal ends it. */
	struct given bad[] = { { "a@arg1", 0 }, { "a@key", 0 }, { "a@zz", 0 } };
	CHECK_EQ(resolve(&p, NO_DWARF, NULL, 0, bad, 3), -1, "a plan with a bad spec: refused");
	CHECK(said_cnt == 1 && strstr(said, "'a@key'"), "... the first bad one said, once: %s", said);
	arg_plan_free(&p);
}

static void test_resolve_dwarf(void)
{
	const char *x = FIXTURE_GCC_O0, *w = "DWARF";

	/* A function by its name: checked, typed from DWARF, for that
	 * function only ("main": the program's). */
	resolves_to(x, w, "f_ints@arg1", 0, "f_ints\tA\t0:1:d:32:0~\tmain", NULL);
	resolves_to(x, w, "f_ints@arg1,arg3,arg4,arg5,arg6", 0,
		    "f_ints\tA\t0:1:d:32:0~,0:3:u:16:0~,0:4:c:8:0~,0:5:b:8:0~,0:6:d:8:0~\tmain", NULL);
	/* A format without a size takes the type's; with one, its own. */
	resolves_to(x, w, "f_ints@arg1/x,arg2/u,arg3/x64", 0, "f_ints\tA\t0:1:x:32:0,0:2:u:64:0,0:3:x:64:0\tmain", NULL);
	/* uftrace's spellings: i for d, the bits alone. */
	resolves_to(x, w, "f_ints@arg1/i16,arg2/i,arg3/32", 0, "f_ints\tA\t0:1:d:16:0,0:2:d:64:0,0:3:d:32:0\tmain", NULL);
	/* By name: the same item, and the name for the views. */
	resolves_to(x, w, "f_ints@a,b", 0, "f_ints\tA\t0:1:d:32:0~,0:2:d:64:0~\tmain", "F\tf_ints\t0:1:0=a,0:2:0=b");
	resolves_to(x, w, "f_ints@a,arg2", 0, "f_ints\tA\t0:1:d:32:0~,0:2:d:64:0~\tmain", "F\tf_ints\t0:1:0=a,0:2:0=");
	resolves_to(x, w, "f_ints@a/x", 0, "f_ints\tA\t0:1:x:32:0\tmain", "F\tf_ints\t0:1:0=a");
	resolves_to(x, w, "f_ints@a/x16", 0, "f_ints\tA\t0:1:x:16:0\tmain", "F\tf_ints\t0:1:0=a");
	/* A field: its register and offset; the register whole is 64 bits. */
	resolves_to(x, w, "f_pt@p.y,k", 0, "f_pt\tA\t0:1:d:32:4~,0:2:d:32:0~\tmain", "F\tf_pt\t0:1:4=p.y,0:2:0=k");
	resolves_to(x, w, "f_pt@arg1", 0, "f_pt\tA\t0:1:a:64:0~\tmain", NULL);
	resolves_to(x, w, "f_big@b.b,j", 0, "f_big\tA\t0:8:d:64:0~,0:2:d:32:0~\tmain", "F\tf_big\t0:8:0=b.b,0:2:0=j");
	resolves_to(x, w, "f_fp@y,fparg3,arg1", 0, "f_fp\tA\t1:2:f:32:0~,1:3:f:64:0~,0:1:d:32:0~\tmain",
		    "F\tf_fp\t1:2:0=y,1:3:0=,0:1:0=");
	/* A stack word holding a double may be read as one. */
	resolves_to(x, w, "f_nine@arg7/f", 0, "f_nine\tA\t0:7:f:64:0\tmain", NULL);
	resolves_to(x, w, "f_str@s,arg3/s", 0, "f_str\tA\t0:1:s:64:0~,0:3:s:64:0\tmain", "F\tf_str\t0:1:0=s,0:3:0=");
	/* A variadic function's registers past its parameters. */
	resolves_to(x, w, "f_var@arg5,fparg1", 0, "f_var\tA\t0:5:a:64:0~,1:1:f:64:0~\tmain", NULL);
	/* An enum by name: its enumerators go with the labels (none when
	 * a format is given: a number then). */
	resolves_to(x, w, "f_enum@m", 0, "f_enum\tA\t0:1:e:32:0~\tmain", "F\tf_enum\t0:1:0=m#0\nE\t0\t1=M_READ,2=M_WRITE,3=M_BOTH");
	resolves_to(x, w, "f_enum@m/d", 0, "f_enum\tA\t0:1:d:32:0\tmain", "F\tf_enum\t0:1:0=m");
	resolves_to(x, w, "f_str@retval/s", 1, "f_str\tR\t2:0:s:64:0\tmain", NULL);
	resolves_to(x, w, "f_fp@retval", 1, "f_fp\tR\t3:0:f:64:0~\tmain", NULL);
	resolves_to(x, w, "f_bool@retval", 1, "f_bool\tR\t2:0:b:8:0~\tmain", NULL);
	/* A glob is taken as given, without checks. */
	resolves_to(x, w, "f_*@arg1", 0, "f_*\tA\t0:1:a:64:0~", NULL);
	/* Filters: the type from DWARF, no scope. */
	resolves_to(x, w, "f_ints@b>5", 2, "f_ints\t0:2:d:64:0\t>\t5", NULL);
	resolves_to(x, w, "f_ints@c==7", 2, "f_ints\t0:3:u:16:0\t==\t7", NULL);
	resolves_to(x, w, "f_fp@y<0.5", 2, "f_fp\t1:2:f:32:0\t<\t0.5", NULL);
	resolves_to(x, w, "f_pt@p.y!=-2", 2, "f_pt\t0:1:d:32:4\t!=\t-2", NULL);

	/* What the DWARF refutes. */
	resolve_refuses(x, w, "f_pt@arg3", 0, "-A 'f_pt@arg3': f_pt has no arg3 (per its debug info)");
	resolve_refuses(x, w, "f_stack@arg9", 0,
			"-A 'f_stack@arg9': f_stack has no arg9 (per its debug info, no parameter in that stack word)");
	resolve_refuses(x, w, "f_fp@fparg4", 0, "-A 'f_fp@fparg4': f_fp has no fparg4 (per its debug info)");
	resolve_refuses(x, w, "f_fp@zz", 0,
			"-A 'f_fp@zz': f_fp has no parameter 'zz' whose value is known at its entry (per its debug info)");
	resolve_refuses(x, w, "f_pt@p", 0,
			"-A 'f_pt@p': f_pt has no parameter 'p' whose value is known at its entry (per its debug info)");
	resolve_refuses(x, w, "f_ints@arg1/s", 0,
			"-A 'f_ints@arg1/s': arg1 of f_ints ('a') is an integer, not a pointer: it cannot be read as a "
			"string");
	resolve_refuses(x, w, "f_fp@arg1/s", 0,
			"-A 'f_fp@arg1/s': arg1 of f_fp ('i') is an integer, not a pointer: it cannot be read as a string");
	resolve_refuses(x, w, "f_ints@a/s", 0, "-A 'f_ints@a/s': 'a' of f_ints is not a pointer: it cannot be read as a string");
	resolve_refuses(x, w, "f_stack@arg7/f", 0,
			"-A 'f_stack@arg7/f': arg7 of f_stack ('a7') is an integer, not a floating-point value");
	resolve_refuses(x, w, "f_pt@p.y/d64", 0,
			"-A 'f_pt@p.y/d64': 'p.y' of f_pt is 4 bytes into its register: at most 32 bits fit");
	resolve_refuses(x, w, "f_void@retval", 1, "-R 'f_void@retval': f_void returns nothing (void, per its debug info)");
	resolve_refuses(x, w, "f_mkpt@retval", 1,
			"-R 'f_mkpt@retval': f_mkpt returns a struct, a long double or a value in memory, not one "
			"register: --auto-args shows the fields of one returned in registers");
	/* A struct returned in memory: rax holds its address at the return. */
	resolves_to(x, w, "f_ret_big@retval/p", 1, "f_ret_big\tR\t2:0:p:64:0\tmain", NULL);
	/* A long double comes back in the x87 st0 (kind 6), its 80 bits. */
	resolves_to(x, w, "f_ldbl@retval/f", 1, "f_ldbl\tR\t6:0:f:80:0\tmain", NULL);
	resolves_to(x, w, "f_ldbl@retval", 1, "f_ldbl\tR\t6:0:f:80:0~\tmain", NULL);
	resolve_refuses(x, w, "f_ints@retval/s", 1,
			"-R 'f_ints@retval/s': f_ints does not return a pointer: it cannot be read as a string");
	resolve_refuses(x, w, "f_msabi@a", 0,
			"-A 'f_msabi@a': the debug info of f_msabi places its parameters where the x86-64 ABI does not "
			"(an optimized or other calling convention): name values by register (argN, fpargN)");
	resolve_refuses(x, w, "f_str@s==0", 2, "-F 'f_str@s==0': a filter compares numbers; 's' is a string");
	resolve_refuses(x, w, "f_ints@a>1.5", 2,
			"-F 'f_ints@a>1.5': '1.5' is not an integer that fits 64 bits (decimal, 0x hex, or negative)");
	resolve_refuses(x, w, "f_ints@zz>1", 2,
			"-F 'f_ints@zz>1': f_ints has no parameter 'zz' whose value is known at its entry (per its debug "
			"info)");
	/* Two static f_dup that disagree: no DWARF for that name. */
	resolve_refuses(x, w, "f_dup@a", 0, "-A 'f_dup@a': naming a parameter ('a') needs debug info for f_dup");
}

/* The program has no DWARF, a library it loads has: a function of the
 * library's, at its place in that file ("=DEV:INO@OFFSET"). */
static void test_resolve_library(void)
{
	struct dw_info dw;
	char err[4352], line[256], want[256];

	CHECK_EQ(dw_info_load(FIXTURE_GCC_O0, &dw, err, sizeof(err)), 0, "(the fixture's DWARF)");
	const struct dw_func *f = dw_info_find(&dw, "f_enum");
	unsigned long long off = f ? (unsigned long long)f->file_off : 0;
	dw_info_free(&dw);

	struct program_lib lib = { .path = "libfixture.so", .file = FIXTURE_GCC_O0, .dev = 2049, .ino = 77 };
	struct program_libs libs = { .v = &lib, .cnt = 1 };
	struct arg_plan p;
	struct given g[] = { { "f_enum@m,on", 0 }, { "f_enum@on==1", 2 } };
	CHECK_EQ(resolve(&p, FIXTURE_NODEBUG, &libs, 0, g, 2), 0, "a library's function resolves by its DWARF");
	snprintf(want, sizeof(want), "f_enum\tA\t0:1:e:32:0~,0:2:b:8:0~\t=2049:77@%llu", off);
	CHECK_STR(p.args, want, "... for that file's function at its offset");
	/* A library's enumerators are not carried: the enum is a number. */
	snprintf(line, sizeof(line), "F\tf_enum\t0:1:0=m,0:2:0=on");
	CHECK_STR(p.arg_labels, line, "... named, its enum without enumerators");
	CHECK_STR(p.arg_filters, "f_enum\t0:2:b:8:0\t==\t1", "... the filter typed by it");
	arg_plan_free(&p);
}

/* --auto-args: every function DWARF describes, at its offset; -A / -R
 * replace its side. */
static void test_auto_args(void)
{
	struct dw_info dw;
	char err[4352], want[512];
	struct arg_plan p;

	CHECK_EQ(dw_info_load(FIXTURE_GCC_O0, &dw, err, sizeof(err)), 0, "(the fixture's DWARF)");
	struct given g[] = { { "f_ints@arg1/x", 0 } };
	CHECK_EQ(resolve(&p, FIXTURE_GCC_O0, NULL, 1, g, 1), 0, "--auto-args with an -A resolves");
	size_t lines = 0;
	for (const char *s = p.args; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : "")
		lines++;
	/* The -A line, then a line per side of each function with values:
	 * main (R), f_void (none), f_msabi and f_dup (none: a mismatch,
	 * ambiguous), f_same (once), f_ret_big and f_ldbl (A and R: the
	 * address of the struct returned in memory, the long double from
	 * st0), f_ints
	 * (R: its A is the -A's). */
	size_t fns = 0, sides = 0;
	for (size_t i = 0; i < dw.cnt; i++) {
		const struct dw_func *f = &dw.funcs[i];
		if (f->ambiguous || (i && !strcmp(f->sym, dw.funcs[i - 1].sym)))
			continue;
		fns++;
		sides += (f->entry_cnt > 0) + (f->exit_cnt > 0);
	}
	CHECK_EQ(fns, 33, "(33 functions of distinct names, not ambiguous)");
	CHECK_EQ(sides, 61, "(61 sides with values among them)");
	CHECK_EQ(lines, 1 + 61 - 1, "one line per side with values, the -A's replacing f_ints's");

	const struct dw_func *f = dw_info_find(&dw, "f_ints");
	unsigned long long off = f ? (unsigned long long)f->file_off : 0;
	snprintf(want, sizeof(want), "f_ints\tA\t0:1:x:32:0\tmain\n");
	CHECK(p.args && !strncmp(p.args, want, strlen(want)), "the -A line first");
	snprintf(want, sizeof(want), "\nf_ints\tR\t2:0:d:32:0~\tmain@%llu\n", off);
	CHECK(p.args && strstr(p.args, want), "f_ints's return value by --auto-args, at its offset %llu", off);
	CHECK(p.args && !strstr(p.args, "\nf_ints\tA\t"), "... not its arguments: the -A's");
	f = dw_info_find(&dw, "f_pt");
	snprintf(want, sizeof(want), "\nf_pt\tA\t0:1:d:32:0~,0:1:d:32:4~,0:2:d:32:0~\tmain@%llu\n",
		 f ? (unsigned long long)f->file_off : 0);
	CHECK(p.args && strstr(p.args, want), "f_pt's arguments, fields and all");
	f = dw_info_find(&dw, "f_enum");
	snprintf(want, sizeof(want), "\nf_enum\tA\t0:1:e:32:0~,0:2:b:8:0~\tmain@%llu\n",
		 f ? (unsigned long long)f->file_off : 0);
	CHECK(p.args && strstr(p.args, want), "f_enum's arguments");
	CHECK(p.args && !strstr(p.args, "f_dup") && !strstr(p.args, "f_msabi") && !strstr(p.args, "f_void"),
	      "nothing for f_dup (ambiguous), f_msabi (a mismatch), f_void (nothing)");
	const char *same = p.args ? strstr(p.args, "\nf_same\tA\t") : NULL;
	CHECK(same && !strstr(same + 1, "\nf_same\tA\t"), "f_same once");

	/* The labels: names by register, "..." after a variadic or cut
	 * list, the enum's enumerators. */
	CHECK(p.arg_labels && strstr(p.arg_labels, "F\tf_pt\t0:1:0=p.x,0:1:4=p.y,0:2:0=k\t{p=pt}\n"), "f_pt's labels");
	CHECK(p.arg_labels && strstr(p.arg_labels, "F\tf_mkpt\t2:0:0=x,2:0:4=y\t{=pt}\n"), "f_mkpt's return value's fields");
	CHECK(p.arg_labels && strstr(p.arg_labels, "F\tf_empty\t0:1:0=a,0:2:0=b\t{e=empty{}>b}\n"),
	      "f_empty's labels: the empty struct shown before b");
	CHECK(p.arg_labels && strstr(p.arg_labels, "F\tf_packed\t0:7:0=p.m,0:8:1=p.k,0:1:0=k\t{p=pk~}\n"),
	      "f_packed's labels: the packed struct partial, no \"...\"");
	CHECK(p.arg_labels && strstr(p.arg_labels, "F\tf_var\t0:1:0=n\t...\n"), "f_var's labels end with ...");
	CHECK(p.arg_labels && strstr(p.arg_labels, "0:16:0=a16\t...\n"), "f_many's 16 labels end with ...");
	CHECK(p.arg_labels && strstr(p.arg_labels, "F\tf_enum\t0:1:0=m#0,0:2:0=on\n"), "f_enum's labels, m an enum");
	CHECK(p.arg_labels && strstr(p.arg_labels, "\nE\t0\t1=M_READ,2=M_WRITE,3=M_BOTH"), "the enum's enumerators");
	arg_plan_free(&p);
	dw_info_free(&dw);

	/* Without DWARF anywhere: refused, saying why. */
	CHECK_EQ(resolve(&p, FIXTURE_NODEBUG, NULL, 1, NULL, 0), -1, "--auto-args without debug info: refused");
	snprintf(want, sizeof(want),
		 "--auto-args: %s has no debug info (DWARF), nor a debug file under /usr/lib/debug, nor do the "
		 "libraries it loads; build it with -g, install its -dbgsym package, or name values with -A/-R",
		 FIXTURE_NODEBUG);
	CHECK_STR(said, want, "... with one line");
	arg_plan_free(&p);
}

int main(void)
{
	test_add_spec();
	test_add_filter();
	test_resolve_registers();
	test_resolve_dwarf();
	test_resolve_library();
	test_auto_args();
	return harness_exit();
}
