/* meta.c - the agent's meta file, and the metadata sections of the
 * trace.
 *
 * The agent writes its meta file (a memfd) in this order: "M <index>
 * <path>" per module and "S <id> <ip> <module> <name>" per site before it
 * patches anything, then "T <sites traced>" once attached, or "E <errno>
 * <message>" if it fails.  So once the agent says it is recording, the
 * module and site lines are complete, and the trace file can carry them
 * ahead of the first chunk: a recording cut short still names its
 * functions.  Objects the program dlopens later are appended the same way
 * (M, S and O lines) before any of their functions is traced; they are
 * read at the end, from where the first pass stopped.
 *
 * Invariants:
 *  - The meta file is read through a descriptor of its own (opened again
 *    through /proc/self/fd), never through one that shares the file
 *    offset with the agent's copy in the program.
 *  - MODULE and SITES sections are written at the start, and for objects
 *    loaded later at the end (readers gather them all); OBJECTS whole
 *    each time (readers take the last); PROCESS and THREAD sections
 *    once, at the end (readers take the last CLOCK).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/record/record.h"
#include "common/meta_protocol.h"
#include "common/shm_layout.h"

int record_meta_create(void)
{
	int fd = memfd_create("needle-meta", MFD_CLOEXEC);
	/* Sized for the records of objects dlopen'ed later.  Under a file
	 * size limit too small for that (ulimit -f) it stays unsized: the
	 * agent then traces only the objects loaded at the start. */
	if (fd >= 0 && ftruncate(fd, META_FILE_BYTES) && errno != EFBIG) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* One record line of the meta file into *line (NUL-terminated, newline
 * kept): its length, or -1 at the end (EOF, the first NUL byte, or a last
 * line without its newline). */
static ssize_t meta_line(FILE *f, char **line, size_t *cap)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != 0) {
		if (n + 2 > *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			char *p = realloc(*line, ncap);
			if (!p)
				return -1;
			*line = p;
			*cap = ncap;
		}
		(*line)[n++] = (char)c;
		if (c == '\n') {
			(*line)[n] = 0;
			return (ssize_t)n;
		}
	}
	return -1;
}

static FILE *meta_open(int meta_fd)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", meta_fd);
	if ((f = fopen(path, "re")))
		return f;
	/* No /proc: the same description, read from the start.  Only safe
	 * once the agent no longer writes, which is the case at the end. */
	int fd = dup(meta_fd);
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	rewind(f);
	return f;
}

/* The trace's ids have 21 bits (EV_ENTRY_FLAT is the 22nd); the last
 * is never given, and names no site: what an image's site that could
 * not be named is written as. */
#define TRACE_SITE_NONE (EV_ENTRY_FLAT - 1)

static struct image_map *image_get(struct recording *r, uint32_t img)
{
	if (img >= r->image_cnt) {
		if (img > 1u << 20)
			return NULL;
		struct image_map *v = realloc(r->images, (img + 1) * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + r->image_cnt, 0, (img + 1 - r->image_cnt) * sizeof(*v));
		for (size_t i = r->image_cnt; i <= img; i++)
			v[i].identity = 1;
		r->images = v;
		r->image_cnt = img + 1;
	}
	return &r->images[img];
}

/* Local number l of an image in the trace's numbering: kept while that
 * keeps the image's numbers the trace's (the first image's, mostly),
 * else the next free one.  *next is the trace's first free number. */
static uint32_t number_map(uint32_t **v, uint32_t *cap, int *identity, uint32_t l, uint32_t *next, uint32_t limit)
{
	if (l >= *cap) {
		uint32_t ncap = *cap ? *cap : 256;
		while (ncap <= l)
			ncap *= 2;
		uint32_t *p = realloc(*v, ncap * sizeof(*p));
		if (!p)
			return UINT32_MAX;
		memset(p + *cap, 0, (ncap - *cap) * sizeof(*p));
		*v = p;
		*cap = ncap;
	}
	if ((*v)[l])
		return (*v)[l] - 1;
	uint32_t g;
	if (*identity && l >= *next)
		g = l;
	else
		g = *next;
	if (g >= limit)
		return UINT32_MAX;
	if (g != l)
		*identity = 0;
	*next = g + 1;
	(*v)[l] = g + 1;
	return g;
}

/* Each call event's site through m (write: rewritten, else only
 * looked up): how many name a site m does not have yet. */
static uint32_t translate_pass(const struct image_map *m, uint64_t *ev, uint32_t n, int write)
{
	uint32_t missing = 0;

	for (uint32_t i = 0; i < n; i++) {
		unsigned type = ev_type(ev[i]);
		uint32_t site = ev_site(ev[i]);
		if (type == EV_SWITCH) {
			if (site == EV_DATA_SITE)
				i += (uint32_t)ev_delta(ev[i]);
			continue;
		}
		uint32_t flat = type == EV_ENTRY ? site & EV_ENTRY_FLAT : 0, l = site & ~flat;
		int known = m && l < m->site_cap && m->site[l];
		missing += !known;
		if (write)
			ev[i] = ev_make(type, (known ? m->site[l] - 1 : TRACE_SITE_NONE) | flat, ev_delta(ev[i]));
	}
	return missing;
}

void record_translate_events(struct recording *r, uint32_t img, uint64_t *ev, uint32_t n)
{
	const struct image_map *m = img < r->image_cnt ? &r->images[img] : NULL;
	if (m && m->identity)
		return;
	/* Its names are in the meta file before its events (the agent writes
	 * them first): a site not named yet is in what came since. */
	if (!m || translate_pass(m, ev, n, 0)) {
		record_write_symbols(r);
		m = img < r->image_cnt ? &r->images[img] : NULL;
		if (m && m->identity)
			return;
	}
	translate_pass(m, ev, n, 1);
}

uint32_t record_translate_site(struct recording *r, uint32_t img, uint32_t site)
{
	uint64_t ev = ev_make(EV_ENTRY, site, 0);
	record_translate_events(r, img, &ev, 1);
	return ev_site(ev);
}

void record_images_free(struct recording *r)
{
	for (size_t i = 0; i < r->image_cnt; i++) {
		free(r->images[i].site);
		free(r->images[i].mod);
	}
	free(r->images);
	r->images = NULL;
	r->image_cnt = 0;
	r->meta_image = 0;
	r->next_site = r->next_module = 0;
	free(r->notes);
	r->notes = NULL;
	r->notes_len = 0;
}

/* A line for needle record to say at the end: prefix then msg. */
static void add_note(struct recording *r, const char *prefix, const char *msg)
{
	size_t k = strlen(prefix), n = strlen(msg);
	char *p = realloc(r->notes, r->notes_len + k + n + 2);
	if (!p)
		return;
	memcpy(p + r->notes_len, prefix, k);
	memcpy(p + r->notes_len + k, msg, n);
	p[r->notes_len + k + n] = '\n';
	p[r->notes_len + k + n + 1] = 0;
	r->notes = p;
	r->notes_len += k + n + 1;
}

/* A SITES section and, after it, the sizes of its sites' functions. */
static void write_sites(struct recording *r, const uint8_t *sites, size_t sites_len, const uint32_t *sizes,
			size_t sizes_cnt)
{
	trace_writer_section(&r->w, SEC_SITES, sites, sites_len);
	if (sizes_cnt)
		trace_writer_section(&r->w, SEC_SITE_SIZES, sizes, sizes_cnt * sizeof(*sizes));
}

void record_write_symbols(struct recording *r)
{
	FILE *f = meta_open(r->meta_fd);
	char *line = NULL;
	size_t cap = 0;
	uint8_t *sites = NULL;
	size_t sites_len = 0, sites_cap = 0;
	/* The sites' function sizes (-Z and size= in the views), after
	 * their SITES section. */
	uint32_t *sizes = NULL;
	size_t sizes_cnt = 0, sizes_cap = 0;
	/* The new modules' load biases (MODULE_BIAS records), one section
	 * after the pass's sites. */
	uint8_t *biases = NULL;
	size_t biases_len = 0, biases_cap = 0;
	char *objects = NULL;
	size_t objects_len = 0;
	FILE *obj = open_memstream(&objects, &objects_len);
	int new_objects = 0;
	ssize_t n;

	if (obj && r->objects_len)
		fwrite(r->objects, 1, r->objects_len, obj);
	if (!f || fseek(f, r->meta_off, SEEK_SET)) {
		if (obj)
			fclose(obj);
		free(objects);
		if (f)
			fclose(f);
		return;
	}
	while ((n = meta_line(f, &line, &cap)) > 0) {
		/* A line the agent is still writing (or was, when it died) is
		 * left for a later pass: meta_line stops before it. */
		r->meta_off += n;
		line[n - 1] = 0;
		struct image_map *im = image_get(r, r->meta_image);
		if (line[0] == META_IMAGE) {
			unsigned img;
			if (sscanf(line, META_IMAGE_READ, &img) == 1 && image_get(r, img))
				r->meta_image = img;
		} else if (line[0] == META_NOTE || (line[0] == META_ERROR && r->meta_image)) {
			int code, off = 0;
			if (sscanf(line, line[0] == META_NOTE ? META_NOTE_READ : META_ERROR_READ, &code, &off) >= 1 && off)
				add_note(r, "exec'ed and not traced: ", line + off);
		} else if (line[0] == META_MODULE) {
			unsigned idx;
			int off = 0;
			if (sscanf(line, META_MODULE_READ, &idx, &off) < 1 || !off || !im)
				continue;
			idx = number_map(&im->mod, &im->mod_cap, &im->identity, idx, &r->next_module, UINT32_MAX - 1);
			if (idx == UINT32_MAX)
				continue;
			size_t plen = strlen(line + off);
			uint8_t *p = malloc(4 + plen);
			if (!p)
				continue;
			memcpy(p, &idx, 4);
			memcpy(p + 4, line + off, plen);
			trace_writer_section(&r->w, SEC_MODULE, p, 4 + plen);
			free(p);
			/* The trace's first object is the program (INFO's exe). */
			if (idx == 0 && !r->exe)
				r->exe = strdup(line + off);
		} else if (line[0] == META_BIAS) {
			unsigned idx;
			unsigned long long bias;
			char hex[65] = "-";
			if (sscanf(line, META_BIAS_READ, &idx, &bias, hex) < 2 || !im || idx >= im->mod_cap || !im->mod[idx])
				continue;
			if (biases_len + MODULE_BIAS_RECORD > biases_cap) {
				size_t c = biases_cap ? biases_cap * 2 : MODULE_BIAS_RECORD * 64;
				uint8_t *b = realloc(biases, c);
				if (!b)
					continue;
				biases = b;
				biases_cap = c;
			}
			uint32_t mod = im->mod[idx] - 1;
			uint64_t b = bias;
			uint8_t *rec = biases + biases_len;
			memset(rec, 0, MODULE_BIAS_RECORD);
			memcpy(rec, &mod, 4);
			memcpy(rec + 4, &b, 8);
			/* u8 build id length at 12, the id from 16 */
			uint8_t n = 0;
			for (unsigned v; n < 32 && hex[2 * n] && hex[2 * n + 1] && sscanf(hex + 2 * n, "%2x", &v) == 1; n++)
				rec[16 + n] = (uint8_t)v;
			rec[12] = n;
			biases_len += MODULE_BIAS_RECORD;
		} else if ((line[0] == META_OBJECT || line[0] == META_REASON) && obj) {
			fprintf(obj, "%s\n", line);
			new_objects = 1;
		} else if (line[0] == META_SITE) {
			unsigned id, mod;
			unsigned long long ip, size;
			int off = 0;
			if (sscanf(line, META_SITE_READ, &id, &ip, &mod, &size, &off) < 4 || !off || !im)
				continue;
			mod = mod < im->mod_cap && im->mod[mod] ? im->mod[mod] - 1 : mod;
			id = number_map(&im->site, &im->site_cap, &im->identity, id, &r->next_site, TRACE_SITE_NONE);
			if (id == UINT32_MAX) {
				add_note(r, "", "the trace holds at most 2,097,151 functions: programs exec'ed after that "
					    "have their calls recorded without names (?); fewer with --no-follow-exec or -P");
				continue;
			}
			if (size && sizes_cnt + 2 > sizes_cap) {
				sizes_cap = sizes_cap ? sizes_cap * 2 : 4096;
				uint32_t *z = realloc(sizes, sizes_cap * sizeof(*z));
				if (!z)
					break;
				sizes = z;
			}
			if (size) {
				sizes[sizes_cnt++] = id;
				sizes[sizes_cnt++] = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
			}
			const char *name = line + off;
			if (r->stream)
				r->stream->site(r->stream_arg, id, name);
			uint16_t nlen = (uint16_t)(strlen(name) > 65535 ? 65535 : strlen(name));
			if (sites_len + 18 + nlen > sites_cap) {
				sites_cap = (sites_cap + 18 + nlen) * 2;
				uint8_t *s = realloc(sites, sites_cap);
				if (!s)
					break;
				sites = s;
			}
			uint64_t ip64 = ip;
			memcpy(sites + sites_len, &id, 4);
			memcpy(sites + sites_len + 4, &mod, 4);
			memcpy(sites + sites_len + 8, &ip64, 8);
			memcpy(sites + sites_len + 16, &nlen, 2);
			memcpy(sites + sites_len + 18, name, nlen);
			sites_len += 18 + nlen;
			/* Keep sections well under the reader's limit. */
			if (sites_len > (8u << 20)) {
				write_sites(r, sites, sites_len, sizes, sizes_cnt);
				sites_len = sizes_cnt = 0;
			}
		}
	}
	if (sites_len)
		write_sites(r, sites, sites_len, sizes, sizes_cnt);
	if (biases_len)
		trace_writer_section(&r->w, SEC_MODULE_BIAS, biases, biases_len);
	free(sites);
	free(sizes);
	free(biases);
	/* The objects' discovery table, as the agent wrote it (needle info):
	 * whole each time, since a reader keeps the last one. */
	if (obj && !fclose(obj) && new_objects && objects_len) {
		trace_writer_section(&r->w, SEC_OBJECTS, objects, objects_len);
		free(r->objects);
		r->objects = objects;
		r->objects_len = objects_len;
		objects = NULL;
	}
	free(objects);
	free(line);
	fclose(f);
}

void record_read_result(struct recording *r, uint64_t *sites_traced, char *agent_err, size_t errlen)
{
	FILE *f = meta_open(r->meta_fd);
	char *line = NULL;
	size_t cap = 0;

	unsigned image = 0;

	*sites_traced = 0;
	agent_err[0] = 0;
	if (!f)
		return;
	while (meta_line(f, &line, &cap) > 0) {
		line[strcspn(line, "\n")] = 0;
		unsigned long long traced;
		int code, off = 0;
		unsigned img;
		/* The first program's records only: an exec'ed program's
		 * failure is a note (record_write_symbols). */
		if (line[0] == META_IMAGE && sscanf(line, META_IMAGE_READ, &img) == 1)
			image = img;
		else if (image)
			continue;
		else if (line[0] == META_TRACED && sscanf(line, META_TRACED_READ, &traced) == 1)
			*sites_traced = traced;
		else if (line[0] == META_ERROR && sscanf(line, META_ERROR_READ, &code, &off) >= 1 && off)
			snprintf(agent_err, errlen, "%s", line + off);
	}
	free(line);
	fclose(f);
}

void record_write_threads(struct recording *r)
{
	for (size_t i = 0; i < r->thread_cnt; i++) {
		uint8_t buf[4 + 17];
		size_t n = strlen(r->threads[i].name);
		memcpy(buf, &r->threads[i].tid, 4);
		memcpy(buf + 4, r->threads[i].name, n);
		trace_writer_section(&r->w, SEC_THREAD, buf, 4 + n);
	}
	if (r->task_cnt)
		trace_writer_section(&r->w, SEC_TASKS, r->tasks, r->task_cnt * sizeof(*r->tasks));
}

void record_write_process(struct recording *r, int status, char **argv)
{
	size_t len = sizeof(struct sec_process);
	uint32_t argc = 0;
	for (; argv[argc]; argc++)
		len += strlen(argv[argc]) + 1;
	uint8_t *p = malloc(len);
	if (!p)
		return;
	struct sec_process sp = {
		.pid = (uint32_t)r->pid,
		.wait_status = status,
		.tracer = (uint32_t)record_tracer(r->o),
		.wake_mode = (uint32_t)r->o->wake_mode,
		.wake_arg = (uint32_t)r->o->wake_arg,
		.argc = argc,
		.buffer_bytes = r->o->buffer_bytes,
	};
	memcpy(p, &sp, sizeof(sp));
	size_t off = sizeof(sp);
	for (uint32_t i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		memcpy(p + off, argv[i], n);
		off += n;
	}
	trace_writer_section(&r->w, SEC_PROCESS, p, len);
	free(p);
}
