/* view_filter.c - -F, -N and -D at view time (view_filter.h). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "cli/util/cli_util.h"
#include "cli/view/view.h"
#include "cli/view/view_filter.h"
#include "common/pattern.h"

struct view_filter_pat {
	struct view_filter_pat *next;
	char *text;
	int is_regex;
	regex_t re;
	int notrace;
};

int view_filter_add(struct view_filter *f, const char *view, const char *pattern, int notrace)
{
	struct view_filter_pat *p = calloc(1, sizeof(*p));
	if (!p || !(p->text = strdup(pattern))) {
		free(p);
		cli_error("out of memory");
		return -1;
	}
	p->notrace = notrace;
	p->is_regex = cli_pattern_is_regex(pattern);
	if (p->is_regex && regcomp(&p->re, pattern, REG_EXTENDED | REG_NOSUB)) {
		cli_error("%s: '%s' is not a regular expression", view, pattern);
		free(p->text);
		free(p);
		return -1;
	}
	p->next = f->pats;
	f->pats = p;
	f->have_filter |= !notrace;
	return 0;
}

int view_filter_depth(struct view_filter *f, const char *view, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (!*arg || *end || !v || v > 65535) {
		cli_error("%s: -D takes a depth from 1 to 65535, not '%s'", view, arg);
		return -1;
	}
	f->max_depth = (uint32_t)v;
	return 0;
}

int view_filter_start(struct view_filter *f, struct trace *t)
{
	f->t = t;
	f->verdict = calloc(t->site_cap ? t->site_cap : 1, 1);
	f->in_filter = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*f->in_filter));
	f->in_notrace = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*f->in_notrace));
	f->base = malloc((t->thread_cnt ? t->thread_cnt : 1) * sizeof(*f->base));
	if (!f->verdict || !f->in_filter || !f->in_notrace || !f->base)
		return -1;
	for (size_t i = 0; i < t->thread_cnt; i++)
		view_filter_reset(f, (uint32_t)i);
	return 0;
}

void view_filter_reset(struct view_filter *f, uint32_t thread)
{
	f->in_filter[thread] = f->in_notrace[thread] = UINT32_MAX;
	f->base[thread] = UINT32_MAX;
}

static int site_verdict(struct view_filter *f, uint32_t site)
{
	if (site >= f->t->site_cap)
		return 1;
	if (f->verdict[site])
		return f->verdict[site];
	const char *name = trace_site_name(f->t, site);
	const char *sym = f->t->sites[site].sym;
	int v = 1;
	for (struct view_filter_pat *p = f->pats; p; p = p->next) {
		if (view_pattern_names(p->text, p->is_regex ? &p->re : NULL, name, sym)) {
			v = p->notrace ? 3 : 2;
			break;
		}
	}
	f->verdict[site] = (uint8_t)v;
	return v;
}

int view_filter_names(struct view_filter *f, uint32_t site)
{
	return site_verdict(f, site) == 2;
}

int view_filter_shows(struct view_filter *f, const struct trace_event *ev)
{
	uint32_t *in_filter = &f->in_filter[ev->thread], *in_notrace = &f->in_notrace[ev->thread];
	uint32_t depth = ev->depth;
	int entry = ev->kind == TEV_ENTRY;
	int v = f->pats ? site_verdict(f, ev->site) : 1;

	/* A forked child's calls open at the fork are its parent's: they
	 * count (their exits are the child's) but open no -F subtree in it
	 * (uftrace's child starts outside them: graph -F main counts the
	 * parent's calls alone); a -N one goes on hiding what the child does
	 * inside it, as replay hides it.  Its levels count from its first
	 * event, the outermost of them, so that each is shown, or not, as
	 * its exit will be (a B has its E). */
	int inherited = entry && (ev->flags & TEV_INHERITED);
	if (f->base[ev->thread] == UINT32_MAX)
		f->base[ev->thread] = depth;
	if (entry) {
		if (v == 3 && *in_notrace == UINT32_MAX)
			*in_notrace = depth;
		if (v == 2 && !inherited && *in_filter == UINT32_MAX && *in_notrace == UINT32_MAX)
			*in_filter = depth;
	}
	int show = *in_notrace == UINT32_MAX && (!f->have_filter || *in_filter != UINT32_MAX);
	uint32_t top = f->have_filter ? *in_filter : f->base[ev->thread];
	if (show && f->max_depth && (depth < top || depth - top >= f->max_depth))
		show = 0;
	if (show && f->no_libcall && view_site_is_libcall(f->t, ev->site, &f->compiled))
		show = 0;
	if (!entry || (ev->flags & TEV_FLAT)) {
		/* A subtree ends with its own exit (or with an entry of the
		 * function tracer, which has none); an exit above where it
		 * began (the trace began inside it) ends it too. */
		if (*in_notrace != UINT32_MAX && depth <= *in_notrace)
			*in_notrace = UINT32_MAX;
		if (*in_filter != UINT32_MAX && depth <= *in_filter)
			*in_filter = UINT32_MAX;
	}
	return show;
}

void view_filter_stop(struct view_filter *f)
{
	free(f->verdict);
	free(f->in_filter);
	free(f->in_notrace);
	free(f->base);
	free(f->compiled);
	f->verdict = NULL;
	f->compiled = NULL;
	f->in_filter = f->in_notrace = f->base = NULL;
	f->t = NULL;
}

void view_filter_free(struct view_filter *f)
{
	while (f->pats) {
		struct view_filter_pat *p = f->pats->next;
		if (f->pats->is_regex)
			regfree(&f->pats->re);
		free(f->pats->text);
		free(f->pats);
		f->pats = p;
	}
	view_filter_stop(f);
}
