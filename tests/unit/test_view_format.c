/* test_view_format - what the views print, exactly (src/cli/view/
 * view_format.c, src/cli/util/cli_util.c): durations at each unit's edges
 * (0, 999 ns, 1 us, 999.999 us, 1 ms, the rounding up to the next unit,
 * seconds, UINT64_MAX) and the 10 characters the DURATION column has
 * for them; the durations -t takes (forms, rounding, refusals); decimal
 * integers; the replay line's prefix; an event's values as README's
 * "Arguments and return values" and "Reading the output" show them
 * (signed and unsigned at their widths, hex, chars, floats in the
 * fewest %g digits, 6 at least, that read back as the same value, bools,
 * enums by enumerator, strings quoted and escaped, NULL, a bad pointer,
 * a cut string, names from the ARGS section or by register, struct
 * return values, "..." for a variadic function and for what does not
 * fit a line); the integers --ret-eq takes and how a return value
 * compares with one. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/view/view_format.h"
#include "common/shm_layout.h"
#include "common/value_spec.h"
#include "harness.h"

#define CHECK_STR(got, want, ...)                                                    \
	do {                                                                         \
		CHECK(!strcmp(got, want), __VA_ARGS__);                              \
		if (strcmp(got, want))                                               \
			printf("      got      '%s'\n      expected '%s'\n", got, want); \
	} while (0)

static void duration(uint64_t ns, const char *want)
{
	char buf[32];

	memset(buf, 'Z', sizeof(buf));
	cli_format_duration(buf, sizeof(buf), ns);
	CHECK_STR(buf, want, "%llu ns is '%s'", (unsigned long long)ns, want);
}

static void test_durations(void)
{
	/* README: "  0.040 us", " 19.563 us", " 24.131 us". */
	duration(0, "  0.000 us");
	duration(1, "  0.001 us");
	duration(40, "  0.040 us");
	duration(999, "  0.999 us");
	duration(1000, "  1.000 us");
	duration(1001, "  1.001 us");
	duration(19563, " 19.563 us");
	duration(24131, " 24.131 us");
	duration(100000, "100.000 us");
	duration(999999, "999.999 us");
	duration(1000000, "  1.000 ms");
	duration(1000499, "  1.000 ms");
	duration(1000501, "  1.001 ms"); /* %7.3f rounds */
	duration(1234567, "  1.235 ms");
	duration(999999499, "999.999 ms");
	/* Rounded to the next unit: seconds, not "1000.000 ms". */
	duration(999999500, "  1.000  s");
	duration(999999999, "  1.000  s");
	duration(1000000000, "  1.000  s");
	duration(1500000000, "  1.500  s");
	duration(59999000000ull, " 59.999  s");
	duration(60000000000ull, " 60.000  s");
	duration(999999000000ull, "999.999  s");
	/* No unit past seconds: wider than the column from 1000 s on. */
	duration(1000000000000ull, "1000.000  s");
	duration(UINT64_MAX, "18446744073.710  s");

	/* Every duration below 1000 s fills the column's 10 characters. */
	static const uint64_t edges[] = { 0, 9, 99, 999, 9999, 99999, 999999, 9999999, 99999999, 999999499,
					  999999500, 999999999, 9999999999ull, 99999999999ull, 999999499999ull };
	int all10 = 1;
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		char buf[32];
		cli_format_duration(buf, sizeof(buf), edges[i]);
		if (strlen(buf) != 10) {
			printf("      %llu ns: '%s'\n", (unsigned long long)edges[i], buf);
			all10 = 0;
		}
	}
	CHECK(all10, "durations at every edge below 1000 s are 10 characters");

	/* The least room it takes: 11 bytes, the NUL included. */
	char small[11];
	memset(small, 'Z', sizeof(small));
	cli_format_duration(small, sizeof(small), 123456);
	CHECK(!memcmp(small, "123.456 us", 11), "in 11 bytes: '123.456 us' and its NUL");
	memset(small, 'Z', sizeof(small));
	cli_format_duration(small, 10, 123456);
	CHECK(small[0] == 0 && small[1] == 'Z', "in 10 bytes: nothing, not part of a number");
	small[0] = 'Z';
	cli_format_duration(small, 0, 123456);
	CHECK(small[0] == 'Z', "in 0 bytes: nothing written");
}

static void parses(const char *s, uint64_t want)
{
	uint64_t ns = 12345;
	int r = cli_parse_duration(s, &ns);
	CHECK(r == 0 && ns == want, "'%s' is %llu ns", s, (unsigned long long)want);
	if (r || ns != want)
		printf("      got %d, %llu\n", r, (unsigned long long)ns);
}

static void refuses(const char *s, const char *why)
{
	uint64_t ns = 12345;
	int r = cli_parse_duration(s, &ns);
	CHECK(r == -1 && ns == 12345, "'%s' refused (%s), nothing stored", s, why);
}

static void test_parse_duration(void)
{
	/* README: "-t TIME ... e.g. 10us". */
	parses("10us", 10000);
	parses("100", 100);
	parses("100ns", 100);
	parses("1.5ms", 1500000);
	parses("2s", 2000000000);
	parses("0", 0);
	parses("0s", 0);
	parses("0.25us", 250);
	parses("1.0005us", 1001); /* to the nearest ns */
	parses("0.4", 0);
	parses("1e3", 1000);
	parses("1e10s", 10000000000000000000ull);
	/* The largest double below 2^64. */
	parses("18446744073709549568", 18446744073709549568ull);

	refuses("", "empty");
	refuses("us", "no number");
	refuses("-1", "negative");
	refuses("-1us", "negative");
	refuses("10 us", "a space before the unit");
	refuses("10us ", "a space after");
	refuses("10m", "minutes are not a unit");
	refuses("10min", "nor min");
	refuses("10sec", "nor sec");
	refuses("10uss", "a unit and more");
	refuses("10US", "units are lower case");
	refuses("abc", "a word");
	/* What a uint64_t cannot hold is refused, not converted (undefined
	 * for a double out of its range). */
	refuses("18446744073709551616", "2^64 ns");
	refuses("18446744073709551615", "UINT64_MAX: 2^64 as a double");
	refuses("1e11s", "10^20 ns");
	refuses("1e400", "beyond a double");
	refuses("inf", "infinity");
	refuses("infs", "infinity, in seconds");
	refuses("nan", "not a number");
	refuses("nanms", "not a number, in ms");
}

static void test_format_u64(void)
{
	static const struct {
		uint64_t v;
		const char *s;
	} cases[] = { { 0, "0" }, { 7, "7" }, { 9, "9" }, { 10, "10" }, { 1000000, "1000000" },
		      { UINT32_MAX, "4294967295" }, { 10000000000000000000ull, "10000000000000000000" },
		      { UINT64_MAX, "18446744073709551615" } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[24];
		memset(buf, 'Z', sizeof(buf));
		int n = cli_format_u64(buf, cases[i].v);
		size_t len = strlen(cases[i].s);
		CHECK(n == (int)len && !memcmp(buf, cases[i].s, len) && buf[len] == 'Z',
		      "%s: its %zu digits, nothing after them", cases[i].s, len);
	}
}

static void prefix(const char *dur, uint32_t tid, const char *want)
{
	char buf[64];

	memset(buf, 'Z', sizeof(buf));
	int n = view_format_prefix(buf, dur, tid);
	CHECK(n == (int)strlen(want) && !memcmp(buf, want, strlen(want)) && buf[n] == 'Z',
	      "prefix of '%s' and %u is '%s'", dur, tid, want);
	if (n >= 0 && n < (int)sizeof(buf))
		buf[n] = 0;
	if (n != (int)strlen(want) || strcmp(buf, want))
		printf("      got '%s' (%d)\n", buf, n);
}

static void test_prefix(void)
{
	/* README: "  0.040 us [ 54215] |   kv_hash(...)", "           [ 54215] | kv_put(...) {",
	 * " [123977] |". */
	prefix("  0.040 us", 54215, "  0.040 us [ 54215] | ");
	prefix("", 54215, "           [ 54215] | ");
	prefix("  0.540 us", 123977, "  0.540 us [123977] | ");
	prefix("1 us", 1, "      1 us [     1] | ");
	prefix("  1.000  s", 0, "  1.000  s [     0] | ");
	prefix("1000.000  s", 4294967295u, "1000.000  s [4294967295] | ");
	/* A duration is cut at 32 characters: 48 bytes at most. */
	prefix("0123456789012345678901234567890123456789", 4294967295u,
	       "01234567890123456789012345678901 [4294967295] | ");
}

/* A data block as needle record writes it (docs/file-format.md, data
 * blocks): an item word, then its value bytes. */
struct block {
	uint8_t b[2048];
	size_t n;
};

static void item(struct block *bl, unsigned kind, unsigned index, unsigned fmt, unsigned bits, unsigned shift,
		 const void *val, size_t len)
{
	uint64_t w = arg_item_word(kind, index, fmt, bits, (uint32_t)len, shift);
	memcpy(bl->b + bl->n, &w, 8);
	memcpy(bl->b + bl->n + 8, val, len);
	bl->n += 8 + len;
}

static void word(struct block *bl, unsigned kind, unsigned index, unsigned fmt, unsigned bits, unsigned shift,
		 uint64_t v)
{
	item(bl, kind, index, fmt, bits, shift, &v, 8);
}

/* A string's bytes, NUL-padded to whole words with room for a NUL (as
 * the agent writes them); bits 0 read whole, 3 cut. */
static void string(struct block *bl, unsigned index, unsigned bits, const char *s, size_t len)
{
	uint8_t v[512] = { 0 };
	memcpy(v, s, len);
	item(bl, ARG_KIND_INT, index, 's', bits, 0, v, (len / 8 + 1) * 8);
}

static uint64_t f64(double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	return v;
}

static uint64_t f32(float f)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	return v;
}

static struct trace names; /* a trace with sites and an ARGS section, no file */
static struct trace_site sites[8];

/* The values of a block, as replay shows them after the function's name
 * (entry) or after " = " (exit). */
static void values(struct trace *t, uint32_t site, int exit, const struct block *bl, const char *want, const char *why)
{
	char buf[512];
	struct trace_event ev = { .kind = exit ? TEV_EXIT : TEV_ENTRY, .site = site, .data = bl->b,
				  .data_len = (uint16_t)bl->n };

	memset(buf, 'Z', sizeof(buf));
	size_t n = view_format_values(buf, sizeof(buf), t, &ev);
	CHECK(n == strlen(buf) && !strcmp(buf, want), "%s: %s", why, want);
	if (n != strlen(buf) || strcmp(buf, want))
		printf("      got      '%s' (%zu)\n      expected '%s'\n", buf, n, want);
}

/* The same in uftrace's form (replay's default). */
static void uvalues(struct trace *t, uint32_t site, int exit, const struct block *bl, const char *want, const char *why)
{
	char buf[512];
	struct trace_event ev = { .kind = exit ? TEV_EXIT : TEV_ENTRY, .site = site, .data = bl->b,
				  .data_len = (uint16_t)bl->n };

	size_t n = view_format_values_style(buf, sizeof(buf), t, &ev, VIEW_VALUES_UFTRACE);
	CHECK(n == strlen(buf) && !strcmp(buf, want), "%s (uftrace's form): %s", why, want);
	if (n != strlen(buf) || strcmp(buf, want))
		printf("      got      '%s' (%zu)\n      expected '%s'\n", buf, n, want);
}

/* One value alone, by register: its text. */
static void one(unsigned kind, unsigned fmt, unsigned bits, uint64_t v, const char *want)
{
	struct block bl = { .n = 0 };
	char w[128];

	word(&bl, kind, 1, fmt, bits, 0, v);
	snprintf(w, sizeof(w), "%s1=%s", kind == ARG_KIND_FP ? "fparg" : "arg", want);
	values(NULL, 0, 0, &bl, w, "one value");
}

static void test_values(void)
{
	struct block bl = { .n = 0 };

	/* README: kv_get(arg1=42, arg2=7, arg3=-5, arg4='q'). */
	word(&bl, ARG_KIND_INT, 1, 'd', 64, 0, 42);
	word(&bl, ARG_KIND_INT, 2, 'u', 64, 0, 7);
	word(&bl, ARG_KIND_INT, 3, 'd', 32, 0, 0xfffffffbu);
	word(&bl, ARG_KIND_INT, 4, 'c', 8, 0, 'q');
	values(NULL, 0, 0, &bl, "arg1=42, arg2=7, arg3=-5, arg4='q'", "by register, README's kv_get");
	/* README: scale(fparg1=2.5, fparg2=4) = 10. */
	bl.n = 0;
	word(&bl, ARG_KIND_FP, 1, 'f', 64, 0, f64(2.5));
	word(&bl, ARG_KIND_FP, 2, 'f', 64, 0, f64(4));
	values(NULL, 0, 0, &bl, "fparg1=2.5, fparg2=4", "README's scale");
	bl.n = 0;
	word(&bl, ARG_KIND_RET_FP, 0, 'f', 64, 0, f64(10));
	values(NULL, 0, 1, &bl, "10", "README's scale's return value");
	/* No block, or a block of the other side: nothing. */
	bl.n = 0;
	values(NULL, 0, 0, &bl, "", "an empty block");
	word(&bl, ARG_KIND_RET, 0, 'd', 64, 0, 5);
	values(NULL, 0, 0, &bl, "", "an entry with only a return value");
	values(NULL, 0, 1, &bl, "5", "... which its exit shows");

	/* Signed at its width; unsigned whole; stack words are argN. */
	one(ARG_KIND_INT, 'd', 8, 0x80, "-128");
	one(ARG_KIND_INT, 'd', 8, 0x7f, "127");
	one(ARG_KIND_INT, 'd', 16, 0x8000, "-32768");
	one(ARG_KIND_INT, 'd', 32, 0x7fffffff, "2147483647");
	one(ARG_KIND_INT, 'd', 64, 0x8000000000000000ull, "-9223372036854775808");
	one(ARG_KIND_INT, 'd', 0, UINT64_MAX, "-1"); /* 0 bits: 64 */
	one(ARG_KIND_INT, 'u', 64, UINT64_MAX, "18446744073709551615");
	one(ARG_KIND_INT, 'u', 8, 0xff, "255");
	one(ARG_KIND_INT, 'x', 64, 0xdeadbeef, "0xdeadbeef");
	one(ARG_KIND_INT, 'x', 32, 0, "0x0");
	one(ARG_KIND_INT, 'p', 64, 0x55ea31188fc0ull, "0x55ea31188fc0");
	one(ARG_KIND_INT, 'p', 64, 0, "0x0");
	/* A char: printable as itself, the quote, the backslash and the
	 * comma (which would read as a separator) and the rest in hex. */
	one(ARG_KIND_INT, 'c', 8, ' ', "' '");
	one(ARG_KIND_INT, 'c', 8, '~', "'~'");
	one(ARG_KIND_INT, 'c', 8, '\'', "'\\x27'");
	one(ARG_KIND_INT, 'c', 8, '\\', "'\\x5c'");
	one(ARG_KIND_INT, 'c', 8, ',', "'\\x2c'");
	one(ARG_KIND_INT, 'c', 8, '\n', "'\\x0a'");
	one(ARG_KIND_INT, 'c', 8, 0x7f, "'\\x7f'");
	one(ARG_KIND_INT, 'c', 8, 0xe9, "'\\xe9'");
	/* Floats: the shortest text that reads back as the same value. */
	one(ARG_KIND_FP, 'f', 64, f64(0.1), "0.1");
	one(ARG_KIND_FP, 'f', 64, f64(1.0 / 3), "0.3333333333333333");
	one(ARG_KIND_FP, 'f', 64, f64(0.1 + 0.2), "0.30000000000000004");
	one(ARG_KIND_FP, 'f', 64, f64(-0.0), "-0");
	one(ARG_KIND_FP, 'f', 64, f64(1e100), "1e+100");
	one(ARG_KIND_FP, 'f', 64, f64(123456789), "123456789");
	one(ARG_KIND_FP, 'f', 64, f64(5e-324), "4.94066e-324"); /* %g's 6 digits at least */
	one(ARG_KIND_FP, 'f', 64, f64(INFINITY), "inf");
	one(ARG_KIND_FP, 'f', 64, 0x7ff8000000000000ull, "nan");
	one(ARG_KIND_FP, 'f', 32, f32(0.1f), "0.1");
	one(ARG_KIND_FP, 'f', 32, f32(1.0f / 3), "0.33333334");
	one(ARG_KIND_FP, 'f', 32, f32(16777216.0f), "16777216");
	one(ARG_KIND_FP, 'f', 32, f32(2.5f) | 0xffffffff00000000ull, "2.5"); /* the register's upper half ignored */
	/* bool: true, false, another byte as a number; an enum without names:
	 * a signed number. */
	one(ARG_KIND_INT, 'b', 8, 1, "true");
	one(ARG_KIND_INT, 'b', 8, 0, "false");
	one(ARG_KIND_INT, 'b', 8, 2, "2");
	one(ARG_KIND_INT, 'e', 32, 0xffffffff, "-1");
	one(ARG_KIND_INT, 'e', 32, 3, "3");

	/* Strings: quoted, escaped as C writes them. */
	bl.n = 0;
	string(&bl, 1, 0, "w0-k460-op2", 11);
	values(NULL, 0, 0, &bl, "arg1=\"w0-k460-op2\"", "a string");
	bl.n = 0;
	string(&bl, 1, 0, "", 0);
	values(NULL, 0, 0, &bl, "arg1=\"\"", "an empty string");
	bl.n = 0;
	string(&bl, 1, 0, "a\"b\\c\nd\te\x01\x7f\xc3\xa9", 13);
	values(NULL, 0, 0, &bl, "arg1=\"a\\\"b\\\\c\\nd\\x09e\\x01\\x7f\\xc3\\xa9\"", "a string's escapes");
	bl.n = 0;
	string(&bl, 1, 0, "12345678", 8);
	values(NULL, 0, 0, &bl, "arg1=\"12345678\"", "a string of a whole word (and its NUL word)");
	/* README: '"..."... when cut there'; NULL; (bad ptr 0x...). */
	bl.n = 0;
	string(&bl, 1, 3, "abcdefgh", 8);
	values(NULL, 0, 0, &bl, "arg1=\"abcdefgh\"...", "a string cut at --max-string");
	{
		/* uftrace's form: as many characters as were kept, the last
		 * three of them "...", inside the quotes. */
		char ubuf[64];
		struct trace_event uev = { .kind = TEV_ENTRY, .data = bl.b, .data_len = (uint16_t)bl.n };
		view_format_values_style(ubuf, sizeof(ubuf), NULL, &uev, VIEW_VALUES_UFTRACE);
		CHECK(!strcmp(ubuf, "\"abcde...\""), "a cut string as uftrace shows it: \"abcde...\" (got %s)", ubuf);
		bl.n = 0;
		string(&bl, 1, 0, "abcdefgh", 8);
		uev.data_len = (uint16_t)bl.n;
		view_format_values_style(ubuf, sizeof(ubuf), NULL, &uev, VIEW_VALUES_UFTRACE);
		CHECK(!strcmp(ubuf, "\"abcdefgh\""), "a whole string as uftrace shows it (got %s)", ubuf);
	}
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 's', 1, 0, 0);
	word(&bl, ARG_KIND_INT, 2, 's', 2, 0, 0x1234);
	values(NULL, 0, 0, &bl, "arg1=NULL, arg2=(bad ptr 0x1234)", "NULL and an unreadable pointer");
	uvalues(NULL, 0, 0, &bl, "\"NULL\", \"<0x1234>\"", "NULL and an unreadable pointer, as uftrace shows them");
	/* A string of --max-string's ceiling escaped four bytes a byte: more
	 * than a value's room, cut, and said so. */
	char bin[VALUE_STRING_MAX];
	memset(bin, 1, sizeof(bin));
	bl.n = 0;
	string(&bl, 1, 0, bin, sizeof(bin));
	char buf[512];
	struct trace_event ev = { .kind = TEV_ENTRY, .data = bl.b, .data_len = (uint16_t)bl.n };
	size_t at = 0;
	char name[64], val[320];
	CHECK(view_value_next(NULL, &ev, &at, name, sizeof(name), val, sizeof(val)) == 1, "a long escaped string");
	size_t vl = strlen(val);
	CHECK(vl > 8 && vl < sizeof(val) && !strcmp(val + vl - 4, "\"...") && !strncmp(val, "\"\\x01\\x01", 9),
	      "... cut to its room, \"...\" at its end: %.12s...%s (%zu)", val, vl > 6 ? val + vl - 6 : "", vl);
	/* ... and in a replay line. */
	memset(buf, 0, sizeof(buf));
	size_t n = view_format_values(buf, sizeof(buf), NULL, &ev);
	CHECK(n > 8 && !strncmp(buf, "arg1=\"\\x01", 10) && !strcmp(buf + n - 4, "\"..."),
	      "... in a replay line: arg1=\"\\x01...\"... (%zu)", n);
	/* In any room from 12 bytes: cut, and said so. */
	for (size_t len = 12; len < 48; len++) {
		at = 0;
		memset(val, 'Z', sizeof(val));
		view_value_next(NULL, &ev, &at, name, sizeof(name), val, len);
		vl = strlen(val);
		if (vl >= len || strcmp(val + vl - 4, "\"...")) {
			CHECK(0, "in %zu bytes: '%s' (%zu) does not end with \"...\"", len, val, vl);
			break;
		}
		if (len == 47)
			CHECK(1, "in 12 to 47 bytes, a cut string fits and ends with \"...\"");
	}

	/* More values than a replay line's 512 bytes hold: those that fit,
	 * whole, then "..." (never a part of one, which would read as
	 * another value: "arg11=-9"). */
	char many[600], exp[600];
	memset(bin, 'a', 250);
	bl.n = 0;
	string(&bl, 1, 0, bin, 250);
	for (unsigned i = 2; i <= 16; i++)
		word(&bl, ARG_KIND_INT, i, 'd', 64, 0, 0x8000000000000000ull);
	ev.data_len = (uint16_t)bl.n;
	size_t off = (size_t)snprintf(exp, sizeof(exp), "arg1=\"%.250s\"", bin);
	for (unsigned i = 2; i <= 10; i++)
		off += (size_t)snprintf(exp + off, sizeof(exp) - off, ", arg%u=-9223372036854775808", i);
	snprintf(exp + off, sizeof(exp) - off, ", ...");
	memset(many, 'Z', sizeof(many));
	n = view_format_values(many, 512, NULL, &ev);
	CHECK(n == strlen(many) && !strcmp(many, exp), "16 values in 512 bytes: arg1 to arg10 whole, then ...");
	if (n != strlen(many) || strcmp(many, exp))
		printf("      got      '%s' (%zu, %zu)\n      expected '%s'\n", many, n, strlen(many), exp);
	/* A struct return value cut: its braces closed. */
	bl.n = 0;
	for (unsigned i = 0; i < 8; i++)
		word(&bl, ARG_KIND_RET, 0, 'd', 8, i, 0x80);
	ev.kind = TEV_EXIT;
	ev.site = 2;
	ev.data_len = (uint16_t)bl.n;
	names.sites = sites;
	names.site_cap = 5;
	sites[2].sym = "t_bytes";
	static const char bytes_section[] = "F\tt_bytes\t2:0:0=b0,2:0:1=b1,2:0:2=b2,2:0:3=b3,2:0:4=b4,2:0:5=b5,"
					    "2:0:6=b6,2:0:7=b7";
	CHECK_EQ(arg_names_parse(&names.arg_names, bytes_section, strlen(bytes_section)), 0, "(a struct of 8 bytes)");
	n = view_format_values(many, 40, &names, &ev);
	CHECK(n == strlen(many) && !strcmp(many, "{b0=-128, b1=-128, b2=-128, ...}"),
	      "its fields in 40 bytes: {b0=-128, b1=-128, b2=-128, ...}: '%s'", many);
	n = view_format_values(many, 512, &names, &ev);
	CHECK(n == strlen(many) &&
		      !strcmp(many, "{b0=-128, b1=-128, b2=-128, b3=-128, b4=-128, b5=-128, b6=-128, b7=-128}"),
	      "... and all of them in 512: '%s'", many);
	arg_names_free(&names.arg_names);
	sites[2].sym = NULL;

	/* A block cut short (a view keeps only so many bytes): the whole
	 * items before the cut. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'd', 64, 0, 1);
	word(&bl, ARG_KIND_INT, 2, 'd', 64, 0, 2);
	bl.n -= 3;
	values(NULL, 0, 0, &bl, "arg1=1", "a block cut in its second item");

	/* By register without names: a struct return value is its parts. */
	bl.n = 0;
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 0, 0xffffffff);
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 4, 2);
	values(NULL, 0, 1, &bl, "-1, 2", "two return values without names");
}

/* Names from an ARGS section (SEC_ARGS) as needle record writes them. */
static const char args_section[] =
	"F\tkv_put\t0:1:0=s,0:2:0=key,0:3:0=value\n"
	"F\tt_enum\t0:1:0=m#0,0:2:0=on\n"
	"F\tt_enum\t2:0:0=\n"
	"F\tt_mkpt\t2:0:0=x,2:0:4=y\t{=pt}\n"
	"F\tt_var\t0:1:0=n\t...\n"
	"F\tt_pt\t0:1:0=p.x,0:1:4=p.y,0:2:0=k\t{p=pt}\n"
	"F\tt_cls\t0:1:0=this,0:2:0=c,0:3:0=n\t...\t{c=&vector}\n"
	"F\tt_cls\t2:0:0=\t{=&vector}\n"
	"F\tt_empty\t0:1:0=this,0:2:0=x\t{e=empty{}>x,f=less{...}>}\n"
	"F\tt_pk\t0:7:0=p.m,0:8:1=p.k,0:1:0=k\t{p=pk~}\n"
	"E\t0\t-1=M_NONE,1=M_READ,2=M_WRITE";

static void test_names(void)
{
	struct block bl = { .n = 0 };

	names.sites = sites;
	names.site_cap = 8;
	sites[0].sym = "kv_put";
	sites[1].sym = "t_enum";
	sites[2].sym = "t_mkpt";
	sites[3].sym = "t_var";
	sites[4].sym = "t_pt";
	sites[5].sym = "t_cls";
	sites[6].sym = "t_empty";
	sites[7].sym = "t_pk";
	CHECK_EQ(arg_names_parse(&names.arg_names, args_section, strlen(args_section)), 0, "(the ARGS section parses)");

	/* README: kv_put(s=0x55eecb85a140, key=460, value="w0-k460-op2"). */
	word(&bl, ARG_KIND_INT, 1, 'p', 64, 0, 0x55eecb85a140ull);
	word(&bl, ARG_KIND_INT, 2, 'd', 32, 0, 460);
	string(&bl, 3, 0, "w0-k460-op2", 11);
	values(&names, 0, 0, &bl, "s=0x55eecb85a140, key=460, value=\"w0-k460-op2\"", "README's kv_put");
	/* A value the section does not name: by register. */
	word(&bl, ARG_KIND_INT, 4, 'd', 64, 0, 9);
	values(&names, 0, 0, &bl, "s=0x55eecb85a140, key=460, value=\"w0-k460-op2\", arg4=9", "an unnamed fourth");
	/* README: t_enum(m=M_READ, on=true) = 1. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'e', 32, 0, 1);
	word(&bl, ARG_KIND_INT, 2, 'b', 8, 0, 1);
	values(&names, 1, 0, &bl, "m=M_READ, on=true", "README's t_enum");
	bl.n = 0;
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 0, 1);
	values(&names, 1, 1, &bl, "1", "... its return value, unnamed");
	/* An enumerator by the value's bits; a value none has: a number. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'e', 32, 0, 0xffffffff);
	values(&names, 1, 0, &bl, "m=M_NONE", "-1 in 32 bits is M_NONE");
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'e', 32, 0, 7);
	values(&names, 1, 0, &bl, "m=7", "an enum value no enumerator has");
	/* README: t_mkpt(x=-1, y=2) = {x=-1, y=2}. */
	bl.n = 0;
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 0, 0xffffffff);
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 4, 2);
	values(&names, 2, 1, &bl, "{x=-1, y=2}", "README's t_mkpt's return value");
	uvalues(&names, 2, 1, &bl, "pt{...}", "a struct returned in registers, by its type's name");
	/* README: t_var(n=3, ...). */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 0, 3);
	values(&names, 3, 0, &bl, "n=3, ...", "README's t_var");
	bl.n = 0;
	values(&names, 3, 0, &bl, "...", "a variadic function's empty block");
	/* README: t_pt(p.x=3, p.y=-4, k=7): fields by their offset. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 0, 3);
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 4, 0xfffffffc);
	word(&bl, ARG_KIND_INT, 2, 'd', 32, 0, 7);
	values(&names, 4, 0, &bl, "p.x=3, p.y=-4, k=7", "README's t_pt");
	uvalues(&names, 4, 0, &bl, "pt{...}, 7", "a struct passed by value: its type's name, once for its fields");
	/* Its fields in another order than the structs' (by hand, -A):
	 * still once. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 4, 0xfffffffc);
	word(&bl, ARG_KIND_INT, 2, 'd', 32, 0, 7);
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 0, 3);
	uvalues(&names, 4, 0, &bl, "pt{...}, 7", "a struct's fields apart: one pt{...}, where the first is");
	/* A C++ class passed and returned by its address (&TYPE): the
	 * address in --arg-names, the class in uftrace's form; a group
	 * field after "..." parses too. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'p', 64, 0, 0x1000);
	word(&bl, ARG_KIND_INT, 2, 'p', 64, 0, 0x2000);
	word(&bl, ARG_KIND_INT, 3, 'd', 32, 0, 5);
	values(&names, 5, 0, &bl, "this=0x1000, c=0x2000, n=5, ...", "a class by reference, by name");
	uvalues(&names, 5, 0, &bl, "0x1000, vector{...}, 5, ...", "a class by reference, uftrace's form");
	bl.n = 0;
	word(&bl, ARG_KIND_RET, 0, 'p', 64, 0, 0x3000);
	values(&names, 5, 1, &bl, "", "a class returned in memory: by name, nothing (rax is only its address)");
	uvalues(&names, 5, 1, &bl, "vector{...}", "a class returned in memory, uftrace's form");
	/* Parameters without values (empty classes) in their places: e
	 * before x, f after the last; only in uftrace's form. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'p', 64, 0, 0x1000);
	word(&bl, ARG_KIND_INT, 2, 'd', 32, 0, 3);
	uvalues(&names, 6, 0, &bl, "0x1000, empty{}, 3, less{...}", "empty classes in their places");
	values(&names, 6, 0, &bl, "this=0x1000, x=3", "empty classes by name: no values, nothing shown");
	/* A packed struct whose long was left out: "..." by name only. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 7, 'c', 8, 0, 'a');
	word(&bl, ARG_KIND_INT, 8, 'd', 16, 1, 33);
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 0, 5);
	uvalues(&names, 7, 0, &bl, "pk{...}, 5", "a packed struct, uftrace's form");
	values(&names, 7, 0, &bl, "p.m='a', p.k=33, k=5, ...", "a packed struct's missing field: ...");
	/* A site the section does not name, a site past the table. */
	bl.n = 0;
	word(&bl, ARG_KIND_INT, 1, 'd', 32, 0, 3);
	sites[0].sym = "other";
	values(&names, 0, 0, &bl, "arg1=3", "a function without names");
	sites[0].sym = "kv_put";
	values(&names, 9, 0, &bl, "arg1=3", "a site past the table");
	arg_names_free(&names.arg_names);
}

static void int_parses(const char *s, uint64_t mag, int neg)
{
	struct view_int v = { 99, 99 };
	int r = view_parse_int(s, &v);
	CHECK(r == 0 && v.mag == mag && v.neg == neg, "'%s' is %s%llu", s, neg ? "-" : "", (unsigned long long)mag);
}

static void int_refused(const char *s)
{
	struct view_int v = { 99, 99 };
	int r = view_parse_int(s, &v);
	CHECK(r == -1 && v.mag == 99 && v.neg == 99, "'%s' refused, nothing stored", s);
}

static void test_parse_int(void)
{
	int_parses("0", 0, 0);
	int_parses("-0", 0, 0); /* never negative with 0 */
	int_parses("42", 42, 0);
	int_parses("-1", 1, 1);
	int_parses("0x7f", 0x7f, 0);
	int_parses("0X7F", 0x7f, 0);
	int_parses("0xdeadBEEF", 0xdeadbeef, 0);
	int_parses("-0x10", 16, 1);
	int_parses("007", 7, 0); /* decimal, not octal */
	int_parses("18446744073709551615", UINT64_MAX, 0);
	int_parses("0xffffffffffffffff", UINT64_MAX, 0);
	int_parses("-9223372036854775808", 0x8000000000000000ull, 1);
	int_refused("");
	int_refused("-");
	int_refused("0x");
	int_refused("-0x");
	int_refused("+5");
	int_refused(" 5");
	int_refused("5 ");
	int_refused("1.5");
	int_refused("0x1g");
	int_refused("12a");
	int_refused("18446744073709551616");
	int_refused("0x10000000000000000");
	int_refused("-9223372036854775809");
	int_refused("--1");
}

/* A return value block's comparison with s. */
static int ret_eq(unsigned kind, unsigned fmt, unsigned bits, uint64_t v, const char *s)
{
	struct block bl = { .n = 0 };
	struct view_int want;

	if (view_parse_int(s, &want))
		return 99;
	word(&bl, kind, 0, fmt, bits, 0, v);
	return view_ret_equals(bl.b, bl.n, &want);
}

/* One value alone in replay's default, uftrace's style, and in the
 * exact style of --arg-names and the exports. */
static void styled(unsigned fmt, unsigned bits, uint64_t v, const char *uftrace, const char *exact)
{
	struct block bl = { .n = 0 };
	struct trace_event ev = { .kind = TEV_ENTRY, .data = bl.b };
	char buf[128];

	word(&bl, ARG_KIND_INT, 1, fmt, bits, 0, v);
	ev.data_len = (uint16_t)bl.n;
	view_format_values_style(buf, sizeof(buf), NULL, &ev, VIEW_VALUES_UFTRACE);
	CHECK_STR(buf, uftrace, "'%c' %u bits, 0x%llx: '%s' as uftrace shows it", fmt, bits, (unsigned long long)v,
		  uftrace);
	view_format_values_style(buf, sizeof(buf), NULL, &ev, VIEW_VALUES_EXACT);
	CHECK_STR(buf, exact, "... 'arg1=%s' exactly", exact + 5);
}

static void test_uftrace_style(void)
{
	/* 'a': no format given, no type known.  uftrace: decimal up to
	 * 100000 in magnitude, hex past it, an int's negative value in the
	 * low 32 bits as that int. */
	styled('a', 64, 42, "42", "arg1=42");
	styled('a', 64, 100000, "100000", "arg1=100000");
	styled('a', 64, 100001, "0x186a1", "arg1=100001");
	styled('a', 64, (uint64_t)-100000, "-100000", "arg1=-100000");
	styled('a', 64, (uint64_t)-100001, "0xfffffffffffe795f", "arg1=-100001");
	styled('a', 64, 0xffffffffull, "-1", "arg1=4294967295");
	styled('a', 64, 0xffff0001ull, "-65535", "arg1=4294901761");
	styled('a', 64, 0xffff0000ull, "0xffff0000", "arg1=4294901760");
	styled('a', 64, 0x100000000ull, "0x100000000", "arg1=4294967296");
	/* A char 0 as C writes it. */
	styled('c', 8, 0, "'\\0'", "arg1='\\x00'");
	styled('c', 8, 'B', "'B'", "arg1='B'");
	/* Typed values are not guessed at. */
	styled('d', 64, 0xffffffffull, "4294967295", "arg1=4294967295");
	styled('d', 32, 0xffffffffull, "-1", "arg1=-1");
	styled('x', 64, 5, "0x5", "arg1=0x5");
	styled('x', 64, 0, "0x0", "arg1=0x0");
	/* A null pointer as uftrace writes it. */
	styled('p', 64, 0, "0", "arg1=0x0");
	styled('p', 64, 0x1000, "0x1000", "arg1=0x1000");
}

static void test_ret_equals(void)
{
	/* README: d signed at its width, c a signed char, u x p unsigned, f
	 * a number, a struct never. */
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 32, 0xffffffff, "-1"), 1, "d32 0xffffffff == -1");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 32, 0xffffffff, "4294967295"), 0, "d32 0xffffffff != 4294967295");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 64, 0xffffffff, "4294967295"), 1, "d64 0xffffffff == 4294967295");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 64, 0x8000000000000000ull, "-9223372036854775808"), 1, "d64 INT64_MIN");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 64, 0, "0"), 1, "d 0 == 0");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 64, 0, "-0"), 1, "d 0 == -0");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'd', 8, 0x80, "-128"), 1, "d8 0x80 == -128");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'c', 8, 0xff, "-1"), 1, "c 0xff == -1 (a signed char)");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'c', 8, 0xff, "255"), 0, "c 0xff != 255");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'e', 32, 0xffffffff, "-1"), 1, "e32 0xffffffff == -1");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'b', 8, 1, "1"), 1, "b 1 == 1");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'u', 32, 0xffffffff, "4294967295"), 1, "u32 0xffffffff == 4294967295");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'u', 32, 0xffffffff, "-1"), 0, "u32: a negative equals none");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'u', 64, UINT64_MAX, "-1"), 0, "u64 UINT64_MAX != -1");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'x', 64, 0x7f, "0x7f"), 1, "x 0x7f == 0x7f");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 'p', 64, 0, "0"), 1, "p NULL == 0");
	CHECK_EQ(ret_eq(ARG_KIND_RET_FP, 'f', 64, f64(2.0), "2"), 1, "f 2.0 == 2");
	CHECK_EQ(ret_eq(ARG_KIND_RET_FP, 'f', 64, f64(-3.0), "-3"), 1, "f -3.0 == -3");
	CHECK_EQ(ret_eq(ARG_KIND_RET_FP, 'f', 64, f64(2.5), "2"), 0, "f 2.5 != 2");
	CHECK_EQ(ret_eq(ARG_KIND_RET_FP, 'f', 32, f32(3.0f), "3"), 1, "f32 3.0 == 3");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 's', 1, 0, "0"), 1, "s NULL == 0");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 's', 1, 0, "1"), 0, "s NULL != 1");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 's', 2, 0x1234, "0x1234"), 1, "s unreadable 0x1234 == its address");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 's', 0, 0x1234, "0x1234"), 0, "s read: equals nothing");
	CHECK_EQ(ret_eq(ARG_KIND_RET, 's', 0, 0, "0"), 0, "s read (empty): not 0 either");

	struct block bl = { .n = 0 };
	struct view_int zero = { 0, 0 };
	CHECK_EQ(view_ret_equals(bl.b, 0, &zero), -1, "no block: -1");
	word(&bl, ARG_KIND_INT, 1, 'd', 64, 0, 0);
	CHECK_EQ(view_ret_equals(bl.b, bl.n, &zero), -1, "arguments only: -1");
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 0, 0);
	CHECK_EQ(view_ret_equals(bl.b, bl.n, &zero), 1, "an argument, then the return value: compared");
	word(&bl, ARG_KIND_RET, 0, 'd', 32, 4, 0);
	CHECK_EQ(view_ret_equals(bl.b, bl.n, &zero), -1, "a struct's two fields: -1, never a number");
}

/* A flags enum (its nonzero enumerators single bits) as the OR of its
 * bits, highest first, an unnamed bit in hex; a plain enum by exact
 * value only. */
static void test_enum_flags(void)
{
	static const char section[] = "E\t0\t0=P_NONE,1=P_READ,2=P_WRITE,4=P_EXEC\n"
				      "E\t1\t1=ONE,2=TWO,3=THREE\n";
	struct arg_names an = { 0 };
	char buf[64];

	CHECK_EQ(arg_names_parse(&an, section, strlen(section)), 0, "(two enums parse)");
	CHECK(arg_names_enum_format(&an, 0, 0, 32, buf, sizeof(buf)) && !strcmp(buf, "P_NONE"), "0: P_NONE (%s)", buf);
	CHECK(arg_names_enum_format(&an, 0, 5, 32, buf, sizeof(buf)) && !strcmp(buf, "P_EXEC|P_READ"),
	      "5: P_EXEC|P_READ (%s)", buf);
	CHECK(arg_names_enum_format(&an, 0, 0x13, 32, buf, sizeof(buf)) && !strcmp(buf, "P_WRITE|P_READ|0x10"),
	      "0x13: P_WRITE|P_READ|0x10 (%s)", buf);
	CHECK(!arg_names_enum_format(&an, 0, 0x10, 32, buf, sizeof(buf)), "0x10: no name at all, a number");
	CHECK(!arg_names_enum_format(&an, 0, 7, 32, buf, 8), "P_EXEC|P_WRITE|P_READ in 8 bytes: no room, a number");
	CHECK(arg_names_enum_format(&an, 1, 3, 32, buf, sizeof(buf)) && !strcmp(buf, "THREE"), "a plain enum: THREE");
	CHECK(!arg_names_enum_format(&an, 1, 4, 32, buf, sizeof(buf)), "a plain enum's 4: no OR of ONE and THREE");
	arg_names_free(&an);
}

int main(void)
{
	test_enum_flags();
	test_durations();
	test_parse_duration();
	test_format_u64();
	test_prefix();
	test_values();
	test_uftrace_style();
	test_names();
	test_parse_int();
	test_ret_equals();
	return harness_exit();
}
