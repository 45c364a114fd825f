/* sleepers - threads asleep in the waits servers sleep in, and one thread
 * that works, for attaching to: the patch batches of `needle record -p`
 * rewrite the C library's entries (relocated sites) while the sleepers
 * sleep.  Each sleeper waits on its own pipe, in its own call:
 *
 *   epoll      epoll_wait, no timeout      poll     poll, no timeout
 *   epoll_t    epoll_wait, 60 s timeout    select   select, no timeout
 *   epoll_p    epoll_pwait, no mask        read     read
 *   futex      FUTEX_WAIT on a word (woken by its pipe's reader, main)
 *
 * A line "N" on stdin wakes sleeper N once; it then calls sleeper_woke()
 * and prints what its wait returned, so that an EINTR, a timeout or a
 * short count shows in the output.  The worker calls strlen and memcpy
 * (sites of the C library) and work() without pause.  "quit" ends it.
 * It prints "ready" and the sleepers' thread ids, one per line, first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { EPOLL, EPOLL_T, EPOLL_P, POLL, SELECT, READ, FUTEX, SLEEPERS };
static const char *const names[SLEEPERS] = { "epoll", "epoll_t", "epoll_p", "poll", "select", "read", "futex" };

static int pipes[SLEEPERS][2];
static _Atomic uint32_t futex_word;
static _Atomic int quitting;
static pid_t tids[SLEEPERS];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) int sleeper_woke(int which)
{
	__asm__ volatile("");
	return which;
}

__attribute__((noinline)) size_t work(const char *s, char *out)
{
	size_t n = strlen(s);
	memcpy(out, s, n + 1);
	return n;
}

static void say(int which, long r, int err, int wakes)
{
	pthread_mutex_lock(&out_lock);
	printf("%s %d: %ld%s%s\n", names[which], wakes, r, r < 0 ? " " : "", r < 0 ? strerror(err) : "");
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void *sleeper(void *p)
{
	int which = (int)(intptr_t)p, fd = pipes[which][0], ep = -1;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd }, got;

	tids[which] = (pid_t)syscall(SYS_gettid);
	if (which <= EPOLL_P) {
		ep = epoll_create1(0);
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	}
	for (int wakes = 1; !atomic_load(&quitting); wakes++) {
		long r;
		char c;
		switch (which) {
		case EPOLL:
			r = epoll_wait(ep, &got, 1, -1);
			break;
		case EPOLL_T:
			r = epoll_wait(ep, &got, 1, 60000);
			break;
		case EPOLL_P:
			r = epoll_pwait(ep, &got, 1, -1, NULL);
			break;
		case POLL: {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			r = poll(&pfd, 1, -1);
			break;
		}
		case SELECT: {
			fd_set set;
			FD_ZERO(&set);
			FD_SET(fd, &set);
			r = select(fd + 1, &set, NULL, NULL, NULL);
			break;
		}
		case READ:
			r = 1;
			break;
		default: { /* FUTEX: woken by main, which reads the pipe */
			uint32_t seen = atomic_load(&futex_word);
			r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
			if (r == -1 && errno == EAGAIN)
				r = 0; /* the word changed before the wait: a wake all the same */
			else if (r == 0)
				r = 1;
			break;
		}
		}
		if (which != FUTEX && r > 0)
			r = read(fd, &c, 1);
		int err = errno;
		if (atomic_load(&quitting))
			break;
		sleeper_woke(which);
		say(which, r, err, wakes);
	}
	return NULL;
}

static void *worker(void *p)
{
	char out[64];
	(void)p;
	while (!atomic_load(&quitting))
		work("the worker's string", out);
	return NULL;
}

int main(void)
{
	pthread_t th[SLEEPERS + 1];
	char line[64];

	for (int i = 0; i < SLEEPERS; i++)
		if (pipe(pipes[i]))
			return 1;
	for (int i = 0; i < SLEEPERS; i++)
		pthread_create(&th[i], NULL, sleeper, (void *)(intptr_t)i);
	pthread_create(&th[SLEEPERS], NULL, worker, NULL);
	for (int i = 0; i < SLEEPERS; i++)
		while (!tids[i])
			usleep(1000);
	pthread_mutex_lock(&out_lock);
	printf("ready\n");
	for (int i = 0; i < SLEEPERS; i++)
		printf("tid %s %d\n", names[i], (int)tids[i]);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "quit", 4))
			break;
		int which = atoi(line);
		if (which < 0 || which >= SLEEPERS)
			continue;
		if (which == FUTEX) {
			atomic_fetch_add(&futex_word, 1);
			syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		} else if (write(pipes[which][1], "x", 1) != 1) {
			return 1;
		}
	}
	atomic_store(&quitting, 1);
	for (int i = 0; i < SLEEPERS; i++) {
		if (i == FUTEX) {
			atomic_fetch_add(&futex_word, 1);
			syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		} else if (write(pipes[i][1], "q", 1) != 1) {
			return 1;
		}
	}
	for (int i = 0; i <= SLEEPERS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
