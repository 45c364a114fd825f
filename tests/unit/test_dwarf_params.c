/* test_dwarf_params - the DWARF placement rules of --auto-args and of the
 * -A / -R checks (src/cli/args/dwarf_params.c), on a fixture of chosen
 * signatures (dwarf_fixture.c, dwarf_fixture2.c) built three ways: gcc
 * -O0, gcc -O2 (locations in registers, checked against the ABI's) and
 * clang -O0 (an rbp frame base).  Each function's values are checked
 * exactly against the System V x86-64 ABI, worked out here by hand:
 * integers in rdi rsi rdx rcx r8 r9, float and double in xmm0-7, small
 * structs per eightbyte, bigger ones and what finds no register left on
 * the stack (argN, N > 6), char * as a string, the hidden return address
 * in rdi, return values in rax/rdx/xmm0/xmm1; and what is refused: a long
 * double, __int128, a type the reader cannot place and everything after
 * it, an over-aligned value's stack words, another calling convention,
 * two static functions of one name that disagree.  Also where each
 * function starts in the file (read here from the section headers, the
 * reader uses the segments), the enumerators, aliases, and the load's
 * errors. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/args/dwarf_params.h"
#include "common/shm_layout.h"
#include "harness.h"

/* "kind:index:fmt:bits:shift=label" per value, space-separated; "#ID"
 * after an enum's. */
static void render_items(char *buf, size_t len, const struct dw_item *v, unsigned cnt)
{
	size_t off = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < cnt && off < len; i++) {
		off += (size_t)snprintf(buf + off, len - off, "%s%u:%u:%c:%u:%u=%s", i ? " " : "", v[i].kind,
					v[i].index, v[i].fmt, v[i].bits, v[i].shift, v[i].label);
		if (v[i].enum_id >= 0 && off < len)
			off += (size_t)snprintf(buf + off, len - off, "#%d", (int)v[i].enum_id);
	}
}

/* What each register and stack word holds: "rdi=i:a xmm0=f:x sw0=a:b". */
static void render_regs(char *buf, size_t len, const struct dw_func *f)
{
	static const char *const ints[6] = { "rdi", "rsi", "rdx", "rcx", "r8", "r9" };
	size_t off = 0;

	buf[0] = 0;
	for (int i = 0; i < 6 && off < len; i++)
		if (f->int_reg[i].what)
			off += (size_t)snprintf(buf + off, len - off, "%s%s=%c:%s", off ? " " : "", ints[i],
						f->int_reg[i].what, f->int_reg[i].param);
	for (int i = 0; i < 8 && off < len; i++)
		if (f->fp_reg[i].what)
			off += (size_t)snprintf(buf + off, len - off, "%sxmm%d=%c:%s", off ? " " : "", i,
						f->fp_reg[i].what, f->fp_reg[i].param);
	for (int i = 0; i < DW_STACK_WORDS && off < len; i++)
		if (f->stack_word[i].what)
			off += (size_t)snprintf(buf + off, len - off, "%ssw%d=%c:%s", off ? " " : "", i,
						f->stack_word[i].what, f->stack_word[i].param);
}

static void render_flags(char *buf, size_t len, const struct dw_func *f)
{
	snprintf(buf, len, "%s%s%s%s%s%s%swords=%u", f->returns ? "returns " : "", f->varargs ? "varargs " : "",
		 f->truncated ? "truncated " : "", f->on_stack ? "on_stack " : "", f->ambiguous ? "ambiguous " : "",
		 f->mismatch ? "mismatch " : "", f->stack_unknown ? "stack_unknown " : "", f->stack_words);
}

#define CHECK_STR(got, want, ...)                                              \
	do {                                                                   \
		CHECK(!strcmp(got, want), __VA_ARGS__);                        \
		if (strcmp(got, want))                                         \
			printf("      got      '%s'\n      expected '%s'\n", got, want); \
	} while (0)

/* What the ABI makes of each function of the fixture. */
struct expect {
	const char *sym;
	const char *entry, *exit, *regs, *flags;
};

static const struct expect expects[] = {
	{ "main", "", "2:0:d:32:0=", "", "returns words=0" },
	/* char is a character, signed char a number, bool a bool. */
	{ "f_ints", "0:1:d:32:0=a 0:2:d:64:0=b 0:3:u:16:0=c 0:4:c:8:0=d 0:5:b:8:0=e 0:6:d:8:0=g", "2:0:d:32:0=",
	  "rdi=i:a rsi=i:b rdx=i:c rcx=i:d r8=i:e r9=i:g", "returns words=0" },
	/* The 7th and 8th integers: the first two stack words. */
	{ "f_stack",
	  "0:1:d:64:0=a1 0:2:d:64:0=a2 0:3:d:64:0=a3 0:4:d:64:0=a4 0:5:d:64:0=a5 0:6:d:64:0=a6 0:7:d:64:0=a7 "
	  "0:8:d:32:0=a8",
	  "2:0:d:64:0=", "rdi=i:a1 rsi=i:a2 rdx=i:a3 rcx=i:a4 r8=i:a5 r9=i:a6 sw0=i:a7 sw1=i:a8",
	  "returns words=2" },
	/* Floating point takes xmm in its own order; the int still rdi. */
	{ "f_fp", "1:1:f:64:0=x 1:2:f:32:0=y 0:1:d:32:0=i 1:3:f:64:0=z", "3:0:f:64:0=",
	  "rdi=i:i xmm0=f:x xmm1=f:y xmm2=f:z", "returns words=0" },
	{ "f_nine",
	  "1:1:f:64:0=d1 1:2:f:64:0=d2 1:3:f:64:0=d3 1:4:f:64:0=d4 1:5:f:64:0=d5 1:6:f:64:0=d6 1:7:f:64:0=d7 "
	  "1:8:f:64:0=d8 0:7:f:64:0=d9",
	  "3:0:f:64:0=",
	  "xmm0=f:d1 xmm1=f:d2 xmm2=f:d3 xmm3=f:d4 xmm4=f:d5 xmm5=f:d6 xmm6=f:d7 xmm7=f:d8 sw0=f:d9",
	  "returns words=1" },
	/* char * (const or not) a string; unsigned char *, void * and int *
	 * pointers. */
	{ "f_str", "0:1:s:64:0=s 0:2:s:64:0=t 0:3:p:64:0=u 0:4:p:64:0=p 0:5:p:64:0=ip", "2:0:s:64:0=",
	  "rdi=s:s rsi=s:t rdx=p:u rcx=p:p r8=p:ip", "returns words=0" },
	/* A struct of two ints in one register, its fields by offset. */
	{ "f_pt", "0:1:d:32:0=p.x 0:1:d:32:4=p.y 0:2:d:32:0=k", "2:0:d:32:0=", "rdi=a:p rsi=i:k",
	  "returns words=0" },
	{ "f_mkpt", "0:1:d:32:0=x 0:2:d:32:0=y", "2:0:d:32:0=x 2:0:d:32:4=y", "rdi=i:x rsi=i:y",
	  "returns words=0" },
	/* Two floats: one SSE eightbyte.  A union of an int and a float:
	 * INTEGER, its first member shown. */
	{ "f_fpt", "1:1:f:32:0=v.x 1:1:f:32:4=v.y 0:1:d:32:0=u.i", "3:0:f:32:0=", "rdi=a:u xmm0=a:v",
	  "returns words=0" },
	/* Two-eightbyte returns: rax then rdx, rax and xmm0, xmm0 then xmm1. */
	{ "f_ret_ll", "0:1:d:64:0=a", "2:0:d:64:0=a 4:0:d:64:0=b", "rdi=i:a", "returns words=0" },
	{ "f_ret_ld", "0:1:d:64:0=a", "2:0:d:64:0=l 3:0:f:64:0=d", "rdi=i:a", "returns words=0" },
	{ "f_ret_dd", "1:1:f:64:0=a", "3:0:f:64:0=a 5:0:f:64:0=b", "xmm0=f:a", "returns words=0" },
	/* 24 bytes: three stack words, the ints around it in rdi and rsi. */
	{ "f_big", "0:1:d:32:0=i 0:7:d:64:0=b.a 0:8:d:64:0=b.b 0:9:d:64:0=b.c 0:2:d:32:0=j", "2:0:d:64:0=",
	  "rdi=i:i rsi=i:j sw0=a:b sw1=a:b sw2=a:b", "returns words=3" },
	/* Returned in memory: rdi is the caller's address for it. */
	{ "f_ret_big", "0:2:d:32:0=i", "2:0:p:64:0=", "rsi=i:i", "returns words=0" },
	/* The struct needs two registers, one is left: it goes to the stack
	 * and g, after it, takes r9. */
	{ "f_nofit",
	  "0:1:d:64:0=a 0:2:d:64:0=b 0:3:d:64:0=c 0:4:d:64:0=d 0:5:d:64:0=e 0:7:d:64:0=s.a 0:8:d:64:0=s.b "
	  "0:6:d:64:0=g",
	  "2:0:d:64:0=", "rdi=i:a rsi=i:b rdx=i:c rcx=i:d r8=i:e r9=i:g sw0=a:s sw1=a:s", "returns words=2" },
	{ "f_void", "", "", "", "words=0" },
	{ "f_var", "0:1:d:32:0=n", "2:0:d:32:0=", "rdi=i:n", "returns varargs words=0" },
	{ "f_enum", "0:1:e:32:0=m#0 0:2:b:8:0=on", "2:0:d:32:0=", "rdi=i:m rsi=i:on", "returns words=0" },
	{ "f_bool", "0:1:d:32:0=v", "2:0:b:8:0=", "rdi=i:v", "returns words=0" },
	/* An array's elements; a bit-field is not shown, the int after it
	 * is, 4 bytes into rsi. */
	{ "f_agg", "0:1:c:8:0=c.c[0] 0:1:c:8:1=c.c[1] 0:1:c:8:2=c.c[2] 0:2:d:32:4=b.n", "2:0:d:32:0=",
	  "rdi=a:c rsi=a:b", "returns words=0" },
	/* long double: two stack words, not shown; returned in st0, not
	 * shown, and without a hidden address (i is in rdi). */
	{ "f_ldbl", "0:7:f:80:0=x 0:1:d:32:0=i", "6:0:f:80:0=", "rdi=i:i sw0=a:x sw1=a:x", "returns words=2" },
	/* __int128 takes rsi and rdx, not shown; b is in rcx. */
	{ "f_i128", "0:1:d:32:0=a 0:4:d:32:0=b", "2:0:d:32:0=", "rdi=i:a rsi=a:v rdx=a:v rcx=i:b",
	  "returns words=0" },
	/* 17 values: the first 16. */
	{ "f_many",
	  "0:1:d:64:0=a1 0:2:d:64:0=a2 0:3:d:64:0=a3 0:4:d:64:0=a4 0:5:d:64:0=a5 0:6:d:64:0=a6 0:7:d:64:0=a7 "
	  "0:8:d:64:0=a8 0:9:d:64:0=a9 0:10:d:64:0=a10 0:11:d:64:0=a11 0:12:d:64:0=a12 0:13:d:64:0=a13 "
	  "0:14:d:64:0=a14 0:15:d:64:0=a15 0:16:d:64:0=a16",
	  "2:0:d:64:0=",
	  "rdi=i:a1 rsi=i:a2 rdx=i:a3 rcx=i:a4 r8=i:a5 r9=i:a6 sw0=i:a7 sw1=i:a8 sw2=i:a9 sw3=i:a10 sw4=i:a11 "
	  "sw5=i:a12 sw6=i:a13 sw7=i:a14 sw8=i:a15 sw9=i:a16 sw10=i:a17",
	  "returns truncated words=11" },
	{ "f_fnptr", "0:1:p:64:0=fn 0:2:p:64:0=pp", "2:0:d:64:0=", "rdi=p:fn rsi=p:pp", "returns words=0" },
	/* An empty struct takes no register: b is in rsi. */
	{ "f_empty", "0:1:d:32:0=a 0:2:d:32:0=b", "2:0:d:32:0=", "rdi=i:a rsi=i:b", "returns words=0" },
	/* A packed struct goes to the stack: its long across two words is
	 * left out (its group says so), not the function's values. */
	{ "f_packed", "0:7:c:8:0=p.m 0:8:d:16:1=p.k 0:1:d:32:0=k", "2:0:d:32:0=", "rdi=i:k sw0=a:p sw1=a:p",
	  "returns words=2" },
	/* A 32-byte vector: a stops the description, b is not known. */
	{ "f_vec", "0:1:d:32:0=a", "2:0:d:32:0=", "rdi=i:a", "returns on_stack words=0" },
	/* Aligned to 32: neither it nor the struct after it is placed on
	 * the stack; b still takes rdi. */
	{ "f_wide", "0:1:d:32:0=b", "2:0:d:32:0=", "rdi=i:b", "returns stack_unknown words=0" },
	{ "f_target", "0:1:d:32:0=v", "2:0:d:32:0=", "rdi=i:v", "returns words=0" },
	{ "f_alias", "0:1:d:32:0=v", "2:0:d:32:0=", "rdi=i:v", "returns words=0" },
	/* Without a prototype, the float comes as a double. */
	{ "f_knr", "1:1:f:64:0=x 0:1:d:32:0=n", "2:0:d:32:0=", "rdi=i:n xmm0=f:x", "returns words=0" },
};

/* Where sym's code starts in the file, from its section (not the
 * segments, as the reader goes): 0 with *off, or -1. */
static int section_offset(const char *path, const char *sym, uint64_t *off)
{
	int fd = open(path, O_RDONLY), ret = -1;
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;

	while (elf && ret && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			GElf_Shdr text;
			const char *name;
			if (!gelf_getsym(d, (int)i, &s) || !(name = elf_strptr(elf, sh.sh_link, s.st_name)) ||
			    strcmp(name, sym) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !gelf_getshdr(elf_getscn(elf, s.st_shndx), &text))
				continue;
			*off = s.st_value - text.sh_addr + text.sh_offset;
			ret = 0;
			break;
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The functions of sym in info (two static ones may share it). */
static size_t count_sym(const struct dw_info *info, const char *sym, size_t *ambiguous)
{
	size_t n = 0;

	*ambiguous = 0;
	for (size_t i = 0; i < info->cnt; i++)
		if (!strcmp(info->funcs[i].sym, sym)) {
			n++;
			*ambiguous += info->funcs[i].ambiguous;
		}
	return n;
}

static void check_fixture(const char *name, const char *path, int clang)
{
	struct dw_info dw;
	char err[4352], got[2048];

	int e = dw_info_load(path, &dw, err, sizeof(err));
	CHECK_EQ(e, 0, "%s: its DWARF loads", name);
	if (e) {
		printf("      %s\n", err);
		return;
	}
	CHECK(!strcmp(dw.debug_file, path), "%s: the DWARF is the file's own (%s)", name, dw.debug_file);

	for (size_t k = 0; k < sizeof(expects) / sizeof(expects[0]); k++) {
		const struct expect *x = &expects[k];
		const struct dw_func *f = dw_info_find(&dw, x->sym);
		CHECK(f != NULL, "%s: %s is described", name, x->sym);
		if (!f)
			continue;
		render_items(got, sizeof(got), f->entry, f->entry_cnt);
		CHECK_STR(got, x->entry, "%s: %s's arguments", name, x->sym);
		render_items(got, sizeof(got), f->exit, f->exit_cnt);
		CHECK_STR(got, x->exit, "%s: %s's return value", name, x->sym);
		render_regs(got, sizeof(got), f);
		CHECK_STR(got, x->regs, "%s: %s's registers and stack words", name, x->sym);
		render_flags(got, sizeof(got), f);
		CHECK_STR(got, x->flags, "%s: %s's flags", name, x->sym);
		uint64_t off = 0;
		CHECK(!section_offset(path, x->sym, &off) && f->file_off == off,
		      "%s: %s starts at file offset 0x%llx (its section says 0x%llx)", name, x->sym,
		      (unsigned long long)f->file_off, (unsigned long long)off);
		CHECK(!f->cxx && !f->ambiguous && !f->mismatch, "%s: %s is C, one definition, the ABI's", name,
		      x->sym);
	}

	/* The groups the views show as TYPE{...}: each struct parameter and
	 * returned struct, the empty one in its place before b, the packed
	 * one partial. */
	static const struct {
		const char *sym, *groups;
	} gx[] = {
		{ "f_pt", "p=pt" },
		{ "f_mkpt", "<ret>=pt" },
		{ "f_ret_big", "<ret>=&big" },
		{ "f_empty", "e=empty{}>b" },
		{ "f_packed", "p=pk~" },
		{ "f_ints", "" },
	};
	for (size_t k = 0; k < sizeof(gx) / sizeof(gx[0]); k++) {
		const struct dw_func *f = dw_info_find(&dw, gx[k].sym);
		size_t off = 0;
		got[0] = 0;
		for (int g = 0; f && g < f->group_cnt && off < sizeof(got); g++) {
			const struct dw_group *gr = &f->group[g];
			off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s=%s%s%s%s%s%s", g ? " " : "",
						gr->at_exit ? "<ret>" : gr->param, gr->by_ref ? "&" : "", gr->type,
						gr->empty ? "{}" : "", gr->partial ? "~" : "", gr->valueless ? ">" : "",
						gr->next);
		}
		CHECK_STR(got, gx[k].groups, "%s: %s's struct values", name, gx[k].sym);
	}

	/* Every function is listed once, sorted by symbol; f_same and f_dup
	 * twice (a static function in each file), nothing else (the start
	 * files carry no DWARF here; sink and keep_them are data). */
	size_t sorted = 1;
	for (size_t i = 1; i < dw.cnt; i++)
		sorted &= strcmp(dw.funcs[i - 1].sym, dw.funcs[i].sym) <= 0;
	CHECK(sorted, "%s: the functions are sorted by symbol", name);
	size_t want = sizeof(expects) / sizeof(expects[0]) + 4 + !clang;
	CHECK_EQ(dw.cnt, want, "%s: %zu functions described: the fixture's, and no other", name, want);

	/* Two static functions of one name: described alike, both shown; in
	 * disagreement (int, int vs long), neither. */
	size_t amb;
	CHECK(count_sym(&dw, "f_same", &amb) == 2 && amb == 0, "%s: f_same twice, alike: not ambiguous", name);
	CHECK(count_sym(&dw, "f_dup", &amb) == 2 && amb == 2, "%s: f_dup twice, disagreeing: both ambiguous", name);
	const struct dw_func *f = dw_info_find(&dw, "f_same");
	render_items(got, sizeof(got), f ? f->entry : NULL, f ? f->entry_cnt : 0);
	CHECK_STR(got, "0:1:d:32:0=a", "%s: f_same's argument", name);

	/* ms_abi takes rcx and rdx: gcc's DWARF says so (mismatch: no
	 * values); clang marks its calling convention (not described). */
	f = dw_info_find(&dw, "f_msabi");
	if (clang)
		CHECK(!f, "%s: f_msabi (another calling convention) is not described", name);
	else
		CHECK(f && f->mismatch && !f->entry_cnt && !f->exit_cnt,
		      "%s: f_msabi (another calling convention): a mismatch, no values", name);

	/* The enum of f_enum's m: its enumerators, in order. */
	f = dw_info_find(&dw, "f_enum");
	CHECK_EQ(dw.enum_cnt, 1, "%s: one enum type used by a parameter", name);
	if (f && f->entry_cnt && f->entry[0].enum_id >= 0 && (size_t)f->entry[0].enum_id < dw.enum_cnt) {
		const struct dw_enum *en = &dw.enums[f->entry[0].enum_id];
		CHECK(en->cnt == 3 && en->values[0] == 1 && !strcmp(en->names[0], "M_READ") && en->values[1] == 2 &&
			      !strcmp(en->names[1], "M_WRITE") && en->values[2] == 3 && !strcmp(en->names[2], "M_BOTH"),
		      "%s: enum mode is M_READ=1, M_WRITE=2, M_BOTH=3", name);
	} else {
		CHECK(0, "%s: f_enum's m has an enum id", name);
	}

	/* An alias is the same function, at the same place. */
	const struct dw_func *t = dw_info_find(&dw, "f_target"), *a = dw_info_find(&dw, "f_alias");
	CHECK(t && a && t != a && t->file_off == a->file_off && t->addr == a->addr,
	      "%s: f_alias and f_target: two entries, one address", name);

	CHECK(!dw_info_find(&dw, "f_nope") && !dw_info_find(&dw, "f_int") && !dw_info_find(&dw, "sink"),
	      "%s: no function for a name the DWARF does not describe (nor a prefix of one, nor data)", name);
	char list[64] = "x";
	CHECK(dw_info_overloads(&dw, "f_ints", list, sizeof(list)) == 0 && !list[0],
	      "%s: a C function has no overloads", name);
	dw_info_free(&dw);
	CHECK(!dw.funcs && !dw.cnt && !dw.enums && !dw.enum_cnt, "%s: dw_info_free empties it", name);
}

int main(void)
{
	struct dw_info dw;
	char err[4352];

	elf_version(EV_CURRENT);
	check_fixture("gcc -O0", FIXTURE_GCC_O0, 0);
	check_fixture("gcc -O2", FIXTURE_GCC_O2, 0);
	check_fixture("clang -O0", FIXTURE_CLANG_O0, 1);

	/* No DWARF, no ELF, no file. */
	err[0] = 0;
	CHECK_EQ(dw_info_load(FIXTURE_NODEBUG, &dw, err, sizeof(err)), -ENODATA,
		 "a program built without -g: -ENODATA");
	CHECK(strstr(err, "has no debug info (DWARF)") != NULL, "... said so: %s", err);
	CHECK(!dw.cnt && !dw.funcs, "... and nothing described");
	err[0] = 0;
	CHECK_EQ(dw_info_load(FIXTURE_SOURCE, &dw, err, sizeof(err)), -ENOEXEC, "a C source file: -ENOEXEC");
	CHECK(!strncmp(err, "cannot read ", 12), "... said so: %s", err);
	CHECK_EQ(dw_info_load("/nonexistent/needle-fixture", &dw, err, sizeof(err)), -ENOEXEC,
		 "a path that does not exist: -ENOEXEC");
	return harness_exit();
}
