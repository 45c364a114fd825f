/* cmd_record.c - `needle record`: run a program with libneedle preloaded,
 * drain its shared trace buffer into a trace file, and write the metadata
 * (clock, modules, sites, threads) when it ends.
 *
 * The file is written as FILE.tmp.PID and renamed only when complete, so a
 * half-written trace is never passed off as whole.  If the program dies
 * (SIGKILL, SIGSEGV), every event it wrote is still in the buffer: chunks
 * it never published are salvaged from their release-stored fill level. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "shm_layout.h"
#include "trace_format.h"
#include "trace_writer.h"
#include "tsc.h"

struct record_opts {
	const char *output;
	int tracer;
	char *filter;   /* newline-separated globs */
	char *notrace;
	int depth;
	int wake_mode;
	int wake_arg;   /* poll ms or percent */
	uint64_t buffer_bytes;
	uint32_t chunk_bytes;
	int ctl;        /* open the control socket in the program */
};

struct seen_thread {
	uint32_t tid;
	char name[17];
};

struct recording {
	struct record_opts *o;
	struct shm_header *shm;
	pid_t pid;
	struct trace_writer w;
	struct seen_thread *threads;
	size_t thread_cnt, thread_cap;
};

static volatile sig_atomic_t child_done;
static pid_t child_pid;

static void on_sigchld(int sig)
{
	(void)sig;
	child_done = 1;
}

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static const char record_usage[] =
	"usage: needle record [options] [--] PROG [ARGS]\n"
	"  -o, --output FILE        trace file (default needle.data)\n"
	"  -t, --tracer NAME        function_graph (default) or function\n"
	"  -F, --filter GLOB        trace only matching functions (repeatable)\n"
	"  -N, --notrace GLOB       do not trace matching functions (repeatable)\n"
	"  -D, --depth N            function_graph: record N levels of nesting\n"
	"      --wait               wake the reader when a chunk fills (default)\n"
	"      --poll=MS            the reader polls every MS ms; the program never wakes it\n"
	"      --buffer-percent=N   wake the reader only when N%% of the buffer is full\n"
	"      --buffer-size=MB     shared buffer size (default 16)\n"
	"      --chunk-size=KB      chunk size (default 16)\n"
	"      --ctl                let 'needle ctl PID' change filters and tracer while it runs\n"
	"                           (adds a thread, needle-ctl, to the program)\n";

static int append_glob(char **list, const char *glob)
{
	size_t old = *list ? strlen(*list) : 0;
	char *n = realloc(*list, old + strlen(glob) + 2);
	if (!n)
		return -1;
	if (old)
		n[old++] = '\n';
	strcpy(n + old, glob);
	*list = n;
	return 0;
}

static int parse_opts(int argc, char **argv, struct record_opts *o)
{
	enum { OPT_WAIT = 256, OPT_POLL, OPT_PERCENT, OPT_BUFSIZE, OPT_CHUNK, OPT_CTL };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },  { "tracer", required_argument, NULL, 't' },
		{ "filter", required_argument, NULL, 'F' },  { "notrace", required_argument, NULL, 'N' },
		{ "depth", required_argument, NULL, 'D' },   { "wait", no_argument, NULL, OPT_WAIT },
		{ "poll", required_argument, NULL, OPT_POLL }, { "buffer-percent", required_argument, NULL, OPT_PERCENT },
		{ "buffer-size", required_argument, NULL, OPT_BUFSIZE },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK }, { "help", no_argument, NULL, 'h' },
		{ "ctl", no_argument, NULL, OPT_CTL },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	o->output = "needle.data";
	o->tracer = TRACER_FUNCTION_GRAPH;
	o->buffer_bytes = 16ull << 20;
	o->chunk_bytes = 16u << 10;
	o->wake_mode = WAKE_WAIT;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:t:F:N:D:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 't':
			if (!strcmp(optarg, "function_graph")) {
				o->tracer = TRACER_FUNCTION_GRAPH;
			} else if (!strcmp(optarg, "function")) {
				o->tracer = TRACER_FUNCTION;
			} else {
				cli_error("unknown tracer '%s' (function_graph or function)", optarg);
				return -1;
			}
			break;
		case 'F':
			if (append_glob(&o->filter, optarg))
				return -1;
			break;
		case 'N':
			if (append_glob(&o->notrace, optarg))
				return -1;
			break;
		case 'D':
			o->depth = (int)strtol(optarg, &end, 10);
			if (*end || o->depth < 1) {
				cli_error("--depth needs a positive number, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_WAIT:
			o->wake_mode = WAKE_WAIT;
			break;
		case OPT_POLL:
			o->wake_mode = WAKE_POLL;
			o->wake_arg = (int)strtol(optarg, &end, 10);
			if (*end || o->wake_arg < 1 || o->wake_arg > 60000) {
				cli_error("--poll needs milliseconds between 1 and 60000, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_PERCENT:
			o->wake_mode = WAKE_PERCENT;
			o->wake_arg = (int)strtol(optarg, &end, 10);
			if (*end || o->wake_arg < 1 || o->wake_arg > 100) {
				cli_error("--buffer-percent needs a number from 1 to 100, not '%s'", optarg);
				return -1;
			}
			break;
		case OPT_BUFSIZE: {
			long mb = strtol(optarg, &end, 10);
			if (*end || mb < 1 || mb > 65536) {
				cli_error("--buffer-size needs megabytes from 1 to 65536, not '%s'", optarg);
				return -1;
			}
			o->buffer_bytes = (uint64_t)mb << 20;
			break;
		}
		case OPT_CHUNK: {
			long kb = strtol(optarg, &end, 10);
			if (*end || kb < 1 || kb > 4096) {
				cli_error("--chunk-size needs kilobytes from 1 to 4096, not '%s'", optarg);
				return -1;
			}
			o->chunk_bytes = (uint32_t)kb << 10;
			break;
		}
		case OPT_CTL:
			o->ctl = 1;
			break;
		case 'h':
			fputs(record_usage, stdout);
			exit(0);
		default:
			fputs(record_usage, stderr);
			return -1;
		}
	}
	if (optind >= argc) {
		cli_error("record: no program given");
		fputs(record_usage, stderr);
		return -1;
	}
	if (o->buffer_bytes / o->chunk_bytes < 2) {
		cli_error("the buffer must hold at least two chunks");
		return -1;
	}
	return optind;
}

/* libneedle.so beside the needle binary, or where NEEDLE_LIB says. */
static int find_agent(char *out, size_t len)
{
	const char *env = getenv("NEEDLE_LIB");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	const char *dir = dirname(self);
	snprintf(out, len, "%s/libneedle.so", dir);
	if (!access(out, R_OK))
		return 0;
	snprintf(out, len, "%s/../lib/needle/libneedle.so", dir);
	return access(out, R_OK);
}

/* Does PROG resolve to an executable file, as execvp would find it? */
static int find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return access(out, X_OK) ? -errno : 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", prog);
		if (!access(out, X_OK))
			return 0;
		path += n + (colon != NULL);
	}
	return -ENOENT;
}

static struct shm_header *buffer_create(const struct record_opts *o, int *fd_out)
{
	uint32_t count = (uint32_t)(o->buffer_bytes / o->chunk_bytes);
	uint64_t total = shm_chunks_offset(count) + (uint64_t)count * o->chunk_bytes;
	int fd = memfd_create("needle-buffer", 0);
	struct shm_header *h;

	if (fd < 0 || ftruncate(fd, (off_t)total))
		return NULL;
	/* Populated now, so that the traced program never waits for the
	 * kernel to zero a page of the buffer. */
	h = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (h == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	h->magic = SHM_MAGIC;
	h->version = SHM_VERSION;
	h->chunk_size = o->chunk_bytes;
	h->total_size = total;
	h->chunk_count = count;
	h->wake_mode = (uint32_t)o->wake_mode;
	h->wake_percent = o->wake_mode == WAKE_PERCENT ? (uint32_t)o->wake_arg : 0;
	for (uint32_t i = count; i-- > 0;)
		shm_free_push(h, i);
	*fd_out = fd;
	return h;
}

static void note_thread(struct recording *r, const struct shm_chunk *c)
{
	for (size_t i = 0; i < r->thread_cnt; i++)
		if (r->threads[i].tid == c->tid)
			return;
	if (r->thread_cnt == r->thread_cap) {
		size_t cap = r->thread_cap ? r->thread_cap * 2 : 16;
		struct seen_thread *t = realloc(r->threads, cap * sizeof(*t));
		if (!t)
			return;
		r->threads = t;
		r->thread_cap = cap;
	}
	struct seen_thread *t = &r->threads[r->thread_cnt++];
	t->tid = c->tid;
	memcpy(t->name, c->comm, 16);
	t->name[16] = 0;
	/* The live name is fresher than the one taken at the first chunk. */
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)r->pid, c->tid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(t->name, sizeof(t->name), f))
			t->name[strcspn(t->name, "\n")] = 0;
		fclose(f);
	}
}

static void write_chunk(struct recording *r, uint32_t idx, int salvaged)
{
	struct shm_chunk *c = shm_chunk_at(r->shm, idx);
	uint32_t used = atomic_load_explicit(&c->used, memory_order_acquire);
	uint32_t cap = shm_chunk_capacity(r->shm);
	struct sec_chunk hdr = {
		.tid = c->tid,
		.lost_before = c->lost_before,
		.seq = c->seq,
		.base = c->base,
		.event_count = (used > cap ? cap : used) / 8,
		.salvaged = (uint32_t)salvaged,
		.open_depth = c->open_depth,
		.serial = c->serial,
	};
	memcpy(hdr.comm, c->comm, sizeof(hdr.comm));

	note_thread(r, c);
	if (hdr.event_count || hdr.lost_before) {
		int err = trace_writer_chunk(&r->w, &hdr, shm_chunk_events(c), hdr.event_count);
		if (err && !r->w.err)
			r->w.err = -err;
	}
	shm_free_push(r->shm, idx);
}

/* Write every published chunk; returns how many. */
static size_t drain(struct recording *r, int final)
{
	struct shm_header *h = r->shm;
	struct shm_ring_slot *ring = shm_ring(h);
	uint64_t head = atomic_load(&h->ring_head), tail = atomic_load(&h->ring_tail);
	size_t n = 0;

	for (; head < tail; head++) {
		struct shm_ring_slot *slot = &ring[head % h->chunk_count];
		if (atomic_load_explicit(&slot->seq, memory_order_acquire) != head + 1) {
			/* Reserved but not yet published: wait for it, unless the
			 * producer is gone (then the chunk is salvaged by state). */
			if (!final)
				break;
			continue;
		}
		write_chunk(r, (uint32_t)slot->chunk, 0);
		n++;
	}
	atomic_store(&h->ring_head, head);
	return n;
}

struct salvage {
	uint32_t tid, idx;
	uint64_t seq;
};

static int salvage_cmp(const void *a, const void *b)
{
	const struct salvage *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* After the program ended: chunks still owned by a thread (it exited
 * without returning them, or was killed) hold events up to their fill. */
static void salvage(struct recording *r)
{
	struct shm_header *h = r->shm;
	struct salvage *v = malloc(h->chunk_count * sizeof(*v));
	size_t n = 0;

	if (!v)
		return;
	for (uint32_t i = 0; i < h->chunk_count; i++) {
		struct shm_chunk *c = shm_chunk_at(h, i);
		if (atomic_load(&c->state) != CHUNK_FREE)
			v[n++] = (struct salvage){ c->tid, i, c->seq };
	}
	qsort(v, n, sizeof(*v), salvage_cmp);
	for (size_t i = 0; i < n; i++)
		write_chunk(r, v[i].idx, 1);
	free(v);
}

static void wait_for_data(struct recording *r)
{
	struct shm_header *h = r->shm;

	if (r->o->wake_mode == WAKE_POLL) {
		/* In slices, so that the end of the program is noticed even if
		 * SIGCHLD came just before the sleep began. */
		for (int left = r->o->wake_arg; left > 0 && !child_done; left -= 100) {
			int ms = left < 100 ? left : 100;
			struct timespec t = { 0, (long)ms * 1000000 };
			nanosleep(&t, NULL);
		}
		return;
	}
	uint32_t word = atomic_load(&h->wake_word);
	atomic_store(&h->reader_waiting, 1);
	uint64_t queued = atomic_load(&h->ring_tail) - atomic_load(&h->ring_head);
	int ready = r->o->wake_mode == WAKE_WAIT ? queued > 0
						: queued * 100 >= (uint64_t)r->o->wake_arg * h->chunk_count;
	if (!ready && !child_done) {
		/* SIGCHLD interrupts the wait; the timeout is a safety net. */
		struct timespec t = { 1, 0 };
		syscall(SYS_futex, &h->wake_word, FUTEX_WAIT, word, &t, NULL, 0);
	}
	atomic_store(&h->reader_waiting, 0);
}

static int buffer_ready(struct recording *r)
{
	struct shm_header *h = r->shm;
	if (r->o->wake_mode != WAKE_PERCENT)
		return 1;
	uint64_t queued = atomic_load(&h->ring_tail) - atomic_load(&h->ring_head);
	return queued * 100 >= (uint64_t)r->o->wake_arg * h->chunk_count;
}

/* Parse the agent's meta lines into sections. */
static int write_meta(struct recording *r, int meta_fd, uint64_t *sites_traced, char *agent_err, size_t errlen)
{
	FILE *f = fdopen(dup(meta_fd), "r");
	char *line = NULL;
	size_t cap = 0;
	uint8_t *sites = NULL;
	size_t sites_len = 0, sites_cap = 0;

	*sites_traced = 0;
	agent_err[0] = 0;
	if (!f)
		return -errno;
	rewind(f);
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] == 'M') {
			unsigned idx;
			int off = 0;
			if (sscanf(line, "M %u %n", &idx, &off) < 1 || !off)
				continue;
			size_t plen = strlen(line + off);
			uint8_t *p = malloc(4 + plen);
			if (!p)
				continue;
			memcpy(p, &idx, 4);
			memcpy(p + 4, line + off, plen);
			trace_writer_section(&r->w, SEC_MODULE, p, 4 + plen);
			free(p);
		} else if (line[0] == 'S') {
			unsigned id, mod;
			unsigned long long ip;
			int off = 0;
			if (sscanf(line, "S %u %llx %u %n", &id, &ip, &mod, &off) < 3 || !off)
				continue;
			const char *name = line + off;
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
				trace_writer_section(&r->w, SEC_SITES, sites, sites_len);
				sites_len = 0;
			}
		} else if (line[0] == 'T') {
			*sites_traced = strtoull(line + 2, NULL, 10);
		} else if (line[0] == 'E') {
			char *msg = strchr(line + 2, ' ');
			snprintf(agent_err, errlen, "%s", msg ? msg + 1 : line);
		}
	}
	if (sites_len)
		trace_writer_section(&r->w, SEC_SITES, sites, sites_len);
	free(sites);
	free(line);
	fclose(f);
	return 0;
}

static void write_threads(struct recording *r)
{
	for (size_t i = 0; i < r->thread_cnt; i++) {
		uint8_t buf[4 + 17];
		size_t n = strlen(r->threads[i].name);
		memcpy(buf, &r->threads[i].tid, 4);
		memcpy(buf + 4, r->threads[i].name, n);
		trace_writer_section(&r->w, SEC_THREAD, buf, 4 + n);
	}
}

static void write_process(struct recording *r, int status, char **argv)
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
		.tracer = (uint32_t)r->o->tracer,
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

static pid_t spawn(char **argv, const char *agent, int buf_fd, int meta_fd, const struct record_opts *o,
		   int *exec_errno)
{
	int pipefd[2];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char num[32];
		const char *pre = getenv("LD_PRELOAD");
		char *preload = malloc(strlen(agent) + (pre ? strlen(pre) : 0) + 2);
		close(pipefd[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (preload) {
			sprintf(preload, "%s%s%s", agent, pre && *pre ? ":" : "", pre && *pre ? pre : "");
			setenv("NEEDLE_ORIG_LD_PRELOAD", pre ? pre : "", 1);
			setenv("LD_PRELOAD", preload, 1);
		}
		snprintf(num, sizeof(num), "%d", buf_fd);
		setenv("NEEDLE_BUFFER_FD", num, 1);
		snprintf(num, sizeof(num), "%d", meta_fd);
		setenv("NEEDLE_META_FD", num, 1);
		setenv("NEEDLE_TRACER", o->tracer == TRACER_FUNCTION ? "function" : "function_graph", 1);
		if (o->filter)
			setenv("NEEDLE_FILTER", o->filter, 1);
		if (o->notrace)
			setenv("NEEDLE_NOTRACE", o->notrace, 1);
		if (o->depth) {
			snprintf(num, sizeof(num), "%d", o->depth);
			setenv("NEEDLE_DEPTH", num, 1);
		}
		if (o->ctl)
			setenv("NEEDLE_CTL", "1", 1);
		execvp(argv[0], argv);
		int e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	*exec_errno = 0;
	if (read(pipefd[0], exec_errno, sizeof(*exec_errno)) != sizeof(*exec_errno))
		*exec_errno = 0;
	close(pipefd[0]);
	return pid;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct recording r = { 0 };
	char agent[PATH_MAX], prog[PATH_MAX], tmp[PATH_MAX + 32], agent_err[512];
	int first = parse_opts(argc, argv, &o);
	int buf_fd, meta_fd, exec_errno, status = 0, ret = 1;
	FILE *out;

	if (first < 0)
		return 2;
	char **prog_argv = argv + first;
	if (find_agent(agent, sizeof(agent))) {
		cli_error("cannot find libneedle.so next to the needle binary; set NEEDLE_LIB to its path");
		return 1;
	}
	int perr = find_program(prog_argv[0], prog, sizeof(prog));
	if (perr) {
		cli_error("cannot run %s: %s", prog_argv[0], perr == -ENOENT ? "command not found" : strerror(-perr));
		return 127;
	}
	/* The output must be writable before the program starts. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", o.output, (int)getpid());
	if (!(out = fopen(tmp, "wbx"))) {
		cli_error("cannot write %s: %s", o.output, strerror(errno));
		return 1;
	}
	if (trace_writer_open(&r.w, out, o.tracer)) {
		cli_error("cannot write %s: %s", o.output, strerror(r.w.err));
		goto out_unlink;
	}
	r.o = &o;
	if (!(r.shm = buffer_create(&o, &buf_fd))) {
		cli_error("cannot create a %llu MiB trace buffer: %s", (unsigned long long)(o.buffer_bytes >> 20),
			  strerror(errno));
		goto out_unlink;
	}
	meta_fd = memfd_create("needle-meta", 0);
	if (meta_fd < 0) {
		cli_error("cannot create the metadata file: %s", strerror(errno));
		goto out_unlink;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigaction(SIGCHLD, &sa, NULL); /* no SA_RESTART: it interrupts the futex wait */
	sa.sa_handler = forward_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGINT, SIG_IGN); /* the terminal sends it to the program too */
	signal(SIGQUIT, SIG_IGN);

	uint64_t raw0 = tsc_read(), ns0 = monotonic_ns();
	r.pid = child_pid = spawn(prog_argv, agent, buf_fd, meta_fd, &o, &exec_errno);
	if (r.pid < 0) {
		cli_error("cannot start %s: %s", prog_argv[0], strerror(errno));
		goto out_unlink;
	}
	if (exec_errno) {
		waitpid(r.pid, NULL, 0);
		cli_error("cannot run %s: %s", prog_argv[0], strerror(exec_errno));
		ret = 127;
		goto out_unlink;
	}

	for (;;) {
		if (buffer_ready(&r))
			drain(&r, 0);
		pid_t w = waitpid(r.pid, &status, WNOHANG);
		if (w == r.pid)
			break;
		wait_for_data(&r);
	}
	drain(&r, 1);
	salvage(&r);
	uint64_t raw1 = tsc_read(), ns1 = monotonic_ns();

	struct sec_clock clock = { .source = TRACE_CLOCK_TSC, .raw0 = raw0, .ns0 = ns0, .raw1 = raw1, .ns1 = ns1 };
	if (r.shm->clock_source == CLOCK_SOURCE_MONOTONIC)
		clock = (struct sec_clock){ .source = TRACE_CLOCK_MONOTONIC, .raw0 = 0, .ns0 = 0, .raw1 = 1, .ns1 = 1 };
	trace_writer_section(&r.w, SEC_CLOCK, &clock, sizeof(clock));
	write_process(&r, status, prog_argv);
	uint64_t sites_traced;
	write_meta(&r, meta_fd, &sites_traced, agent_err, sizeof(agent_err));
	write_threads(&r);
	struct sec_end end = {
		.events = r.w.events,
		.lost_events = atomic_load(&r.shm->lost_events),
		.chunks = r.w.chunks,
		.producer_wakeups = atomic_load(&r.shm->producer_wakeups),
		.salvaged_chunks = r.w.salvaged,
		.sites_traced = sites_traced,
	};
	trace_writer_section(&r.w, SEC_END, &end, sizeof(end));

	uint32_t state = atomic_load(&r.shm->agent_state);
	if (state == AGENT_FAILED) {
		cli_error("%s", agent_err[0] ? agent_err : "recording failed in the program");
		goto out_unlink;
	}
	if (state != AGENT_RECORDING) {
		cli_error("libneedle did not start in %s: is it statically linked, or does it drop LD_PRELOAD?",
			  prog_argv[0]);
		goto out_unlink;
	}
	int werr = trace_writer_finish(&r.w);
	if (fclose(out) && !werr)
		werr = -errno;
	out = NULL;
	if (werr) {
		cli_error("cannot write %s: %s; no trace was kept", o.output, strerror(-werr));
		unlink(tmp);
		return 1;
	}
	if (rename(tmp, o.output)) {
		cli_error("cannot rename %s to %s: %s", tmp, o.output, strerror(errno));
		unlink(tmp);
		return 1;
	}
	fprintf(stderr, "needle: recorded %llu events from %zu threads into %s", (unsigned long long)end.events,
		r.thread_cnt, o.output);
	if (end.lost_events)
		fprintf(stderr, "; %llu events LOST (buffer full: try --buffer-size)", (unsigned long long)end.lost_events);
	fputc('\n', stderr);
	if (WIFSIGNALED(status)) {
		cli_error("%s was killed by signal %d (%s)", prog_argv[0], WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;

out_unlink:
	if (out)
		fclose(out);
	unlink(tmp);
	return ret;
}
