/* otlp_stream.c - needle record --otlp-endpoint: the calls recorded, sent
 * as OpenTelemetry spans to an OTLP/HTTP collector while the program runs.
 *
 * Three stages, each on a thread of needle record's own.  The draining
 * thread hands each drained chunk here (record_stream_ops.chunk), which
 * copies it into the chunk queue (CHUNK_QUEUE_BYTES) and goes back to
 * draining.  The builder takes chunks in order, matches their events into
 * calls per thread, and makes each call of a chosen function
 * (--otlp-spans GLOB, every function without; -t TIME or longer) a span,
 * encoded at once into the current batch (otlp_pb.h, the encoding export
 * --format=otlp writes).  A span's parent is the nearest enclosing chosen
 * call of its thread, and a trace is an outermost chosen call with what
 * it encloses, as in the export.  A batch goes to the batch queue when it
 * holds BATCH_BYTES or is BATCH_AGE_NS old; the sender posts each, one
 * HTTP/1.1 POST on a kept-alive connection.
 *
 * Invariants:
 *  - the program never waits for a collector: it writes only into the
 *    trace buffer, which needle record drains whatever happens here;
 *  - the draining thread never waits either, for the builder or the
 *    collector: a full chunk queue drops the chunk (its chosen calls
 *    counted lost, and the thread's calls open across it cut, as the
 *    trace's readers cut them after lost events), a full batch queue
 *    (QUEUE_BATCHES: a slow collector) the newest batch;
 *  - every chosen call that ends is sent or counted lost: in a dropped
 *    chunk, cut, in a batch dropped, refused (a status that is not 2xx),
 *    unanswered within IO_TIMEOUT_MS (a stalled collector), unsent when
 *    the connection fails (a collector gone) or when the recording ends
 *    and FINISH_MS has passed (a recursion cut by a drop can close the
 *    wrong frame: the same approximation the trace's readers make);
 *  - the functions' names and chosen flags are written by the draining
 *    thread (as the meta file names them) before any chunk that uses them
 *    is queued, into arrays that never move (NAMES_MAX ids), and read by
 *    the builder after it dequeues the chunk: the queue's lock orders
 *    them, and a name set later (an object loaded since) is an atomic
 *    pointer;
 *  - memory is the open calls' (a frame per depth per thread), the
 *    names, at most CHUNK_QUEUE_BYTES of chunks and QUEUE_BATCHES + 1
 *    batches.
 *
 * Times: the event clock (TSC or CLOCK_MONOTONIC) mapped to Unix time by
 * two samples, needle record's at the program's start and one at each
 * chunk, and by CLOCK_REALTIME's offset read when the stream starts.
 * What a span does not carry: the values recorded with -A/-R (the
 * export's attributes), and coroutine contexts (a swapcontext's calls are
 * matched on the thread's one stack). */
#include <errno.h>
#include <fnmatch.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli/export/otlp_pb.h"
#include "cli/otlp_stream.h"
#include "cli/record/record.h"
#include "cli/util/cli_util.h"
#include "cli/util/remote.h"
#include "common/pattern.h"
#include "common/shm_layout.h"
#include "common/tsc.h"

#define BATCH_BYTES (256u << 10)
#define BATCH_AGE_NS 200000000ull
#define QUEUE_BATCHES 32
#define CHUNK_QUEUE_BYTES (32u << 20)
#define NAMES_MAX (EV_SITE_MASK + 1u)
#define IO_TIMEOUT_MS 2000
#define FINISH_MS 3000

struct sframe {
	uint32_t site;
	uint8_t chosen, inherited;
	uint64_t start_raw;
	uint64_t span;      /* its span id's counter */
	uint32_t parent;    /* depth + 1 of the nearest chosen call around it, 0: none */
	uint64_t root_span; /* the outermost chosen call's span counter around it or it: the trace */
};

struct sthread {
	uint32_t tid, serial;
	char name[16];
	struct sframe *f;
	uint32_t depth, cap;
};

struct batch {
	struct view_buf spans; /* ScopeSpans.spans fields */
	uint64_t cnt;
};

/* A drained chunk for the builder: a copy of its events, or (dropped)
 * the depth its thread's calls went down to while it ran. */
struct chunk_msg {
	struct chunk_msg *next;
	struct sec_chunk hdr;
	uint64_t raw_now, ns_now; /* a clock sample as it was drained */
	uint32_t dropped, min_depth;
	uint32_t n;
	uint64_t ev[];
};

struct stream {
	struct recording *r;
	struct http_url url;
	/* Which functions: per site id, 1 chosen, 2 not (0: not named yet),
	 * and their names (see the top). */
	_Atomic uint8_t *chosen;
	char *_Atomic *names;
	uint32_t named_upto; /* the draining thread's: ids below it have been named */
	uint64_t names_read_ns; /* ... and when it last read the meta file for new ones */
	char **patterns;
	regex_t *regex; /* per pattern, when it is one */
	size_t pattern_cnt;
	uint64_t min_raw_ns;
	/* Threads, open addressing by (tid, serial). */
	struct sthread *threads;
	size_t thread_cap, thread_cnt;
	/* Clock: Unix ns = mono + real_off; mono from raw by (raw0, ns0)
	 * and the latest sample. */
	int tsc;
	uint64_t raw0, ns0, raw_now, ns_now;
	int64_t real_off;
	uint64_t seed, next_span;
	struct view_buf resource;
	struct view_buf span_buf; /* one span being encoded */
	struct batch cur;
	uint64_t cur_since;       /* monotonic ns of cur's first span */
	/* The chunk queue, the draining thread's and the builder's. */
	pthread_mutex_t cq_lock;
	pthread_cond_t cq_cond;
	struct chunk_msg *cq_head, *cq_tail;
	size_t cq_bytes;
	int cq_stopping;
	pthread_t builder;
	int builder_up;
	/* The batch queue, the builder's and the sender's. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct batch queue[QUEUE_BATCHES];
	size_t q_head, q_cnt;
	int stopping;
	uint64_t finish_by; /* monotonic ns: the sender gives up after it */
	pthread_t sender;
	int sender_up;
	int fd;             /* the sender's connection, -1 */
	/* Accounts (under lock). */
	uint64_t sent, lost;
	char last_error[160];
};


/* ---- the functions chosen ---- */

/* The draining thread's: a function named by the meta file. */
static void on_site(void *arg, uint32_t id, const char *name)
{
	struct stream *s = arg;
	if (id >= NAMES_MAX || atomic_load_explicit(&s->names[id], memory_order_relaxed))
		return;
	int chosen = !s->pattern_cnt;
	for (size_t i = 0; i < s->pattern_cnt && !chosen; i++)
		chosen = pattern_is_regex(s->patterns[i]) ? !regexec(&s->regex[i], name, 0, NULL, 0)
							  : !fnmatch(s->patterns[i], name, 0);
	atomic_store_explicit(&s->chosen[id], chosen ? 1 : 2, memory_order_relaxed);
	/* Release: the name's bytes before the pointer (a builder that
	 * reads it without the queue's lock between). */
	atomic_store_explicit(&s->names[id], strdup(name), memory_order_release);
	if (id + 1 > s->named_upto)
		s->named_upto = id + 1;
}

static int site_chosen(struct stream *s, uint32_t site)
{
	return site < NAMES_MAX && atomic_load_explicit(&s->chosen[site], memory_order_relaxed) == 1;
}

/* ---- spans ---- */

static uint64_t unix_ns(struct stream *s, uint64_t raw)
{
	uint64_t mono = raw;
	if (s->tsc) {
		double rate = s->raw_now > s->raw0 ? (double)(s->ns_now - s->ns0) / (double)(s->raw_now - s->raw0) : 0;
		mono = s->ns0 + (uint64_t)((double)(int64_t)(raw - s->raw0) * rate);
	}
	return (uint64_t)((int64_t)mono + s->real_off);
}

static void queue_batch(struct stream *s)
{
	if (!s->cur.cnt)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->cur.spans.oom || s->q_cnt == QUEUE_BATCHES || !s->sender_up) {
		/* The collector is behind (or memory ran out): this batch is
		 * the one that goes. */
		s->lost += s->cur.cnt;
		if (s->q_cnt == QUEUE_BATCHES && !s->last_error[0])
			snprintf(s->last_error, sizeof(s->last_error), "the collector took spans more slowly than "
				 "they were made");
		free(s->cur.spans.p);
	} else {
		s->queue[(s->q_head + s->q_cnt++) % QUEUE_BATCHES] = s->cur;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	memset(&s->cur, 0, sizeof(s->cur));
}

static void emit(struct stream *s, const struct sthread *t, const struct sframe *f, uint64_t end_raw)
{
	uint8_t trace_id[16], span_id[8], parent_id[8];
	uint64_t a = otlp_id_mix(s->seed ^ f->root_span), b = otlp_id_mix(a ^ t->serial ^ 0x6e65656465ull);
	memcpy(trace_id, &a, 8);
	memcpy(trace_id + 8, &b, 8);
	uint64_t sid = otlp_id_mix(s->seed + f->span) | 1;
	memcpy(span_id, &sid, 8);
	if (f->parent) {
		uint64_t pid = otlp_id_mix(s->seed + t->f[f->parent - 1].span) | 1;
		memcpy(parent_id, &pid, 8);
	}
	char unnamed[32];
	const char *name = f->site < NAMES_MAX ? atomic_load_explicit(&s->names[f->site], memory_order_acquire) : NULL;
	if (!name) {
		snprintf(unnamed, sizeof(unnamed), "?%u", f->site);
		name = unnamed;
	}
	char tname[17];
	memcpy(tname, t->name, 16);
	tname[16] = 0;
	s->span_buf.len = 0;
	otlp_pb_span_begin(&s->span_buf, trace_id, span_id, f->parent ? parent_id : NULL, name,
			   unix_ns(s, f->start_raw), unix_ns(s, end_raw), t->tid, tname);
	if (!s->cur.cnt)
		s->cur_since = s->ns_now;
	otlp_pb_span_end(&s->cur.spans, &s->span_buf);
	s->cur.cnt++;
	if (s->cur.spans.len >= BATCH_BYTES)
		queue_batch(s);
}

static struct sthread *thread_of(struct stream *s, uint32_t tid, uint32_t serial)
{
	if (2 * (s->thread_cnt + 1) > s->thread_cap) {
		size_t cap = s->thread_cap ? s->thread_cap * 2 : 64;
		struct sthread *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < s->thread_cap; i++) {
			if (!s->threads[i].tid)
				continue;
			size_t h = otlp_id_mix((uint64_t)s->threads[i].tid << 32 | s->threads[i].serial) & (cap - 1);
			while (v[h].tid)
				h = (h + 1) & (cap - 1);
			v[h] = s->threads[i];
		}
		free(s->threads);
		s->threads = v;
		s->thread_cap = cap;
	}
	size_t h = otlp_id_mix((uint64_t)tid << 32 | serial) & (s->thread_cap - 1);
	while (s->threads[h].tid && (s->threads[h].tid != tid || s->threads[h].serial != serial))
		h = (h + 1) & (s->thread_cap - 1);
	if (!s->threads[h].tid) {
		s->threads[h].tid = tid;
		s->threads[h].serial = serial;
		s->thread_cnt++;
	}
	return &s->threads[h];
}

static int push(struct stream *s, struct sthread *t, uint32_t site, uint64_t raw, int inherited)
{
	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct sframe *f = realloc(t->f, cap * sizeof(*f));
		if (!f)
			return -1;
		t->f = f;
		t->cap = cap;
	}
	struct sframe *f = &t->f[t->depth];
	const struct sframe *up = t->depth ? &t->f[t->depth - 1] : NULL;
	f->site = site;
	f->start_raw = raw;
	f->inherited = (uint8_t)inherited;
	f->chosen = (uint8_t)site_chosen(s, site);
	f->span = ++s->next_span;
	/* The nearest chosen call around it, and the trace it is in. */
	f->parent = up ? (up->chosen && !up->inherited ? t->depth : up->parent) : 0;
	f->root_span = f->parent ? t->f[f->parent - 1].root_span : f->span;
	t->depth++;
	return 0;
}

/* The call at depth d returned at raw (and those above it, which did not
 * say so: their exits were lost). */
static void pop_to(struct stream *s, struct sthread *t, uint32_t d, uint64_t raw)
{
	while (t->depth > d) {
		struct sframe *f = &t->f[--t->depth];
		if (f->chosen && !f->inherited && unix_ns(s, raw) - unix_ns(s, f->start_raw) >= s->min_raw_ns)
			emit(s, t, f, raw);
	}
}

static void count_lost(struct stream *s, uint64_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&s->lock);
	s->lost += n;
	pthread_mutex_unlock(&s->lock);
}

/* Cut a thread's calls back to depth d: their ends are not known (events
 * lost, or a chunk dropped), so no span; the chosen ones count lost. */
static void cut_to(struct stream *s, struct sthread *t, uint32_t d)
{
	uint64_t n = 0;
	for (; t->depth > d; t->depth--)
		n += t->f[t->depth - 1].chosen && !t->f[t->depth - 1].inherited;
	count_lost(s, n);
}

/* The builder's: one chunk's events. */
static void build_chunk(struct stream *s, const struct chunk_msg *m)
{
	const struct sec_chunk *hdr = &m->hdr;
	struct sthread *t = thread_of(s, hdr->tid, hdr->serial);
	if (!t)
		return;
	memcpy(t->name, hdr->comm, sizeof(t->name));
	s->raw_now = m->raw_now;
	s->ns_now = m->ns_now;
	if (m->dropped) {
		cut_to(s, t, m->min_depth);
		return;
	}
	/* Events were dropped before this chunk: the calls above its open
	 * depth returned meanwhile, their ends unknown (no span). */
	if (hdr->lost_before && t->depth > hdr->open_depth)
		cut_to(s, t, hdr->open_depth);
	uint32_t inherit = !hdr->seq && !hdr->lost_before ? hdr->open_depth : 0;
	const uint64_t *ev = m->ev;
	for (uint32_t i = 0, n = m->n; i < n; i++) {
		uint64_t w = ev[i], raw = hdr->base + ev_delta(w);
		uint32_t site = ev_site(w);
		switch (ev_type(w)) {
		case EV_ENTRY:
			site &= ~EV_ENTRY_FLAT;
			if (push(s, t, site, raw, inherit > 0))
				return;
			if (inherit)
				inherit--;
			break;
		case EV_EXIT:
		case EV_UNWIND:
			for (uint32_t d = t->depth; d-- > 0;)
				if (t->f[d].site == site) {
					pop_to(s, t, d, raw);
					break;
				}
			break;
		default: /* EV_SWITCH: a data block (skipped), or a coroutine switch */
			if (site == EV_DATA_SITE)
				i += (uint32_t)ev_delta(w);
			break;
		}
	}
	if (s->cur.cnt && s->ns_now - s->cur_since >= BATCH_AGE_NS)
		queue_batch(s);
}

/* The builder and the sender run only when a CPU has nothing else to do:
 * never before the draining thread, nor the program, whose events are
 * the trace (on a machine with few CPUs, a builder at the same priority
 * slowed draining until the buffer overflowed). */
static void run_idle(void)
{
	struct sched_param p = { 0 };
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &p);
}

static void *builder_main(void *arg)
{
	struct stream *s = arg;
	run_idle();
	pthread_mutex_lock(&s->cq_lock);
	for (;;) {
		while (!s->cq_head && !s->cq_stopping)
			pthread_cond_wait(&s->cq_cond, &s->cq_lock);
		struct chunk_msg *m = s->cq_head;
		if (!m)
			break;
		s->cq_head = m->next;
		if (!s->cq_head)
			s->cq_tail = NULL;
		s->cq_bytes -= sizeof(*m) + (size_t)m->n * 8;
		pthread_mutex_unlock(&s->cq_lock);
		build_chunk(s, m);
		free(m);
		pthread_mutex_lock(&s->cq_lock);
	}
	pthread_mutex_unlock(&s->cq_lock);
	/* The last batch: calls still open at the end have no span. */
	queue_batch(s);
	return NULL;
}

/* The draining thread's: a chunk drained, queued for the builder or
 * dropped, never waited for. */
static void on_chunk(void *arg, const struct sec_chunk *hdr, const uint64_t *ev, uint32_t n)
{
	struct stream *s = arg;
	/* A function of an object loaded since the names were read: read
	 * the ones the agent has added, before the chunk is queued. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t w = ev[i];
		if (ev_type(w) == EV_SWITCH && ev_site(w) == EV_DATA_SITE) {
			i += (uint32_t)ev_delta(w);
			continue;
		}
		if (ev_type(w) == EV_ENTRY && (ev_site(w) & ~EV_ENTRY_FLAT) >= s->named_upto) {
			/* At most every 10 ms: an id the meta file never names
			 * (a program exec'ed past the trace's limit) must not
			 * make every chunk read it. */
			uint64_t now = monotonic_ns();
			if (now - s->names_read_ns >= 10000000ull) {
				s->names_read_ns = now;
				record_write_symbols(s->r);
			}
			break;
		}
	}
	size_t bytes = sizeof(struct chunk_msg) + (size_t)n * 8;
	pthread_mutex_lock(&s->cq_lock);
	int room = s->builder_up && s->cq_bytes + bytes <= CHUNK_QUEUE_BYTES;
	pthread_mutex_unlock(&s->cq_lock);
	struct chunk_msg *m = malloc(room ? bytes : sizeof(*m));
	if (!m)
		return; /* the builder then matches what it can: no span is made up */
	memset(m, 0, sizeof(*m));
	m->hdr = *hdr;
	m->raw_now = s->tsc ? tsc_read() : monotonic_ns();
	m->ns_now = monotonic_ns();
	if (room) {
		m->n = n;
		memcpy(m->ev, ev, (size_t)n * 8);
	} else {
		/* The builder is behind: this chunk's chosen calls are lost,
		 * and its thread's calls are cut to the least depth it went
		 * down to (the builder cuts them and counts them). */
		uint64_t lost = 0;
		uint32_t d = hdr->open_depth, least = d;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t w = ev[i];
			switch (ev_type(w)) {
			case EV_ENTRY:
				lost += site_chosen(s, ev_site(w) & ~EV_ENTRY_FLAT);
				d++;
				break;
			case EV_EXIT:
			case EV_UNWIND:
				if (d && --d < least)
					least = d;
				break;
			default:
				if (ev_site(w) == EV_DATA_SITE)
					i += (uint32_t)ev_delta(w);
				break;
			}
		}
		m->dropped = 1;
		m->min_depth = least;
		count_lost(s, lost);
		bytes = sizeof(*m);
		pthread_mutex_lock(&s->lock);
		if (!s->last_error[0])
			snprintf(s->last_error, sizeof(s->last_error), "spans were made more slowly than calls");
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_lock(&s->cq_lock);
	if (s->cq_tail)
		s->cq_tail->next = m;
	else
		s->cq_head = m;
	s->cq_tail = m;
	s->cq_bytes += bytes;
	pthread_cond_signal(&s->cq_cond);
	pthread_mutex_unlock(&s->cq_lock);
}

/* ---- the sender ---- */

static void fail_note(struct stream *s, const char *fmt, const char *detail)
{
	pthread_mutex_lock(&s->lock);
	snprintf(s->last_error, sizeof(s->last_error), fmt, detail);
	pthread_mutex_unlock(&s->lock);
}

static void disconnect(struct stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static int connect_collector(struct stream *s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int err = getaddrinfo(s->url.host, s->url.port, &hints, &res);
	if (err) {
		fail_note(s, "%s", gai_strerror(err));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		struct timeval tv = { .tv_sec = IO_TIMEOUT_MS / 1000, .tv_usec = IO_TIMEOUT_MS % 1000 * 1000 };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			s->fd = fd;
			break;
		}
		fail_note(s, "cannot connect: %s", strerror(errno));
		close(fd);
	}
	freeaddrinfo(res);
	return s->fd >= 0 ? 0 : -1;
}

/* The response to one POST: its status, or -1 (the connection is then
 * closed).  The body is read and dropped (Content-Length or chunked);
 * *keep is 0 when the connection cannot carry another request. */
static int read_response(struct stream *s, int *keep)
{
	char buf[8192];
	size_t len = 0;
	char *end = NULL;
	*keep = 1;
	while (!end) {
		if (len == sizeof(buf) - 1)
			return -1;
		ssize_t r = recv(s->fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		len += (size_t)r;
		buf[len] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	int status;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	size_t head = (size_t)(end + 4 - buf), have = len - head;
	long long body = -1;
	for (char *l = strstr(buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
		if (!strncasecmp(l + 2, "content-length:", 15))
			body = atoll(l + 17);
		else if (!strncasecmp(l + 2, "transfer-encoding:", 18) || !strncasecmp(l + 2, "connection: close", 17))
			*keep = 0; /* chunked bodies are not parsed: a new connection next time */
	}
	if (body < 0) {
		*keep = 0;
		return status;
	}
	while ((long long)have < body) {
		ssize_t r = recv(s->fd, buf, sizeof(buf), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		have += (size_t)r;
	}
	return status;
}

static int post(struct stream *s, const struct batch *b)
{
	struct view_buf body = { 0 };
	otlp_pb_request_head(&body, &s->resource, b->spans.len);
	pb_raw(&body, b->spans.p, b->spans.len);
	if (body.oom) {
		free(body.p);
		fail_note(s, "%s", "out of memory");
		return -1;
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		if (s->fd < 0 && connect_collector(s))
			break;
		char head[1024];
		int hn = snprintf(head, sizeof(head),
				  "POST %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: needle\r\n"
				  "Content-Type: application/x-protobuf\r\nContent-Length: %zu\r\n\r\n",
				  s->url.path, s->url.host, s->url.port, body.len);
		int keep = 0, status = -1, err = 0;
		errno = 0;
		if (!remote_send_all(s->fd, head, (size_t)hn) && !remote_send_all(s->fd, body.p, body.len))
			status = read_response(s, &keep);
		err = errno;
		if (status < 0 || !keep)
			disconnect(s);
		if (status >= 200 && status < 300) {
			free(body.p);
			return 0;
		}
		if (status >= 0) {
			char code[16];
			snprintf(code, sizeof(code), "%d", status);
			fail_note(s, "the collector answered %s", code);
			break;
		}
		/* A kept-alive connection the collector closed meanwhile:
		 * once more on a new one.  A stalled one: given up. */
		if (err == EAGAIN || err == EWOULDBLOCK) {
			fail_note(s, "%s", "the collector did not answer within 2 s");
			break;
		}
		fail_note(s, "the connection failed: %s", strerror(err ? err : EPIPE));
	}
	free(body.p);
	return -1;
}

static void *sender_main(void *arg)
{
	struct stream *s = arg;
	run_idle();
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->q_cnt && !s->stopping)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->q_cnt)
			break;
		if (s->stopping && monotonic_ns() > s->finish_by) {
			/* The recording ended and the collector is too slow:
			 * what is left is counted lost. */
			for (; s->q_cnt; s->q_cnt--, s->q_head = (s->q_head + 1) % QUEUE_BATCHES) {
				s->lost += s->queue[s->q_head].cnt;
				free(s->queue[s->q_head].spans.p);
			}
			snprintf(s->last_error, sizeof(s->last_error), "the collector had not taken them %d s after the end",
				 FINISH_MS / 1000);
			break;
		}
		struct batch b = s->queue[s->q_head];
		s->q_head = (s->q_head + 1) % QUEUE_BATCHES;
		s->q_cnt--;
		pthread_mutex_unlock(&s->lock);
		int ok = !post(s, &b);
		free(b.spans.p);
		pthread_mutex_lock(&s->lock);
		if (ok)
			s->sent += b.cnt;
		else
			s->lost += b.cnt;
	}
	pthread_mutex_unlock(&s->lock);
	disconnect(s);
	return NULL;
}

/* ---- the recording's end ---- */

static void on_finish(void *arg, char *line, size_t len)
{
	struct stream *s = arg;
	/* The builder takes what is queued, then the last batch. */
	pthread_mutex_lock(&s->cq_lock);
	s->cq_stopping = 1;
	pthread_cond_signal(&s->cq_cond);
	pthread_mutex_unlock(&s->cq_lock);
	if (s->builder_up)
		pthread_join(s->builder, NULL);
	else
		queue_batch(s);
	pthread_mutex_lock(&s->lock);
	s->stopping = 1;
	s->finish_by = monotonic_ns() + FINISH_MS * 1000000ull;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->sender_up)
		pthread_join(s->sender, NULL);
	snprintf(line, len, "otlp: %llu spans sent to %s", (unsigned long long)s->sent, s->r->o->otlp_endpoint);
	if (s->lost) {
		size_t n = strlen(line);
		snprintf(line + n, len - n, "; %llu LOST (%s)", (unsigned long long)s->lost,
			 s->last_error[0] ? s->last_error : "not sent");
	}
	for (size_t i = 0; i < s->thread_cap; i++)
		free(s->threads[i].f);
	free(s->threads);
	for (uint32_t i = 0; i < s->named_upto; i++)
		free(atomic_load_explicit(&s->names[i], memory_order_relaxed));
	free(s->names);
	free((void *)s->chosen);
	for (struct chunk_msg *m = s->cq_head, *next; m; m = next) {
		next = m->next;
		free(m);
	}
	pthread_mutex_destroy(&s->cq_lock);
	pthread_cond_destroy(&s->cq_cond);
	for (size_t i = 0; i < s->pattern_cnt; i++) {
		if (pattern_is_regex(s->patterns[i]))
			regfree(&s->regex[i]);
		free(s->patterns[i]);
	}
	free(s->patterns);
	free(s->regex);
	free(s->resource.p);
	free(s->span_buf.p);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static const struct record_stream_ops ops = {
	.site = on_site,
	.chunk = on_chunk,
	.finish = on_finish,
};

void *otlp_stream_open(struct recording *r, const struct record_stream_ops **out)
{
	struct stream *s = calloc(1, sizeof(*s));
	if (!s) {
		cli_error("--otlp-endpoint: out of memory: no spans are sent");
		return NULL;
	}
	s->r = r;
	s->fd = -1;
	/* Calloc'ed: pages of ids never named are never touched. */
	s->names = calloc(NAMES_MAX, sizeof(*s->names));
	s->chosen = calloc(NAMES_MAX, sizeof(*s->chosen));
	if (!s->names || !s->chosen) {
		free(s->names);
		free((void *)s->chosen);
		free(s);
		cli_error("--otlp-endpoint: out of memory: no spans are sent");
		return NULL;
	}
	pthread_mutex_init(&s->cq_lock, NULL);
	pthread_cond_init(&s->cq_cond, NULL);
	s->min_raw_ns = r->o->time_filter_ns;
	cli_parse_http_url(r->o->otlp_endpoint, &s->url); /* checked by the options */
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	/* The patterns: globs, or regular expressions found anywhere in a
	 * name (uftrace's), as -F takes them. */
	for (const char *p = r->o->otlp_spans; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char **v = realloc(s->patterns, (s->pattern_cnt + 1) * sizeof(*v));
		regex_t *rx = realloc(s->regex, (s->pattern_cnt + 1) * sizeof(*rx));
		if (v)
			s->patterns = v;
		if (rx)
			s->regex = rx;
		if (!v || !rx || !(v[s->pattern_cnt] = strndup(p, n)))
			break;
		if (pattern_is_regex(v[s->pattern_cnt]) && regcomp(&rx[s->pattern_cnt], v[s->pattern_cnt], REG_EXTENDED | REG_NOSUB)) {
			cli_error("--otlp-spans '%s': not a regular expression; every function's calls are sent", v[s->pattern_cnt]);
			free(v[s->pattern_cnt]);
			break;
		}
		s->pattern_cnt++;
		p = nl ? nl + 1 : NULL;
	}
	s->tsc = r->shm->clock_source != CLOCK_SOURCE_MONOTONIC;
	s->raw0 = s->tsc ? r->raw0 : r->ns0;
	s->ns0 = r->ns0;
	s->raw_now = s->tsc ? tsc_read() : monotonic_ns();
	s->ns_now = monotonic_ns();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	s->real_off = (int64_t)((uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec) - (int64_t)monotonic_ns();
	if (getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != sizeof(s->seed))
		s->seed = otlp_id_mix((uint64_t)getpid() ^ s->ns_now);
	/* The resource: the program. */
	const char *prog = r->argv && r->argv[0] ? r->argv[0] : "program", *base = strrchr(prog, '/');
	char cmd[4096];
	size_t n = 0;
	cmd[0] = 0;
	for (int i = 0; r->argv && r->argv[i] && n + 2 < sizeof(cmd); i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s%s", i ? " " : "", r->argv[i]);
	otlp_pb_resource(&s->resource, base ? base + 1 : prog, r->pid, cmd, prog);
	/* Without the sender every batch counts lost (queue_batch); without
	 * the builder every chunk's calls (on_chunk). */
	s->sender_up = !pthread_create(&s->sender, NULL, sender_main, s);
	s->builder_up = !pthread_create(&s->builder, NULL, builder_main, s);
	if (!s->sender_up || !s->builder_up)
		cli_error("--otlp-endpoint: cannot start the stream's threads; its spans are counted lost");
	*out = &ops;
	return s;
}
