/* needle_module.c - `import needle`: needle's traces from Python, the
 * reader's streaming iteration as Python objects.
 *
 *   t = needle.open("needle.data")          # needle.Error says what is wrong
 *   t.path, t.pid, t.command, t.exit_status, t.threads, t.monotonic_base
 *   for ev in t.events():                   # or t.events(tid=TID)
 *       ev.kind      'entry', 'exit', 'lost', 'switch' or 'kernel'
 *       ev.time      nanoseconds since the trace's first event
 *       ev.tid, ev.depth, ev.name, ev.address
 *       ev.duration  an exit's call, in ns (None otherwise)
 *       ev.args      an entry's recorded values: a list of (name, value)
 *       ev.retval    an exit's recorded return value
 *       ev.reads     an entry's or exit's -T FUNC@read= readings: a tuple
 *                    of (name, value), uftrace's names (vmsize, vmrss and
 *                    shared in KB; major, minor page faults)
 *       ev.cpu       record -W cpu: the CPU an entry or exit notes its
 *                    thread moved to (None when it notes none)
 *
 * Values are Python ints for integers, floats for floating point, str for
 * strings (their text without quotes) and the text replay shows for the
 * rest (a struct's fields, a flags enum).  Events come in time order,
 * all threads merged, as replay reads them.
 *
 * Invariants: an iterator holds the reader's cursor (memory bounded by
 * the deepest stack, as the views); a function's name is one str object
 * per site, made once; an event is one struct sequence (a C array of
 * fields, no dict), so a loop over 10M events stays in seconds.  The
 * trace is closed when its object and its last iterator are gone. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/view/view_format.h"
#include "reader/trace_reader.h"

static PyObject *needle_error;

/* ---- Trace ---- */

typedef struct {
	PyObject_HEAD
	struct trace *t;
	PyObject **names; /* by site: its name, made at first use */
	size_t name_cnt;
} TraceObject;

static void trace_dealloc(TraceObject *self)
{
	for (size_t i = 0; i < self->name_cnt; i++)
		Py_XDECREF(self->names[i]);
	free(self->names);
	/* As every view says it (view_close): the reader's steps, for the
	 * tests that check that they grow with the events, not the depth. */
	if (self->t && getenv("NEEDLE_VIEW_WORK"))
		fprintf(stderr, "needle: view work: %llu steps, %llu events\n", (unsigned long long)self->t->work,
			(unsigned long long)self->t->end.events);
	if (self->t)
		trace_close(self->t);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *site_name(TraceObject *self, uint32_t site)
{
	if (site >= self->name_cnt) {
		size_t n = self->name_cnt ? self->name_cnt : 256;
		while (n <= site)
			n *= 2;
		PyObject **v = realloc(self->names, n * sizeof(*v));
		if (!v)
			return PyErr_NoMemory();
		memset(v + self->name_cnt, 0, (n - self->name_cnt) * sizeof(*v));
		self->names = v;
		self->name_cnt = n;
	}
	if (!self->names[site])
		self->names[site] = PyUnicode_DecodeUTF8(trace_site_name(self->t, site),
							 (Py_ssize_t)strlen(trace_site_name(self->t, site)), "replace");
	Py_XINCREF(self->names[site]);
	return self->names[site];
}

static PyObject *trace_get_threads(TraceObject *self, void *closure)
{
	(void)closure;
	PyObject *list = PyList_New((Py_ssize_t)self->t->thread_cnt);
	if (!list)
		return NULL;
	for (size_t i = 0; i < self->t->thread_cnt; i++) {
		struct trace_thread *th = &self->t->threads[i];
		PyObject *row = Py_BuildValue("{s:I,s:I,s:s,s:K,s:K,s:I,s:I}", "tid", th->tid, "serial", th->serial,
					      "name", th->name, "events", (unsigned long long)th->events, "lost",
					      (unsigned long long)th->lost, "pid", th->pid, "ppid", th->ppid);
		if (!row) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, row);
	}
	return list;
}

static PyObject *trace_get_command(TraceObject *self, void *closure)
{
	(void)closure;
	uint32_t n = self->t->argv ? self->t->process.argc : 0;
	PyObject *list = PyList_New(n);
	for (uint32_t i = 0; list && i < n; i++) {
		PyObject *s = PyUnicode_DecodeUTF8(self->t->argv[i], (Py_ssize_t)strlen(self->t->argv[i]), "replace");
		if (!s) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, i, s);
	}
	return list;
}

static PyObject *trace_get_pid(TraceObject *self, void *closure)
{
	(void)closure;
	if (!self->t->have_process)
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLong(self->t->process.pid);
}

static PyObject *trace_get_exit_status(TraceObject *self, void *closure)
{
	(void)closure;
	if (!self->t->have_process)
		Py_RETURN_NONE;
	return PyLong_FromLong(self->t->process.wait_status);
}

static PyObject *trace_get_path(TraceObject *self, void *closure)
{
	(void)closure;
	return PyUnicode_DecodeFSDefault(self->t->path);
}

static PyObject *trace_get_complete(TraceObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(!self->t->incomplete);
}

static PyObject *trace_get_monotonic_base(TraceObject *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(trace_monotonic_base(self->t));
}

static PyGetSetDef trace_getset[] = {
	{ "monotonic_base", (getter)trace_get_monotonic_base, NULL,
	  "CLOCK_MONOTONIC nanoseconds of the first event: an event's time + this is its clock time", NULL },
	{ "path", (getter)trace_get_path, NULL, "the trace file", NULL },
	{ "pid", (getter)trace_get_pid, NULL, "the recorded process's pid (None: not known)", NULL },
	{ "command", (getter)trace_get_command, NULL, "the recorded command line, a list", NULL },
	{ "exit_status", (getter)trace_get_exit_status, NULL, "its wait(2) status (None: not known)", NULL },
	{ "threads", (getter)trace_get_threads, NULL, "the threads: dicts of tid, serial, name, events, lost, pid, ppid (0: not in the file)", NULL },
	{ "complete", (getter)trace_get_complete, NULL, "False if the recording did not finish the file", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyObject *trace_events(TraceObject *self, PyObject *args, PyObject *kw);
static PyObject *trace_script(TraceObject *self, PyObject *args);

static PyMethodDef trace_methods[] = {
	{ "events", (PyCFunction)(void (*)(void))trace_events, METH_VARARGS | METH_KEYWORDS,
	  "events(tid=0): an iterator over the trace's events in time order (one thread's with tid)" },
	{ "_script", (PyCFunction)(void (*)(void))trace_script, METH_VARARGS,
	  "_script(entry, exit, reads, sched, keep, tid, base): needle script's loop (see needle_module.c)" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject TraceType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "needle.Trace",
	.tp_basicsize = sizeof(TraceObject),
	.tp_dealloc = (destructor)trace_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A needle trace file, opened with needle.open(path).",
	.tp_methods = trace_methods,
	.tp_getset = trace_getset,
};

/* ---- Event ---- */

static PyStructSequence_Field event_fields[] = {
	{ "kind", "'entry', 'exit', 'lost', 'switch' or 'kernel'" },
	{ "time", "nanoseconds since the trace's first event" },
	{ "tid", "the thread" },
	{ "depth", "nesting depth of the call (0 outermost)" },
	{ "name", "the function (None for lost, switch and kernel events)" },
	{ "address", "the function's address" },
	{ "duration", "an exit: the call's nanoseconds (None if not known)" },
	{ "args", "an entry: its recorded values, a list of (name, value); else None" },
	{ "retval", "an exit: its recorded return value; else None" },
	{ "lost", "a lost event: how many were dropped; else None" },
	{ "reads", "an entry or exit: its -T read= readings, a tuple of (name, value); else None" },
	{ "cpu", "an entry or exit noting a move (record -W cpu): the CPU its thread now runs on; else None" },
	{ NULL, NULL },
};

static PyStructSequence_Desc event_desc = {
	"needle.Event", "One event of a trace (an entry, an exit, a loss, ...).", event_fields, 12,
};

static PyTypeObject *EventType;
static PyObject *kind_str[6];

/* A value as Python has it: an int, a float, a string's text, or what
 * replay shows. */
static PyObject *value_object(const char *text)
{
	size_t n = strlen(text);
	if (n >= 2 && text[0] == '"' && text[n - 1] == '"') {
		/* A string: its text, the escapes replay adds undone. */
		char *out = malloc(n);
		size_t k = 0;
		if (!out)
			return PyErr_NoMemory();
		for (size_t i = 1; i + 1 < n; i++) {
			char c = text[i];
			if (c == '\\' && i + 2 < n) {
				char e = text[++i];
				c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
			}
			out[k++] = c;
		}
		PyObject *s = PyUnicode_DecodeUTF8(out, (Py_ssize_t)k, "replace");
		free(out);
		return s;
	}
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 0);
	if (n && !*end && !errno)
		return PyLong_FromLongLong(v);
	errno = 0;
	unsigned long long u = strtoull(text, &end, 0);
	if (n && text[0] != '-' && !*end && !errno)
		return PyLong_FromUnsignedLongLong(u);
	double d = strtod(text, &end);
	if (n && !*end && (text[0] == '-' || text[0] == '.' || (text[0] >= '0' && text[0] <= '9')))
		return PyFloat_FromDouble(d);
	return PyUnicode_DecodeUTF8(text, (Py_ssize_t)n, "replace");
}

typedef struct {
	PyObject_HEAD
	TraceObject *trace;
	struct trace_iter it;
	int done;
} IterObject;

static void iter_dealloc(IterObject *self)
{
	trace_iter_free(&self->it);
	Py_XDECREF(self->trace);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *values_of(TraceObject *tr, const struct trace_event *ev, int ret)
{
	char name[64], val[512];
	size_t at = 0;
	PyObject *list = ret ? NULL : PyList_New(0);
	if (!ret && !list)
		return NULL;
	while (view_value_next(tr->t, ev, &at, name, sizeof(name), val, sizeof(val))) {
		PyObject *v = value_object(val);
		if (!v) {
			Py_XDECREF(list);
			return NULL;
		}
		if (ret)
			return v; /* the return value: its first value */
		PyObject *pair = Py_BuildValue("(sN)", name, v);
		if (!pair || PyList_Append(list, pair)) {
			Py_XDECREF(pair);
			Py_DECREF(list);
			return NULL;
		}
		Py_DECREF(pair);
	}
	if (ret)
		Py_RETURN_NONE;
	if (!PyList_GET_SIZE(list)) {
		/* Only readings (-T read=), which are ev.reads. */
		Py_DECREF(list);
		Py_RETURN_NONE;
	}
	return list;
}

/* The readings -T FUNC@read= took at an entry or exit, as uftrace's
 * script sees their data: ((name, value), ...), or None. */
static PyObject *reads_of(const struct trace_event *ev)
{
	/* By ARG_READ_* index. */
	static const char *const names[VIEW_READINGS] = { "", "vmsize", "vmrss", "shared", "major", "minor" };
	uint64_t v[VIEW_READINGS];
	unsigned found = ev->data_len ? view_readings(ev->data, ev->data_len, v) : 0;
	if (!found)
		Py_RETURN_NONE;
	PyObject *tuple = PyTuple_New(__builtin_popcount(found));
	if (!tuple)
		return NULL;
	Py_ssize_t k = 0;
	for (unsigned i = 1; i < VIEW_READINGS; i++) {
		if (!(found & (1u << i)))
			continue;
		PyObject *pair = Py_BuildValue("(sK)", names[i], (unsigned long long)v[i]);
		if (!pair) {
			Py_DECREF(tuple);
			return NULL;
		}
		PyTuple_SET_ITEM(tuple, k++, pair);
	}
	return tuple;
}

static PyObject *iter_next(IterObject *self)
{
	struct trace_event ev;
	for (;;) {
		if (self->done)
			return NULL;
		int r = trace_iter_next(&self->it, &ev);
		if (r < 0) {
			self->done = 1;
			PyErr_Format(needle_error, "%s: %s", self->trace->t->path, self->it.err);
			return NULL;
		}
		if (r == 0) {
			self->done = 1;
			return NULL;
		}
		/* Bookkeeping of the reader, not events of the program: the
		 * calls a forked child inherits, and exits made up for calls
		 * still running at the end. */
		if ((ev.kind == TEV_ENTRY && (ev.flags & TEV_INHERITED)) || (ev.kind == TEV_EXIT && (ev.flags & TEV_OPEN)))
			continue;
		break;
	}
	PyObject *e = PyStructSequence_New(EventType);
	if (!e)
		return NULL;
	int call = ev.kind == TEV_ENTRY || ev.kind == TEV_EXIT;
	PyObject *kind = kind_str[ev.kind < 6 ? ev.kind : 0];
	Py_INCREF(kind);
	PyStructSequence_SET_ITEM(e, 0, kind);
	PyStructSequence_SET_ITEM(e, 1, PyLong_FromUnsignedLongLong(ev.ns));
	PyStructSequence_SET_ITEM(e, 2, PyLong_FromUnsignedLong(ev.tid));
	PyStructSequence_SET_ITEM(e, 3, PyLong_FromUnsignedLong(ev.depth));
	if (call) {
		PyStructSequence_SET_ITEM(e, 4, site_name(self->trace, ev.site));
		PyStructSequence_SET_ITEM(e, 5, PyLong_FromUnsignedLongLong(
							ev.site < self->trace->t->site_cap ? self->trace->t->sites[ev.site].func_ip : 0));
	} else {
		Py_INCREF(Py_None);
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 4, Py_None);
		PyStructSequence_SET_ITEM(e, 5, Py_None);
	}
	int timed = ev.kind == TEV_EXIT && !(ev.flags & (TEV_ORPHAN | TEV_EXIT_LOST | TEV_BEFORE));
	if (timed) {
		PyStructSequence_SET_ITEM(e, 6, PyLong_FromUnsignedLongLong(ev.ns - ev.entry_ns));
	} else {
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 6, Py_None);
	}
	if (ev.kind == TEV_ENTRY && ev.data_len) {
		PyStructSequence_SET_ITEM(e, 7, values_of(self->trace, &ev, 0));
	} else {
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 7, Py_None);
	}
	if (ev.kind == TEV_EXIT && ev.data_len) {
		PyStructSequence_SET_ITEM(e, 8, values_of(self->trace, &ev, 1));
	} else {
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 8, Py_None);
	}
	if (ev.kind == TEV_LOST) {
		PyStructSequence_SET_ITEM(e, 9, PyLong_FromUnsignedLongLong(ev.lost));
	} else {
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 9, Py_None);
	}
	if (call) {
		PyStructSequence_SET_ITEM(e, 10, reads_of(&ev));
	} else {
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 10, Py_None);
	}
	uint64_t cpu;
	if (call && view_watch_cpu(ev.data, ev.data_len, &cpu)) {
		PyStructSequence_SET_ITEM(e, 11, PyLong_FromUnsignedLongLong(cpu));
	} else {
		Py_INCREF(Py_None);
		PyStructSequence_SET_ITEM(e, 11, Py_None);
	}
	for (Py_ssize_t i = 0; i < 12; i++)
		if (!PyStructSequence_GET_ITEM(e, i)) {
			Py_DECREF(e);
			return NULL;
		}
	return e;
}

static PyTypeObject IterType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "needle.EventIterator",
	.tp_basicsize = sizeof(IterObject),
	.tp_dealloc = (destructor)iter_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)iter_next,
};

static PyObject *trace_events(TraceObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "tid", NULL };
	unsigned int tid = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|I", names, &tid))
		return NULL;
	if (tid && !trace_thread_find(self->t, tid))
		return PyErr_Format(needle_error, "thread %u is not in %s", tid, self->t->path);
	IterObject *it = PyObject_New(IterObject, &IterType);
	if (!it)
		return NULL;
	it->trace = self;
	it->done = 0;
	Py_INCREF(self);
	if (trace_iter_init(&it->it, self->t, tid)) {
		PyErr_Format(needle_error, "%s: %s", self->t->path, it->it.err);
		Py_DECREF(it);
		return NULL;
	}
	return (PyObject *)it;
}

/* ---- needle script's loop ----
 *
 * t._script(entry, exit, reads, sched, keep, tid, base) calls uftrace's
 * callbacks over the events, as the loop of script.c's driver would in
 * Python, for a tenth of the cost per event: no Event object, the ctx
 * dict built here with interned keys.  entry and exit are
 * uftrace_entry/uftrace_exit or None; keep a set of names (UFTRACE_FUNCS)
 * or None; tid 0 or one thread's; base the trace's CLOCK_MONOTONIC start.
 * reads, when not None, is called as reads(kind, tid, depth, timestamp,
 * address, readings) for every entry (after its callback) and every exit
 * (before its callback), readings the tuple ev.reads would hold or None:
 * the driver pairs them into uftrace_event's read:/diff: events.  sched,
 * when not None, is uftrace_event itself, called for each linux:schedule
 * entry and exit (-E) as "linux:sched-out" and "linux:sched-in". */

static PyObject *key_tid, *key_depth, *key_timestamp, *key_address, *key_name, *key_args, *key_duration,
	*key_retval, *name_sched_out, *name_sched_in, *str_empty, *str_entry, *str_exit;

static int ctx_set(PyObject *d, PyObject *key, PyObject *v)
{
	if (!v)
		return -1;
	int r = PyDict_SetItem(d, key, v);
	Py_DECREF(v);
	return r;
}

/* {tid, depth, timestamp, address, name}: the ctx every callback gets. */
static PyObject *ctx_new(const struct trace_event *ev, uint64_t base, uint64_t address, PyObject *name)
{
	PyObject *d = PyDict_New();
	if (!d)
		return NULL;
	if (ctx_set(d, key_tid, PyLong_FromUnsignedLong(ev->tid)) ||
	    ctx_set(d, key_depth, PyLong_FromUnsignedLong(ev->depth)) ||
	    ctx_set(d, key_timestamp, PyLong_FromUnsignedLongLong(base + ev->ns)) ||
	    ctx_set(d, key_address, PyLong_FromUnsignedLongLong(address)) || PyDict_SetItem(d, key_name, name)) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

static int call_with(PyObject *fn, PyObject *arg)
{
	if (!arg)
		return -1;
	PyObject *r = PyObject_CallOneArg(fn, arg);
	Py_DECREF(arg);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

static int call_reads(TraceObject *self, PyObject *fn, const struct trace_event *ev, uint64_t base, int entry)
{
	PyObject *rd = reads_of(ev);
	if (!rd)
		return -1;
	PyObject *r = PyObject_CallFunction(fn, "OkkKKN", entry ? str_entry : str_exit, (unsigned long)ev->tid,
					    (unsigned long)ev->depth, (unsigned long long)(base + ev->ns),
					    (unsigned long long)(ev->site < self->t->site_cap ? self->t->sites[ev->site].func_ip : 0),
					    rd);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

/* One entry or exit through the callbacks: 0, or -1 with a Python error. */
static int script_event(TraceObject *self, const struct trace_event *ev, PyObject *const cb[4], PyObject *keep,
			uint64_t base)
{
	int entry = ev->kind == TEV_ENTRY;
	const struct trace_site *ts = ev->site < self->t->site_cap ? &self->t->sites[ev->site] : NULL;
	if (ts && (ts->flags & TRACE_SITE_EVENT)) {
		if (!cb[3])
			return 0;
		PyObject *d = ctx_new(ev, base, 0, entry ? name_sched_out : name_sched_in);
		if (d && PyDict_SetItem(d, key_args, str_empty)) {
			Py_DECREF(d);
			return -1;
		}
		return call_with(cb[3], d);
	}
	if (cb[2] && !entry && call_reads(self, cb[2], ev, base, 0))
		return -1;
	PyObject *fn = entry ? cb[0] : cb[1];
	if (fn) {
		PyObject *name = site_name(self, ev->site);
		if (!name)
			return -1;
		int wanted = keep ? PySequence_Contains(keep, name) : 1;
		if (wanted < 0) {
			Py_DECREF(name);
			return -1;
		}
		if (wanted) {
			PyObject *d = ctx_new(ev, base, ts ? ts->func_ip : 0, name);
			Py_DECREF(name);
			if (!d)
				return -1;
			int bad = 0;
			if (entry && ev->data_len) {
				PyObject *pairs = values_of(self, ev, 0);
				if (!pairs) {
					bad = 1;
				} else if (pairs != Py_None) {
					Py_ssize_t n = PyList_GET_SIZE(pairs);
					PyObject *vals = PyList_New(n);
					for (Py_ssize_t i = 0; vals && i < n; i++) {
						PyObject *v = PyTuple_GET_ITEM(PyList_GET_ITEM(pairs, i), 1);
						Py_INCREF(v);
						PyList_SET_ITEM(vals, i, v);
					}
					bad = ctx_set(d, key_args, vals) != 0;
				}
				Py_XDECREF(pairs);
			} else if (!entry) {
				if (!(ev->flags & (TEV_ORPHAN | TEV_EXIT_LOST | TEV_BEFORE)))
					bad = ctx_set(d, key_duration, PyLong_FromUnsignedLongLong(ev->ns - ev->entry_ns));
				if (!bad && ev->data_len) {
					PyObject *rv = values_of(self, ev, 1);
					if (!rv)
						bad = 1;
					else if (rv == Py_None)
						Py_DECREF(rv);
					else
						bad = ctx_set(d, key_retval, rv) != 0;
				}
			}
			if (bad) {
				Py_DECREF(d);
				return -1;
			}
			if (call_with(fn, d))
				return -1;
		} else {
			Py_DECREF(name);
		}
	}
	if (cb[2] && entry && call_reads(self, cb[2], ev, base, 1))
		return -1;
	return 0;
}

static PyObject *trace_script(TraceObject *self, PyObject *args)
{
	PyObject *cb[4], *keep;
	unsigned int tid;
	unsigned long long base;
	if (!PyArg_ParseTuple(args, "OOOOOIK", &cb[0], &cb[1], &cb[2], &cb[3], &keep, &tid, &base))
		return NULL;
	for (int i = 0; i < 4; i++)
		if (cb[i] == Py_None)
			cb[i] = NULL;
	if (keep == Py_None)
		keep = NULL;
	if (tid && !trace_thread_find(self->t, tid))
		return PyErr_Format(needle_error, "thread %u is not in %s", tid, self->t->path);
	struct trace_iter it;
	if (trace_iter_init(&it, self->t, tid)) {
		PyErr_Format(needle_error, "%s: %s", self->t->path, it.err);
		trace_iter_free(&it);
		return NULL;
	}
	struct trace_event ev;
	int r, failed = 0;
	uint64_t n = 0;
	while ((r = trace_iter_next(&it, &ev)) > 0) {
		/* Ctrl-C, even with no callback running Python code. */
		if (!(++n & 0xffff) && PyErr_CheckSignals()) {
			failed = 1;
			break;
		}
		if (ev.kind != TEV_ENTRY && ev.kind != TEV_EXIT)
			continue;
		/* As events() has them: no inherited entry, no made-up exit. */
		if ((ev.kind == TEV_ENTRY && (ev.flags & TEV_INHERITED)) || (ev.kind == TEV_EXIT && (ev.flags & TEV_OPEN)))
			continue;
		if (script_event(self, &ev, cb, keep, base)) {
			failed = 1;
			break;
		}
	}
	if (r < 0 && !failed)
		PyErr_Format(needle_error, "%s: %s", self->t->path, it.err);
	trace_iter_free(&it);
	if (failed || r < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* ---- module ---- */

static PyObject *needle_open(PyObject *module, PyObject *args)
{
	(void)module;
	PyObject *path_obj;
	if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj))
		return NULL;
	char err[512] = "";
	struct trace *t = trace_open(PyBytes_AS_STRING(path_obj), err, sizeof(err));
	Py_DECREF(path_obj);
	if (!t)
		return PyErr_Format(needle_error, "%s", err);
	TraceObject *self = PyObject_New(TraceObject, &TraceType);
	if (!self) {
		trace_close(t);
		return NULL;
	}
	self->t = t;
	self->names = NULL;
	self->name_cnt = 0;
	return (PyObject *)self;
}

static PyMethodDef module_methods[] = {
	{ "open", needle_open, METH_VARARGS, "open(path): a needle trace (needle.Trace); needle.Error if it cannot" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef needle_module = {
	PyModuleDef_HEAD_INIT, "needle", "needle's traces: needle.open(path), then .events().", -1, module_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_needle(void)
{
	static const char *const kinds[6] = { "unknown", "entry", "exit", "lost", "switch", "kernel" };
	PyObject *m = PyModule_Create(&needle_module);
	if (!m)
		return NULL;
	if (PyType_Ready(&TraceType) < 0 || PyType_Ready(&IterType) < 0)
		return NULL;
	if (!(EventType = PyStructSequence_NewType(&event_desc)))
		return NULL;
	for (int i = 0; i < 6; i++)
		if (!(kind_str[i] = PyUnicode_InternFromString(kinds[i])))
			return NULL;
	struct {
		PyObject **p;
		const char *s;
	} strs[] = {
		{ &key_tid, "tid" },
		{ &key_depth, "depth" },
		{ &key_timestamp, "timestamp" },
		{ &key_address, "address" },
		{ &key_name, "name" },
		{ &key_args, "args" },
		{ &key_duration, "duration" },
		{ &key_retval, "retval" },
		{ &name_sched_out, "linux:sched-out" },
		{ &name_sched_in, "linux:sched-in" },
		{ &str_empty, "" },
		{ &str_entry, "entry" },
		{ &str_exit, "exit" },
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (!(*strs[i].p = PyUnicode_InternFromString(strs[i].s)))
			return NULL;
	needle_error = PyErr_NewException("needle.Error", PyExc_OSError, NULL);
	Py_XINCREF(needle_error);
	if (!needle_error || PyModule_AddObject(m, "Error", needle_error) < 0)
		return NULL;
	Py_INCREF(&TraceType);
	PyModule_AddObject(m, "Trace", (PyObject *)&TraceType);
	Py_INCREF(EventType);
	PyModule_AddObject(m, "Event", (PyObject *)EventType);
	return m;
}
