/* view_format.c - see view_format.h. */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/view/view_format.h"
#include "common/shm_layout.h"
#include "common/value_spec.h"

int view_format_prefix(char *buf, const char *dur, uint32_t tid)
{
	size_t dl = strlen(dur);
	char num[16];
	int n = 0, tl;

	if (dl > 32)
		dl = 32;
	if (dl < 10) {
		memset(buf, ' ', 10 - dl);
		n = (int)(10 - dl);
	}
	memcpy(buf + n, dur, dl);
	n += (int)dl;
	buf[n++] = ' ';
	buf[n++] = '[';
	tl = cli_format_u64(num, tid);
	if (tl < 6) {
		memset(buf + n, ' ', (size_t)(6 - tl));
		n += 6 - tl;
	}
	memcpy(buf + n, num, (size_t)tl);
	n += tl;
	memcpy(buf + n, "] | ", 4);
	return n + 4;
}

int view_buf_reserve(struct view_buf *b, size_t more)
{
	if (b->oom)
		return -1;
	if (b->len + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap * 2 : 256;
	while (cap < b->len + more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void view_buf_put(struct view_buf *b, const void *s, size_t n)
{
	if (!view_buf_reserve(b, n)) {
		memcpy(b->p + b->len, s, n);
		b->len += n;
	}
}

/* One value as its format says (trace_format.h, TAG_DATA). */
static int format_value(char *buf, size_t len, unsigned fmt, unsigned bits, uint64_t v, enum view_values_style style)
{
	switch (fmt) {
	case 'a':
		/* No format was given and no type known.  uftrace's reading:
		 * small values in decimal, others in hex, but a 32-bit
		 * negative number (an int in a 64-bit register) as one. */
		if (style == VIEW_VALUES_UFTRACE) {
			int64_t sv = (int64_t)v;
			if (v > 0xffff0000ull && v <= 0xffffffffull)
				return snprintf(buf, len, "%d", (int)(int32_t)(uint32_t)v);
			if (sv > 100000 || sv < -100000)
				return snprintf(buf, len, "0x%llx", (unsigned long long)v);
		}
		return snprintf(buf, len, "%lld", (long long)(int64_t)v);
	case 'd': {
		int64_t sv = bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
		return snprintf(buf, len, "%lld", (long long)sv);
	}
	case 'u':
		return snprintf(buf, len, "%llu", (unsigned long long)v);
	case 'c':
		if (style == VIEW_VALUES_UFTRACE && (v & 0xff) == 0)
			return snprintf(buf, len, "'\\0'");
		if (v >= 0x20 && v < 0x7f && v != '\'' && v != '\\' && v != ',')
			return snprintf(buf, len, "'%c'", (int)v);
		return snprintf(buf, len, "'\\x%02x'", (unsigned)(v & 0xff));
	case 'f':
		if (style == VIEW_VALUES_UFTRACE) {
			float f;
			double d;
			uint32_t w = (uint32_t)v;
			memcpy(&f, &w, sizeof(f));
			memcpy(&d, &v, sizeof(d));
			return snprintf(buf, len, "%f", bits == 32 ? (double)f : d);
		}
		/* The shortest text that reads back as the same value (as
		 * printf's %g, with as many digits as it takes): two values
		 * never show alike, so report --by-arg keeps them apart. */
		if (bits == 32) {
			float f;
			uint32_t w = (uint32_t)v;
			memcpy(&f, &w, sizeof(f));
			for (int digits = 6; digits < 9; digits++) {
				int n = snprintf(buf, len, "%.*g", digits, (double)f);
				if (strtof(buf, NULL) == f)
					return n;
			}
			return snprintf(buf, len, "%.9g", (double)f);
		} else {
			double d;
			memcpy(&d, &v, sizeof(d));
			for (int digits = 6; digits < 17; digits++) {
				int n = snprintf(buf, len, "%.*g", digits, d);
				if (strtod(buf, NULL) == d)
					return n;
			}
			return snprintf(buf, len, "%.17g", d);
		}
	default: /* x, p */
		/* uftrace writes a null pointer as 0. */
		if (fmt == 'p' && !v && style == VIEW_VALUES_UFTRACE)
			return snprintf(buf, len, "0");
		return snprintf(buf, len, "0x%llx", (unsigned long long)v);
	}
}

/* A string value: quoted, escaped, as C writes it, and "..." after it
 * when it is cut: by the agent (cut), or here, when its escapes take
 * more than len (room for the "..." is kept, or the string would look
 * whole). */
static int format_string(char *buf, size_t len, const uint8_t *s, size_t n, int cut, enum view_values_style style)
{
	size_t off = 0, i;

	if (len < 8)
		return -1;
	/* uftrace shows a cut string in as many characters as were kept,
	 * its last three "...", inside the quotes. */
	n = strnlen((const char *)s, n); /* the value is NUL-padded to its words */
	int dots_inside = cut && style == VIEW_VALUES_UFTRACE && n > 3;
	if (dots_inside)
		n -= 3;
	buf[off++] = '"';
	/* Room for an escape, the closing quote, "..." and the NUL. */
	for (i = 0; i < n && s[i] && off + 9 <= len; i++) {
		uint8_t c = s[i];
		if (c == '"' || c == '\\') {
			buf[off++] = '\\';
			buf[off++] = (char)c;
		} else if (c == '\n') {
			buf[off++] = '\\';
			buf[off++] = 'n';
		} else if (c < 0x20 || c >= 0x7f) {
			off += (size_t)snprintf(buf + off, len - off, "\\x%02x", c);
		} else {
			buf[off++] = (char)c;
		}
	}
	if (dots_inside && i == n) {
		memcpy(buf + off, "...", 3);
		off += 3;
		cut = 0;
	}
	buf[off++] = '"';
	if (cut || (i < n && s[i])) {
		memcpy(buf + off, "...", 3);
		off += 3;
	}
	buf[off] = 0;
	return (int)off;
}

/* A long double (format f, 80 bits): its ten bytes, as uftrace shows
 * one (%Lf), or the shortest text that reads back the same. */
static int format_long_double(char *buf, size_t len, const uint8_t *v, enum view_values_style style)
{
	long double ld = 0;

	memcpy(&ld, v, 10);
	if (style == VIEW_VALUES_UFTRACE)
		return snprintf(buf, len, "%Lf", ld);
	for (int digits = 6; digits < 21; digits++) {
		int n = snprintf(buf, len, "%.*Lg", digits, ld);
		if (strtold(buf, NULL) == ld)
			return n;
	}
	return snprintf(buf, len, "%.21Lg", ld);
}

/* One item of a data block (file-format.md, TAG_DATA). */
struct value_item {
	unsigned kind, index, fmt, bits; /* bits as stored: 0-64, or 1/2 for a string's NULL/bad pointer */
	unsigned shift;                  /* byte offset in its register (a struct's field) */
	size_t len;                      /* of the value bytes, at v */
	const uint8_t *v;
	uint64_t word;                   /* the first 8 value bytes */
};

/* The next item from *at: 1 with it in *it, 0 when there is none left.
 * ret selects return values (kinds 2 to 5) or arguments (0 and 1). */
static int item_next(const uint8_t *data, size_t n, size_t *at, int ret, struct value_item *it)
{
	while (*at + 8 <= n) {
		uint64_t item;
		memcpy(&item, data + *at, 8);
		size_t len = arg_item_len(item);
		if (len > n - *at - 8)
			return 0; /* cut short (a view keeps only so many bytes) */
		it->v = data + *at + 8;
		*at += 8 + len;
		it->kind = item & 0xff;
		it->index = (item >> 8) & 0xff;
		it->fmt = (item >> 16) & 0xff;
		it->bits = (item >> 24) & 0xff;
		it->shift = arg_item_shift(item);
		it->len = len;
		/* A reading (-T read=) or a watch (-W) is no value:
		 * view_format_reads, view_format_watch. */
		if (arg_kind_is_ret(it->kind) != ret || it->kind == ARG_KIND_READ || it->kind == ARG_KIND_WATCH)
			continue;
		it->word = 0;
		memcpy(&it->word, it->v, len < 8 ? len : 8);
		return 1;
	}
	return 0;
}

static int value_next(struct trace *t, const struct trace_event *ev, size_t *at, char *name, size_t name_len,
		      char *val, size_t val_len, enum view_values_style style)
{
	const struct arg_names_func *names = t ? trace_site_arg_names(t, ev->site) : NULL;
	struct value_item it;

	if (!item_next(ev->data, ev->data_len, at, ev->kind == TEV_EXIT, &it))
		return 0;
	const struct arg_name *an = arg_names_item(names, it.kind, it.index, it.shift);
	/* A struct returned in memory: rax is its address, which only
	 * uftrace's form shows (as TYPE{...}); by name it says nothing. */
	size_t plen;
	if (style != VIEW_VALUES_UFTRACE && ev->kind == TEV_EXIT && an && !*an->label &&
	    arg_names_group(names, "", 1, &plen))
		return value_next(t, ev, at, name, name_len, val, val_len, style);
	if (an && *an->label)
		snprintf(name, name_len, "%s", an->label);
	else if (ev->kind == TEV_EXIT)
		snprintf(name, name_len, "retval");
	else
		snprintf(name, name_len, "%s%u", it.kind == ARG_KIND_FP ? "fparg" : "arg", it.index);
	const struct trace_site *pointee;
	const char *data;
	if (it.fmt == 's' || it.fmt == 'S') {
		/* uftrace quotes a NULL string as if it were one. */
		if (it.bits == 1)
			snprintf(val, val_len, style == VIEW_VALUES_UFTRACE ? "\"NULL\"" : "NULL");
		else if (it.bits == 2)
			snprintf(val, val_len, style == VIEW_VALUES_UFTRACE ? "\"<0x%llx>\"" : "(bad ptr 0x%llx)",
				 (unsigned long long)it.word);
		else if (format_string(val, val_len, it.v, it.len, it.bits == 3, style) < 0 && val_len)
			val[0] = 0; /* bits 3: no NUL within --max-string */
		/* A std::string, as uftrace writes one: "Hello"s. */
		size_t vl = strlen(val);
		if (it.fmt == 'S' && it.bits != 2 && vl + 1 < val_len) {
			val[vl] = 's';
			val[vl + 1] = 0;
		}
	} else if (it.fmt == 'e' && an && arg_names_enum_format(&t->arg_names, an->enum_id, it.word, it.bits, val, val_len)) {
		/* said */
	} else if (it.fmt == 'f' && it.bits == ARG_BITS_LONG_DOUBLE && it.len >= 10) {
		format_long_double(val, val_len, it.v, style);
	} else if (it.fmt == 'b' && it.word <= 1) {
		snprintf(val, val_len, "%s", it.word ? "true" : "false");
	} else if (it.fmt == 'p' && style == VIEW_VALUES_UFTRACE && t && it.word &&
		   (pointee = trace_site_at(t, it.word))) {
		/* A pointer to a traced function, by its name as uftrace
		 * shows a pointer to a symbol. */
		snprintf(val, val_len, "&%s", pointee->name);
	} else if (it.fmt == 'p' && style == VIEW_VALUES_UFTRACE && t && it.word && (data = trace_data_at(t, it.word))) {
		/* ... and one to a global or static variable (&static_var). */
		snprintf(val, val_len, "&%s", data);
	} else {
		format_value(val, val_len, it.fmt == 'e' || it.fmt == 'b' ? 'd' : (char)it.fmt,
			     it.bits == 0 || it.bits > 64 ? 64 : it.bits, it.word, style);
	}
	return 1;
}

int view_value_next(struct trace *t, const struct trace_event *ev, size_t *at, char *name, size_t name_len,
		    char *val, size_t val_len)
{
	return value_next(t, ev, at, name, name_len, val, val_len, VIEW_VALUES_EXACT);
}

int view_parse_int(const char *s, struct view_int *v)
{
	int neg = *s == '-', base = 10;
	uint64_t mag = 0;

	s += neg;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (mag > (UINT64_MAX - d) / (unsigned)base)
			return -1;
		mag = mag * (unsigned)base + d;
	}
	/* -2^63 is the most negative 64-bit value. */
	if (neg && mag > (uint64_t)1 << 63)
		return -1;
	v->mag = mag;
	v->neg = neg && mag;
	return 0;
}

int view_ret_equals(const uint8_t *data, size_t n, const struct view_int *v)
{
	struct value_item it;
	size_t at = 0;

	if (!item_next(data, n, &at, 1, &it))
		return -1;
	/* A struct returned in registers (its fields) is not a number. */
	struct value_item more;
	if (item_next(data, n, &at, 1, &more))
		return -1;
	unsigned bits = it.bits == 0 || it.bits > 64 ? 64 : it.bits;
	switch (it.fmt) {
	case 'a':
	case 'd':
	case 'e':
	case 'b':
	case 'c': { /* char is signed on x86-64 */
		int64_t sv = bits >= 64 ? (int64_t)it.word : (int64_t)(it.word << (64 - bits)) >> (64 - bits);
		/* The magnitude of a negative sv, -INT64_MIN included. */
		return v->neg ? sv < 0 && (uint64_t)0 - (uint64_t)sv == v->mag : sv >= 0 && (uint64_t)sv == v->mag;
	}
	case 'f': {
		double d, want = v->neg ? -(double)v->mag : (double)v->mag;
		if (it.bits == ARG_BITS_LONG_DOUBLE && it.len >= 10) {
			long double ld = 0;
			memcpy(&ld, it.v, 10);
			return ld == (v->neg ? -(long double)v->mag : (long double)v->mag);
		}
		if (bits == 32) {
			float f;
			uint32_t w = (uint32_t)it.word;
			memcpy(&f, &w, sizeof(f));
			d = f;
		} else {
			memcpy(&d, &it.word, sizeof(d));
		}
		return d == want;
	}
	case 's':
	case 'S':
		if (it.bits == 1)
			return !v->mag;
		return it.bits == 2 && !v->neg && it.word == v->mag;
	default: /* u, x, c, p */
		return !v->neg && it.word == v->mag;
	}
}

/* Appends the groups of f without values that are shown before the
 * parameter value label is part of (label NULL: every one not yet shown)
 * to buf, at *off, within room; placed has a bit per group shown.
 * Returns -1 when one does not fit. */
static int place_valueless(char *buf, size_t room, size_t *off, const struct arg_names_func *f, const char *label,
			   uint64_t *placed)
{
	size_t n = label ? strcspn(label, ".[") : 0;
	for (uint32_t i = 0; i < f->group_cnt && i < 64; i++) {
		const struct arg_group *g = &f->groups[i];
		if (!g->next || (*placed >> i & 1) || (label && (strlen(g->next) != n || strncmp(g->next, label, n))))
			continue;
		int w = *off >= room ? -1 : snprintf(buf + *off, room - *off, "%s%s", *off ? ", " : "", g->type);
		if (w < 0 || (size_t)w >= room - *off) {
			buf[*off] = 0;
			return -1;
		}
		*off += (size_t)w;
		*placed |= 1ull << i;
	}
	return 0;
}

size_t view_format_values_style(char *buf, size_t len, struct trace *t, const struct trace_event *ev,
				enum view_values_style style)
{
	char name[64], val[320];
	size_t off = 0, at = 0;
	int ret = ev->kind == TEV_EXIT, fields = 0, cnt = 0, more = 0;
	const struct arg_names_func *names = t ? trace_site_arg_names(t, ev->site) : NULL;
	/* Room kept for ", ...}" and the NUL: a value that does not fit is
	 * left out whole, and "..." says so (a part of one would read as
	 * another value, "arg11=-9"). */
	size_t room = len > 7 ? len - 7 : 0;

	if (!len)
		return 0;
	buf[0] = 0;
	/* A return value with named parts is a struct: "{x=1, y=2}"; as
	 * uftrace shows one, its type's name: "pt{...}". */
	size_t plen;
	int ret_group = ret && style == VIEW_VALUES_UFTRACE &&
			(arg_names_group(names, ".", 1, &plen) || arg_names_group(names, "", 1, &plen));
	if (ret && names && !ret_group)
		for (uint32_t i = 0; i < names->cnt; i++)
			fields |= arg_kind_is_ret(names->v[i].kind) && *names->v[i].label;
	/* uftrace's form shows a struct passed by value as its type's name,
	 * "int3{...}", once for all its fields: the parameters shown so. */
	char shown[VALUE_ITEMS_MAX][VALUE_LABEL_MAX];
	size_t shown_cnt = 0;
	/* A parameter without values (an empty class) is shown by its
	 * type in its place, before the next parameter's values. */
	uint64_t placed = 0;
	int placing = !ret && style == VIEW_VALUES_UFTRACE && names && names->group_cnt;
	while (value_next(t, ev, &at, name, sizeof(name), val, sizeof(val), style)) {
		if (placing && place_valueless(buf, room, &off, names, name, &placed)) {
			more = 1;
			break;
		}
		/* A whole return value is named "retval" here, "" in ARGS. */
		const char *glabel = ret && !strcmp(name, "retval") ? "" : name;
		const char *gtype = style == VIEW_VALUES_UFTRACE ? arg_names_group(names, glabel, ret, &plen) : NULL;
		if (gtype) {
			size_t k = 0;
			while (k < shown_cnt && !(strlen(shown[k]) == plen && !strncmp(shown[k], glabel, plen)))
				k++;
			if (k < shown_cnt)
				continue;
			if (shown_cnt < VALUE_ITEMS_MAX)
				snprintf(shown[shown_cnt++], VALUE_LABEL_MAX, "%.*s", (int)plen, glabel);
			snprintf(val, sizeof(val), "%s{...}", gtype);
		}
		int w = off >= room ? -1
			: (ret && !fields) || (!ret && style == VIEW_VALUES_UFTRACE) ? snprintf(buf + off, room - off, "%s%s", off ? ", " : "", val)
					 : snprintf(buf + off, room - off, "%s%s%s=%s", off ? ", " : "",
						    ret && !off ? "{" : "", name, val);
		if (w < 0 || (size_t)w >= room - off) {
			buf[off] = 0;
			more = 1;
			break;
		}
		off += (size_t)w;
		cnt++;
	}
	if (placing && !more && place_valueless(buf, room, &off, names, NULL, &placed))
		more = 1;
	/* A struct's field left out: by name, "..." says so; uftrace's
	 * TYPE{...} already does. */
	int partial = !ret && names && names->partial && style != VIEW_VALUES_UFTRACE;
	if ((more || partial || (!ret && names && names->varargs)) && off + 5 + (fields && cnt) < len)
		off += (size_t)snprintf(buf + off, len - off, "%s%s...", off ? ", " : "", fields && !cnt ? "{" : "");
	if (fields && (cnt || more) && off + 2 <= len) {
		buf[off++] = '}';
		buf[off] = 0;
	}
	return off;
}

_Static_assert(VIEW_READINGS == ARG_READ_LAST + 1, "VIEW_READINGS is one slot per ARG_READ_* index");

unsigned view_readings(const uint8_t *data, size_t n, uint64_t v[VIEW_READINGS])
{
	unsigned found = 0;
	for (size_t at = 0; at + 16 <= n;) {
		uint64_t item;
		memcpy(&item, data + at, 8);
		size_t len = arg_item_len(item);
		if (len > n - at - 8)
			break;
		unsigned index = (item >> 8) & 0xff;
		if ((item & 0xff) == ARG_KIND_READ && len == 8 && index >= 1 && index <= ARG_READ_LAST) {
			memcpy(&v[index], data + at + 8, 8);
			found |= 1u << index;
		}
		at += 8 + len;
	}
	return found;
}

int view_watch_cpu(const uint8_t *data, size_t n, uint64_t *cpu)
{
	for (size_t at = 0; data && at + 16 <= n;) {
		uint64_t item;
		memcpy(&item, data + at, 8);
		size_t ilen = arg_item_len(item);
		if (ilen > n - at - 8)
			break;
		if ((item & 0xff) == ARG_KIND_WATCH && ((item >> 8) & 0xff) == ARG_WATCH_CPU && ilen == 8) {
			memcpy(cpu, data + at + 8, 8);
			return 1;
		}
		at += 8 + ilen;
	}
	return 0;
}

int view_format_watch(char *buf, size_t len, const uint8_t *data, size_t n)
{
	uint64_t cpu;
	if (!view_watch_cpu(data, n, &cpu))
		return 0;
	snprintf(buf, len, "watch:cpu (cpu=%llu)", (unsigned long long)cpu);
	return 1;
}

int view_has_reads(const uint8_t *data, size_t n)
{
	uint64_t v[ARG_READ_LAST + 1], cpu;
	return data && (view_readings(data, n, v) != 0 || view_watch_cpu(data, n, &cpu));
}

int view_format_reads(char *buf, size_t len, const uint8_t *data, size_t n, const uint8_t *entry, size_t entry_n,
		      int faults)
{
	uint64_t v[ARG_READ_LAST + 1], e[ARG_READ_LAST + 1];
	unsigned first = faults ? ARG_READ_FAULT_MAJOR : ARG_READ_STATM_SIZE;
	unsigned last = faults ? ARG_READ_FAULT_MINOR : ARG_READ_STATM_SHARED;
	unsigned want = ((1u << (last + 1)) - 1) & ~((1u << first) - 1);
	static const char *const names[ARG_READ_LAST + 1] = { "", "size", "rss", "shared", "major", "minor" };

	if (!data || (view_readings(data, n, v) & want) != want || (entry && (view_readings(entry, entry_n, e) & want) != want))
		return 0;
	int off = snprintf(buf, len, "%s:%s (", entry ? "diff" : "read", faults ? "page-fault" : "proc/statm");
	for (unsigned i = first; i <= last && off >= 0 && (size_t)off < len; i++) {
		const char *unit = faults ? "" : "KB";
		const char *sep = i == first ? "" : ", ";
		off += entry ? snprintf(buf + off, len - (size_t)off, "%s%s=%+lld%s", sep, names[i],
					(long long)(v[i] - e[i]), unit)
			     : snprintf(buf + off, len - (size_t)off, "%s%s=%llu%s", sep, names[i],
					(unsigned long long)v[i], unit);
	}
	if (off < 0 || (size_t)off + 2 > len)
		return 0;
	snprintf(buf + off, len - (size_t)off, ")");
	return 1;
}

size_t view_format_values(char *buf, size_t len, struct trace *t, const struct trace_event *ev)
{
	return view_format_values_style(buf, len, t, ev, VIEW_VALUES_EXACT);
}

/* libseccomp's table: the kernel's own list of x86-64 system calls, kept
 * up to date by Debian, rather than a copy of it here. */
const char *view_syscall_name(uint64_t nr, char *buf, size_t len)
{
	char *name = nr < 4096 ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, (int)nr) : NULL;
	if (name) {
		snprintf(buf, len, "%s", name);
		free(name);
	} else {
		snprintf(buf, len, "syscall_%llu", (unsigned long long)nr);
	}
	return buf;
}

/* A length as the comments show it: "3.1 us", "79.2 ms", "1.5 s". */
static void span(char *buf, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.1f s", ns / 1e9);
}

size_t view_format_kernel(char *buf, size_t len, const struct trace_event *ev)
{
	const struct kernel_event *k = &ev->kev;
	char name[64], took[32];
	int n = 0;

	span(took, sizeof(took), ev->kev_ns);
	switch (k->kind) {
	case KEV_SYSCALL: {
		int64_t ret = (int64_t)k->b;
		view_syscall_name(k->a, name, sizeof(name));
		if (ret < 0 && ret >= -4095) {
			const char *e = strerrorname_np((int)-ret);
			n = snprintf(buf, len, "%s() = -1 %s /* syscall, %s */", name, e ? e : "?", took);
		} else if (ret > 0xffffffffll) {
			n = snprintf(buf, len, "%s() = %#llx /* syscall, %s */", name, (unsigned long long)ret, took);
		} else {
			n = snprintf(buf, len, "%s() = %lld /* syscall, %s */", name, (long long)ret, took);
		}
		break;
	}
	case KEV_OFFCPU: {
		static const char *const why[] = { "", "preempted", "sleeping", "blocked in D state", "blocked" };
		if (k->a)
			n = snprintf(buf, len, "/* off CPU %s (%s, woken by %llu) */", took, k->flags < 5 ? why[k->flags] : "?",
				     (unsigned long long)k->a);
		else
			n = snprintf(buf, len, "/* off CPU %s (%s) */", took, k->flags < 5 ? why[k->flags] : "?");
		break;
	}
	case KEV_FAULT:
		n = snprintf(buf, len, "/* page fault (%s) at %#llx */", k->flags & KEV_FAULT_MAJOR ? "major" : "minor",
			     (unsigned long long)k->a);
		break;
	case KEV_COMM: {
		/* Any byte but NUL may be in a name: quotes, backslashes and
		 * control bytes escaped, so that the line stays one line. */
		char comm[16], shown[16 * 4 + 1];
		size_t o = 0;
		view_kernel_comm(k, comm);
		for (const unsigned char *c = (const unsigned char *)comm; *c; c++)
			o += (size_t)(*c == '"' || *c == '\\' ? snprintf(shown + o, sizeof(shown) - o, "\\%c", *c)
				      : *c < 0x20 || *c == 0x7f ? snprintf(shown + o, sizeof(shown) - o, "\\x%02x", *c)
								 : snprintf(shown + o, sizeof(shown) - o, "%c", *c));
		shown[o] = 0;
		n = snprintf(buf, len, "/* linux:task-name (comm=\"%s\") */", shown);
		break;
	}
	case KEV_PROBE:
		/* uftrace's line for an SDT event. */
		if (ev->data)
			n = snprintf(buf, len, "/* %.*s */", (int)ev->data_len, (const char *)ev->data);
		else
			n = snprintf(buf, len, "/* USDT probe %llu */", (unsigned long long)k->a);
		break;
	default:
		n = snprintf(buf, len, "/* kernel event %u */", k->kind);
	}
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

void view_kernel_slice(const struct trace_event *ev, char *name, size_t name_len, char *detail, size_t detail_len)
{
	const struct kernel_event *k = &ev->kev;
	static const char *const state[] = { "Off CPU", "Runnable (Preempted)", "Sleeping", "Uninterruptible Sleep",
					     "Blocked" };
	*detail = 0;
	switch (k->kind) {
	case KEV_SYSCALL: {
		int64_t ret = (int64_t)k->b;
		const char *e = ret < 0 && ret >= -4095 ? strerrorname_np((int)-ret) : NULL;
		view_syscall_name(k->a, name, name_len);
		if (e)
			snprintf(detail, detail_len, "-1 %s", e);
		else
			snprintf(detail, detail_len, ret > 0xffffffffll ? "%#llx" : "%lld", (long long)ret);
		break;
	}
	case KEV_OFFCPU:
		snprintf(name, name_len, "%s", state[k->flags < 5 ? k->flags : 0]);
		if (k->a)
			snprintf(detail, detail_len, "%llu", (unsigned long long)k->a);
		break;
	case KEV_FAULT:
		snprintf(name, name_len, "page fault (%s)", k->flags & KEV_FAULT_MAJOR ? "major" : "minor");
		snprintf(detail, detail_len, "%#llx", (unsigned long long)k->a);
		break;
	case KEV_COMM: {
		char comm[16];
		view_kernel_comm(k, comm);
		snprintf(name, name_len, "task-name");
		snprintf(detail, detail_len, "%s", comm);
		break;
	}
	case KEV_PROBE:
		if (ev->data)
			snprintf(name, name_len, "%.*s", (int)ev->data_len, (const char *)ev->data);
		else
			snprintf(name, name_len, "USDT probe %llu", (unsigned long long)k->a);
		break;
	default:
		snprintf(name, name_len, "kernel event %u", k->kind);
	}
}

void view_kernel_comm(const struct kernel_event *k, char name[16])
{
	memcpy(name, &k->a, 8);
	memcpy(name + 8, &k->b, 8);
	name[15] = 0;
}

/* The prefix of a node's line (line set: its branch "+-") or of the blank
 * line between siblings, as uftrace draws it: a "|" for each open level
 * that has siblings still to come. */
void view_print_indent(const uint8_t *open, uint32_t indent, int line)
{
	int last = -1;
	if (line)
		for (uint32_t i = 0; i < indent; i++)
			if (open[i])
				last = (int)i;
	for (uint32_t i = 0; i < indent; i++) {
		if (!line || (int)i < last)
			fputs(open[i] ? " | " : "   ", stdout);
		else
			fputs((int)i == last ? " +-" : "---", stdout);
	}
}
