/* probes.c - -E PROVIDER:NAME: the USDT probes of the program and the
 * libraries it loads (or a running process maps) that the patterns name,
 * found before the program starts and handed to kernel.c as uprobes, and
 * their names for the trace (the PROBES section).
 *
 * A pattern PATTERN@OBJECT names the probes of that file alone, which is
 * read too: a library the program dlopen's (the JVM's libjvm.so), whose
 * uprobes the kernel places when it is mapped.
 *
 * Invariants: a pattern that names no probe is refused before the program
 * runs (as -F refuses a function that is not there); a probe's index is
 * its place in r->kernel.probes, which the KERNEL events carry and the
 * PROBES section names. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args/program_libs.h"
#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "cli/util/usdt.h"

struct probe_scan {
	struct recording *r;
	const char *object;
	const char *shown;   /* its path, as the trace names it */
	dev_t object_dev;    /* its identity: PATTERN@OBJECT names it by any path */
	ino_t object_ino;
	const char *globs;   /* newline-separated */
	unsigned *matched;   /* per glob */
	size_t seen;
	int err;
	char example[256];   /* a probe there, for the refusal */
};

/* The next of the newline-separated globs at *it (its length in *len),
 * *it moved past it; NULL after the last. */
static const char *next_glob(const char **it, size_t *len)
{
	const char *g = *it;
	if (!*g)
		return NULL;
	const char *nl = strchr(g, '\n');
	*len = nl ? (size_t)(nl - g) : strlen(g);
	*it = g + *len + (nl != NULL);
	return g;
}

static int take_note(void *arg, const struct usdt_note *n)
{
	struct probe_scan *s = arg;
	char name[256];
	unsigned g = 0;
	int want = 0;
	size_t len;

	snprintf(name, sizeof(name), "%s:%s", n->provider, n->name);
	/* A line of the PROBES section and of the views each. */
	for (char *c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (!s->example[0])
		snprintf(s->example, sizeof(s->example), "%s", name);
	s->seen++;
	for (const char *it = s->globs, *p; (p = next_glob(&it, &len)); g++) {
		char glob[4096];
		snprintf(glob, sizeof(glob), "%.*s", (int)len, p);
		char *at = strchr(glob, '@');
		if (at)
			*at++ = 0;
		struct stat sa;
		if ((!at || !strcmp(at, s->object) ||
		     (!stat(at, &sa) && sa.st_dev == s->object_dev && sa.st_ino == s->object_ino)) &&
		    !fnmatch(glob, name, 0)) {
			s->matched[g]++;
			want = 1;
		}
	}
	if (want && kernel_add_probe(&s->r->kernel, s->object, s->shown, name, n->pc_off, n->sema_off)) {
		s->err = 1;
		return 1;
	}
	return 0;
}

static int scan_object(struct probe_scan *s)
{
	struct stat st;

	s->object_dev = 0;
	s->object_ino = 0;
	if (!stat(s->object, &st)) {
		s->object_dev = st.st_dev;
		s->object_ino = st.st_ino;
	}
	return usdt_each(s->object, take_note, s);
}

int record_probes_resolve(struct recording *r, const char *exe, const struct program_libs *libs)
{
	const char *globs = r->o->probe_globs;
	size_t n_globs = 1;

	for (const char *p = globs; *p; p++)
		n_globs += *p == '\n';
	struct probe_scan s = { .r = r, .globs = globs, .matched = calloc(n_globs, sizeof(unsigned)) };
	if (!s.matched)
		return -1;
	for (size_t i = 0; i <= libs->cnt && !s.err; i++) {
		s.object = i ? libs->v[i - 1].file : exe;
		s.shown = i ? libs->v[i - 1].path : exe;
		scan_object(&s);
	}
	/* The objects PATTERN@OBJECT names, each once, unless read above. */
	int ret = 0;
	size_t len, qlen;
	for (const char *it = globs, *p; !s.err && !ret && (p = next_glob(&it, &len));) {
		const char *at = memchr(p, '@', len);
		char object[4096];
		snprintf(object, sizeof(object), "%.*s", at ? (int)(len - (size_t)(at + 1 - p)) : 0, at ? at + 1 : "");
		/* The same file by another name is read once: two uprobes at
		 * one place would record each hit twice. */
		struct stat so, se;
		int have = at && !stat(object, &so);
		int done = !at || !strcmp(object, exe) ||
			   (have && !stat(exe, &se) && se.st_dev == so.st_dev && se.st_ino == so.st_ino);
		for (size_t i = 0; !done && i < libs->cnt; i++)
			done = !strcmp(object, libs->v[i].file) ||
			       (have && libs->v[i].dev == (uint64_t)so.st_dev && libs->v[i].ino == (uint64_t)so.st_ino);
		for (const char *qi = globs, *q; !done && (q = next_glob(&qi, &qlen)) && q < p;) {
			const char *qat = memchr(q, '@', qlen);
			done = qat && (size_t)(q + qlen - qat - 1) == strlen(object) && !memcmp(qat + 1, object, strlen(object));
		}
		if (!done) {
			s.object = s.shown = object;
			if (scan_object(&s) < 0) {
				cli_error("-E '%.*s': cannot read %s as an ELF object", (int)len, p, object);
				ret = -1;
			}
		}
	}
	if (s.err) {
		cli_error("-E: more USDT probes than needle opens (%u)", KERNEL_PROBES_MAX);
		ret = -1;
	}
	unsigned g = 0;
	for (const char *it = globs, *p; !ret && (p = next_glob(&it, &len)); g++) {
		if (!s.matched[g]) {
			if (s.seen)
				cli_error("-E '%.*s': no USDT probe of %s or the libraries it loads is named so (%zu there, "
					  "e.g. %s)", (int)len, p, exe, s.seen, s.example);
			else
				cli_error("-E '%.*s': %s and the libraries it loads have no USDT probe (no .note.stapsdt); "
					  "needle's other events are linux:schedule, linux:task-name, read:* and diff:*",
					  (int)len, p, exe);
			ret = -1;
		}
	}
	free(s.matched);
	return ret;
}

void record_write_probes(struct recording *r)
{
	const struct kernel_rec *k = &r->kernel;
	size_t cap = 0, len = 0;
	char *text = NULL;

	for (size_t i = 0; i < k->probe_cnt; i++) {
		const struct kernel_probe *p = &k->probes[i];
		size_t need = strlen(p->name) + strlen(p->shown) + 64;
		if (len + need > cap) {
			cap = 2 * (len + need);
			char *t = realloc(text, cap);
			if (!t) {
				free(text);
				return;
			}
			text = t;
		}
		size_t at = len;
		len += (size_t)snprintf(text + len, cap - len, "%zu\t%s\t%s\t%#llx\n", i, p->name, p->shown,
					(unsigned long long)p->off);
		/* A path's control bytes would cut the line (such an object's
		 * probes are not opened: open_probes). */
		for (size_t c = at + strlen(p->name) + 1; c < len - 1; c++)
			if ((unsigned char)text[c] < 0x20 && text[c] != '\t')
				text[c] = '?';
	}
	if (len)
		trace_writer_section(&r->w, SEC_PROBES, text, len);
	free(text);
}
