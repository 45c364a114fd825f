/* uftrace.c - `needle export --format=uftrace -o DIR`: the trace as a
 * uftrace data directory (uftrace 0.13's format, version 4), so that
 * uftrace's own replay, report, graph, dump, tui and script read it:
 *
 *   info                 header (magic, version 4, features) and its text
 *                        lines (exename, exit status, cmdline, tids, date)
 *   task.txt             one SESS line, a TASK line per thread
 *   sid-SID.map          an address range per object, and a [stack] line
 *   OBJECT.sym           each object's recorded functions, addresses
 *                        relative to its range (uftrace reads no ELF file)
 *   TID.dat              the thread's records: {time, type|magic|depth|addr}
 *
 * Invariants:
 *  - the directory is written as DIR.tmp.PID and renamed when complete: a
 *    DIR that exists is a whole export (an existing DIR is refused, never
 *    overwritten);
 *  - one pass over the events; memory grows with the threads (a write
 *    buffer each, smaller the more threads there are) and the sites, never
 *    with the events; at most one .dat file is open at a time;
 *  - every object gets a range of its own in the one session's map: a
 *    function's address is the recorded one, except in an object whose
 *    functions overlap an earlier object's (a program exec'ed in the same
 *    trace, loaded where the first was), whose addresses are moved to a
 *    free range, consistently in its map line, its symbols and its
 *    records;
 *  - a record's time is CLOCK_MONOTONIC nanoseconds (the trace's CLOCK
 *    mapping); a call still running at the end has no exit record, as
 *    uftrace leaves it (its "remaining functions"); an entry of the
 *    function tracer (no exit) is an entry and an exit at the same time;
 *    losses are LOST records with their count;
 *  - calls deeper than 1,024 levels are left out (uftrace's depth field
 *    has 10 bits), with a warning that counts them.
 *
 * Not exported (uftrace has no place for them here): recorded argument
 * and return values, --kernel events, coroutine switches. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/util/cli_util.h"
#include "cli/export/export.h"
#include "cli/export/export_dir.h"
#include "cli/view/view.h"

#define UFT_FEAT_TASK_SESSION (1u << 1)
#define UFT_FEAT_SYM_REL_ADDR (1u << 5)
#define UFT_FEAT_MAX_STACK (1u << 6)

#define UFT_INFO_EXE_NAME (1u << 0)
#define UFT_INFO_EXIT_STATUS (1u << 2)
#define UFT_INFO_CMDLINE (1u << 3)
#define UFT_INFO_TASKINFO (1u << 7)
#define UFT_INFO_RECORD_DATE (1u << 11)
#define UFT_INFO_PATTERN_TYPE (1u << 12)
#define UFT_INFO_VERSION (1u << 13)

enum { UFT_ENTRY = 0, UFT_EXIT = 1, UFT_LOST = 2 };
#define UFT_MAGIC 5u
#define UFT_DEPTH_MASK 0x3ffu
#define UFT_ADDR_MASK 0xffffffffffffull
/* Where objects that overlap another are moved: far from where Linux
 * maps programs and libraries, below the user half's end. */
#define UFT_MOVED_BASE 0x600000000000ull
#define UFT_MOVED_STRIDE 0x100000000ull

struct uft_header {
	char magic[8];
	uint32_t version;
	uint16_t header_size;
	uint8_t endian;
	uint8_t elf_class;
	uint64_t feat_mask;
	uint64_t info_mask;
	uint16_t max_stack;
	uint16_t unused1;
	uint32_t unused2;
};
_Static_assert(sizeof(struct uft_header) == 40, "uftrace's file header is 40 bytes");

struct uft_module {
	uint64_t lo, hi;    /* recorded addresses of its functions: [lo, hi) */
	uint64_t start;     /* its map line's start (page-aligned, after any move) */
	uint64_t end;
	int64_t shift;      /* added to a recorded address */
	char *map_path;     /* unique by base name */
	int used;
};

struct uft_thread {
	uint8_t *buf;
	size_t len;
	uint64_t first_ns;  /* its first record, + 1 (0: none yet) */
	int written;        /* its file exists */
	int forked;         /* a forked child's: it began inside its parent's calls */
	int seen;           /* an event of it was read */
	uint32_t slot;      /* the thread whose buffer and file it uses: the first of its tid */
};

struct uft {
	struct trace *t;
	struct export_dir out;
	struct uft_module *mods;
	size_t mod_cnt;
	struct uft_thread *th;
	size_t buf_cap;     /* per thread */
	uint64_t mono0;     /* CLOCK_MONOTONIC ns of the trace's first event */
	uint64_t too_deep;  /* records left out: deeper than uftrace's depth field holds */
	uint32_t *order;    /* the threads with records, in the order they began */
	size_t order_cnt;
	int err;
};

static uint64_t site_addr(const struct uft *u, uint32_t site)
{
	if (site >= u->t->site_cap)
		return 0; /* a function the file does not describe (a damaged trace) */
	const struct trace_site *s = &u->t->sites[site];
	const struct uft_module *m = s->module < u->mod_cnt ? &u->mods[s->module] : NULL;
	return (s->func_ip + (m ? (uint64_t)m->shift : 0)) & UFT_ADDR_MASK;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Each object's range from its sites; a unique map path each; objects
 * that overlap an earlier one moved apart. */
static int plan_modules(struct uft *u)
{
	struct trace *t = u->t;
	u->mod_cnt = t->module_cnt;
	u->mods = calloc(u->mod_cnt ? u->mod_cnt : 1, sizeof(*u->mods));
	if (!u->mods)
		return -1;
	for (size_t s = 0; s < t->site_cap; s++) {
		const struct trace_site *ts = &t->sites[s];
		/* An event the reader adds (linux:schedule) is no code. */
		if (!ts->name || ts->module >= u->mod_cnt || (ts->flags & TRACE_SITE_EVENT))
			continue;
		struct uft_module *m = &u->mods[ts->module];
		uint64_t hi = ts->func_ip + (ts->func_size ? ts->func_size : 1);
		if (!m->used || ts->func_ip < m->lo)
			m->lo = ts->func_ip;
		if (!m->used || hi > m->hi)
			m->hi = hi;
		m->used = 1;
	}
	size_t moved = 0;
	for (size_t i = 0; i < u->mod_cnt; i++) {
		struct uft_module *m = &u->mods[i];
		if (!m->used)
			continue;
		m->start = m->lo & ~0xfffull;
		m->end = (m->hi + 0xfff) & ~0xfffull;
		for (size_t k = 0; k < i; k++) {
			struct uft_module *o = &u->mods[k];
			if (o->used && m->start < o->end && o->start < m->end) {
				uint64_t to = UFT_MOVED_BASE + moved++ * UFT_MOVED_STRIDE;
				m->shift = (int64_t)(to - m->start);
				m->end = to + (m->end - m->start);
				m->start = to;
				break;
			}
		}
		const char *path = t->modules[i] && *t->modules[i] ? t->modules[i] : "unknown";
		int clash = 0;
		for (size_t k = 0; k < i && !clash; k++)
			clash = u->mods[k].used && t->modules[k] &&
				!strcmp(base_name(t->modules[k]), base_name(path));
		size_t n = strlen(path) + 24;
		if (!(m->map_path = malloc(n)))
			return -1;
		/* uftrace finds an object's symbols by its base name: a
		 * second object of one name (a program exec'ed again) needs
		 * a name of its own. */
		if (clash)
			snprintf(m->map_path, n, "%s#%zu", path, i);
		else
			snprintf(m->map_path, n, "%s", path);
		/* Spaces end a map line's path. */
		for (char *p = m->map_path; *p; p++)
			if (*p == ' ')
				*p = '_';
	}
	return 0;
}

struct sym_ref {
	uint64_t addr;
	uint32_t site;
};

static int sym_cmp(const void *a, const void *b)
{
	const struct sym_ref *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* OBJECT.sym: the functions of each object, sorted, relative to its map
 * start; a function of known size ends there ("?" lines end a symbol),
 * else at the next one; the last one ended explicitly, or uftrace would
 * give it no size. */
static int write_symbols(struct uft *u)
{
	struct trace *t = u->t;
	struct sym_ref *v = malloc((t->site_cap ? t->site_cap : 1) * sizeof(*v));
	if (!v)
		return -1;
	for (size_t mi = 0; mi < u->mod_cnt && !u->out.err; mi++) {
		struct uft_module *m = &u->mods[mi];
		if (!m->used)
			continue;
		size_t n = 0;
		for (size_t s = 0; s < t->site_cap; s++)
			if (t->sites[s].name && t->sites[s].module == mi && !(t->sites[s].flags & TRACE_SITE_EVENT))
				v[n++] = (struct sym_ref){ site_addr(u, (uint32_t)s), (uint32_t)s };
		qsort(v, n, sizeof(*v), sym_cmp);
		size_t cap = 256 + n * 96, len = 0;
		char *text = malloc(cap);
		if (!text) {
			free(v);
			return -1;
		}
		len += (size_t)snprintf(text + len, cap - len, "# symbols: %zu\n# path name: %s\n", n, m->map_path);
		for (size_t i = 0; i < n; i++) {
			if (i && v[i].addr == v[i - 1].addr)
				continue; /* one function, two sites */
			const struct trace_site *s = &t->sites[v[i].site];
			const char *name = s->sym && *s->sym ? s->sym : s->name;
			size_t need = len + strlen(name) + 80;
			if (need > cap) {
				char *p = realloc(text, need * 2);
				if (!p) {
					free(text);
					free(v);
					return -1;
				}
				text = p;
				cap = need * 2;
			}
			len += (size_t)snprintf(text + len, cap - len, "%016llx T ", (unsigned long long)(v[i].addr - m->start));
			/* A name ends at a space or tab in uftrace's reader. */
			for (const char *p = name; *p; p++)
				text[len++] = *p == ' ' || *p == '\t' || *p == '\n' ? '_' : *p;
			text[len++] = '\n';
			uint64_t end = v[i].addr + (s->func_size ? s->func_size : 1);
			size_t next = i + 1;
			while (next < n && v[next].addr == v[i].addr)
				next++;
			if (next == n || (s->func_size && end < v[next].addr))
				len += (size_t)snprintf(text + len, cap - len, "%016llx ? __sym_end\n",
							(unsigned long long)(end - m->start));
		}
		char name[4200];
		snprintf(name, sizeof(name), "%s.sym", base_name(m->map_path));
		export_dir_put(&u->out, name, text, len, 0);
		free(text);
	}
	free(v);
	return u->out.err ? -1 : 0;
}

/* Flush a thread's buffer to TID.dat (created at its first flush). */
static void flush_thread(struct uft *u, uint32_t index)
{
	struct uft_thread *th = &u->th[index];
	char name[32];
	if (!th->len && th->written)
		return;
	snprintf(name, sizeof(name), "%u.dat", u->t->threads[index].tid);
	export_dir_put(&u->out, name, th->buf, th->len, th->written);
	th->written = 1;
	th->len = 0;
}

static void put_record(struct uft *u, uint32_t index, uint64_t ns, unsigned type, uint32_t depth,
		       uint64_t addr)
{
	struct uft_thread *th = &u->th[index];
	if (th->len + 16 > u->buf_cap)
		flush_thread(u, index);
	uint64_t rec[2] = { u->mono0 + ns,
			    type | (UFT_MAGIC << 3) | ((uint64_t)(depth & UFT_DEPTH_MASK) << 6) |
				    ((addr & UFT_ADDR_MASK) << 16) };
	memcpy(th->buf + th->len, rec, 16);
	th->len += 16;
	if (!th->first_ns)
		th->first_ns = u->mono0 + ns + 1;
}

static int uft_event(const struct trace_event *ev, void *arg)
{
	struct uft *u = arg;
	uint32_t slot = u->th[ev->thread].slot;
	struct uft_thread *th = &u->th[slot];

	if (!th->seen)
		th->forked = ev->kind == TEV_ENTRY && (ev->flags & (TEV_INHERITED | TEV_BEFORE)) == TEV_INHERITED;
	th->seen = 1;
	if (!th->buf && !(th->buf = malloc(u->buf_cap))) {
		cli_error("out of memory");
		u->out.err = 1;
		return 1;
	}
	/* uftrace's records hold a depth of 10 bits: deeper calls are left
	 * out, as uftrace itself records none below its max_stack. */
	if ((ev->kind == TEV_ENTRY || ev->kind == TEV_EXIT) && ev->depth > UFT_DEPTH_MASK) {
		u->too_deep += ev->kind == TEV_ENTRY;
		return 0;
	}
	switch (ev->kind) {
	case TEV_ENTRY:
		/* A forked child's calls open at the fork are its
		 * parent's: uftrace takes its first record's depth. */
		if (ev->flags & TEV_INHERITED)
			break;
		put_record(u, slot, ev->ns, UFT_ENTRY, ev->depth, site_addr(u, ev->site));
		if (ev->flags & TEV_FLAT)
			put_record(u, slot, ev->ns, UFT_EXIT, ev->depth, site_addr(u, ev->site));
		break;
	case TEV_EXIT:
		/* Still running at the end: no exit, as uftrace records it. */
		if (ev->flags & TEV_OPEN)
			break;
		put_record(u, slot, ev->ns, UFT_EXIT, ev->depth, site_addr(u, ev->site));
		break;
	case TEV_LOST:
		put_record(u, slot, ev->ns, UFT_LOST, ev->depth, ev->lost);
		break;
	default:
		break;
	}
	return u->out.err;
}

static int write_info(struct uft *u, const char *exename)
{
	struct trace *t = u->t;
	struct uft_header h = {
		.magic = "Ftrace!",
		.version = 4,
		.header_size = sizeof(h),
		.endian = 1,    /* ELFDATA2LSB */
		.elf_class = 2, /* ELFCLASS64 */
		.feat_mask = UFT_FEAT_TASK_SESSION | UFT_FEAT_SYM_REL_ADDR | UFT_FEAT_MAX_STACK,
		.info_mask = UFT_INFO_EXE_NAME | UFT_INFO_EXIT_STATUS | UFT_INFO_CMDLINE | UFT_INFO_TASKINFO |
			     UFT_INFO_RECORD_DATE | UFT_INFO_PATTERN_TYPE | UFT_INFO_VERSION,
		.max_stack = UFT_DEPTH_MASK + 1,
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -1;
	fwrite(&h, sizeof(h), 1, f);
	/* The lines in the order of their bits in info_mask. */
	fprintf(f, "exename:%s\n", exename);
	fprintf(f, "exit_status:%d\n", t->have_process ? t->process.wait_status : 0);
	fputs("cmdline:", f);
	for (uint32_t i = 0; t->argv && i < t->process.argc; i++)
		for (const char *p = t->argv[i]; p; p = NULL) {
			fputs(i ? " " : "", f);
			for (; *p; p++)
				fputc(*p == '\n' ? ' ' : *p, f);
		}
	fputc('\n', f);
	/* uftrace's dump reads its tasks in this order. */
	fprintf(f, "taskinfo:lines=2\ntaskinfo:nr_tid=%zu\ntaskinfo:tids=", u->order_cnt);
	for (size_t k = 0; k < u->order_cnt; k++)
		fprintf(f, "%s%u", k ? "," : "", t->threads[u->order[k]].tid);
	fputc('\n', f);
	struct stat st;
	time_t when = !stat(t->path, &st) ? st.st_mtime : time(NULL);
	char date[64];
	struct tm tm;
	strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", localtime_r(&when, &tm));
	uint64_t elapsed = 0;
	if (t->have_clock && t->clock.ns1 > t->clock.ns0)
		elapsed = t->clock.ns1 - t->clock.ns0;
	fprintf(f, "record_date:%s\nelapsed_time:%llu.%09llu sec\n", date, (unsigned long long)(elapsed / 1000000000),
		(unsigned long long)(elapsed % 1000000000));
	fputs("pattern_type:regex\n", f);
	fputs("uftrace_version:v0.13 (exported by needle from its trace)\n", f);
	if (fclose(f)) {
		free(text);
		return -1;
	}
	int r = export_dir_put(&u->out, "info", text, len, 0);
	free(text);
	return r;
}

struct task_ref {
	uint64_t ns;
	uint32_t index;
};

static int task_cmp(const void *a, const void *b)
{
	const struct task_ref *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* task.txt and the session's map: one session, the recorded process. */

/* Whether pid is a process of the trace (a thread of it is). */
static int process_in_trace(const struct trace *t, uint32_t pid)
{
	for (size_t i = 0; pid && i < t->thread_cnt; i++)
		if (t->threads[i].pid == pid)
			return 1;
	return 0;
}

static int write_session(struct uft *u, const char *exename)
{
	struct trace *t = u->t;
	static const char sid[] = "6e6565646c650000"; /* 16 characters, as uftrace's */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -1;
	uint64_t first = UINT64_MAX;
	for (size_t i = 0; i < t->thread_cnt; i++)
		if (u->th[i].first_ns && u->th[i].first_ns - 1 < first)
			first = u->th[i].first_ns - 1;
	if (first == UINT64_MAX)
		first = u->mono0;
	/* A session and a task are found for a record at or after their
	 * timestamps: the session first, each task at its first record. */
	uint32_t pid = t->have_process ? t->process.pid : (t->thread_cnt ? t->threads[0].tid : 1);
	fprintf(f, "SESS timestamp=%llu.%09llu pid=%u sid=%s exename=\"%s\"\n", (unsigned long long)(first / 1000000000),
		(unsigned long long)(first % 1000000000), pid, sid, exename);
	/* In time order: a FORK line finds its parent's task, read before. */
	struct task_ref *order = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*order));
	size_t cnt = 0;
	if (!order || !(u->order = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*u->order)))) {
		free(order);
		fclose(f);
		free(text);
		return -1;
	}
	for (size_t i = 0; i < t->thread_cnt; i++)
		if (u->th[i].written)
			order[cnt++] = (struct task_ref){ u->th[i].first_ns ? u->th[i].first_ns - 1 : first, (uint32_t)i };
	qsort(order, cnt, sizeof(*order), task_cmp);
	for (size_t k = 0; k < cnt; k++)
		u->order[k] = order[k].index;
	u->order_cnt = cnt;
	for (size_t k = 0; k < cnt; k++) {
		size_t i = order[k].index;
		uint64_t ts = order[k].ns;
		/* A forked child's process: uftrace starts its calls from
		 * its parent's open ones, as needle's reader does.  Its
		 * process and parent are the trace's TASKS records; a file
		 * without them takes every thread for one of the recorded
		 * process's, and a forked child's parent for that process. */
		const struct trace_thread *th = &t->threads[i];
		uint32_t tpid = th->pid ? th->pid : pid, ppid = th->pid ? th->ppid : pid;
		int fork_line = th->pid ? th->tid == th->pid && process_in_trace(t, ppid) : u->th[i].forked;
		if (fork_line)
			fprintf(f, "FORK timestamp=%llu.%09llu pid=%u ppid=%u\n", (unsigned long long)(ts / 1000000000),
				(unsigned long long)(ts % 1000000000), th->tid, ppid);
		else
			fprintf(f, "TASK timestamp=%llu.%09llu tid=%u pid=%u\n", (unsigned long long)(ts / 1000000000),
				(unsigned long long)(ts % 1000000000), th->tid, tpid);
	}
	free(order);
	if (fclose(f)) {
		free(text);
		return -1;
	}
	export_dir_put(&u->out, "task.txt", text, len, 0);
	free(text);
	if (u->out.err)
		return -1;

	text = NULL;
	len = 0;
	if (!(f = open_memstream(&text, &len)))
		return -1;
	for (size_t i = 0; i < u->mod_cnt; i++) {
		struct uft_module *m = &u->mods[i];
		if (m->used)
			fprintf(f, "%llx-%llx r-xp 00000000 00:00 0                          %s\n",
				(unsigned long long)m->start, (unsigned long long)m->end, m->map_path);
	}
	/* uftrace tells user addresses from the kernel's by the stack's. */
	fputs("7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]\n", f);
	if (fclose(f)) {
		free(text);
		return -1;
	}
	char name[64];
	snprintf(name, sizeof(name), "sid-%s.map", sid);
	export_dir_put(&u->out, name, text, len, 0);
	free(text);
	return u->out.err ? -1 : 0;
}

int export_uftrace(struct trace *t, const char *dir)
{
	struct uft u = { .t = t };
	/* uftrace's data has its schedule events as records of their own,
	 * which this export does not write: the intervals off the CPU stay
	 * the kernel's events, which it leaves out, not calls at address 0. */
	if ((t->sched & TRACE_SCHED_CALLS) && trace_set_sched(t, t->sched & ~TRACE_SCHED_CALLS)) {
		cli_error("out of memory");
		return 1;
	}
	int ret = 1;

	if (export_dir_begin(&u.out, dir))
		return 1;
	/* uftrace takes 0 for "no time": the base is at least 1 s. */
	u.mono0 = trace_monotonic_base(t);
	size_t n = t->thread_cnt;
	/* Write buffers: 64 KiB a thread, less when there are many, so that
	 * they stay within 64 MiB in all. */
	u.buf_cap = n ? (64u << 20) / n : 65536;
	if (u.buf_cap > 65536)
		u.buf_cap = 65536;
	u.buf_cap &= ~(size_t)15;
	if (u.buf_cap < 256)
		u.buf_cap = 256;
	if (!(u.th = calloc(n ? n : 1, sizeof(*u.th))) || plan_modules(&u)) {
		cli_error("out of memory");
		goto out;
	}
	/* One task per tid in uftrace: a later thread of the same tid (a
	 * program exec'ed, a tid reused) continues the first one's file,
	 * as uftrace records an exec.  Its events all come after the
	 * earlier thread's, so the file stays in time order. */
	uint32_t *by_tid = NULL;
	size_t slots = 64;
	while (slots < 2 * n)
		slots *= 2;
	if (!(by_tid = calloc(slots, sizeof(*by_tid)))) {
		cli_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t h = (t->threads[i].tid * 2654435761u) & (slots - 1);
		while (by_tid[h] && t->threads[by_tid[h] - 1].tid != t->threads[i].tid)
			h = (h + 1) & (slots - 1);
		if (!by_tid[h])
			by_tid[h] = (uint32_t)i + 1;
		u.th[i].slot = by_tid[h] - 1;
	}
	free(by_tid);
	if (view_each_event(t, 0, uft_event, &u) || u.out.err)
		goto out;
	for (size_t i = 0; i < n && !u.out.err; i++) {
		if (u.th[i].buf)
			flush_thread(&u, (uint32_t)i);
		free(u.th[i].buf);
		u.th[i].buf = NULL;
	}
	if (u.out.err)
		goto out;
	const char *exename = u.mod_cnt && u.mods[0].map_path ? u.mods[0].map_path
			      : t->argv && t->argv[0] ? t->argv[0] : "program";
	if (write_symbols(&u) || write_session(&u, exename) || write_info(&u, exename)) {
		if (!u.out.err)
			cli_error("out of memory");
		goto out;
	}
	if (export_dir_commit(&u.out))
		goto out; /* removed already: aborting again finds nothing */
	if (u.too_deep)
		cli_error("warning: %llu calls deeper than %u levels left out (uftrace's records hold 10 bits of depth)",
			  (unsigned long long)u.too_deep, UFT_DEPTH_MASK + 1);
	ret = 0;
out:
	if (ret)
		export_dir_abort(&u.out);
	for (size_t i = 0; u.th && i < n; i++)
		free(u.th[i].buf);
	free(u.th);
	for (size_t i = 0; u.mods && i < u.mod_cnt; i++)
		free(u.mods[i].map_path);
	free(u.mods);
	free(u.order);
	return ret;
}
