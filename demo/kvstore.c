/* kvstore - needle's bundled demo: a small multi-threaded key-value store
 * (a chained hash table with striped locks) and a workload driver.
 *
 *   kvstore [THREADS [OPS_PER_THREAD [SEED]]]
 *
 * Each thread works on its own key range with its own seeded generator, so
 * the final report is the same on every run, traced or not. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096
#define STRIPES 64
#define VALUE_MAX 48

struct entry {
	uint64_t key;
	char value[VALUE_MAX];
	struct entry *next;
};

struct store {
	struct entry *buckets[BUCKETS];
	pthread_mutex_t locks[STRIPES];
};

struct worker {
	pthread_t thread;
	struct store *store;
	int id;
	long ops;
	uint64_t rng;
	long puts, hits, misses, deletes;
	uint64_t checksum;
};

static uint64_t rng_next(uint64_t *state)
{
	/* xorshift64*: deterministic per seed */
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static unsigned kv_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (unsigned)(key % BUCKETS);
}

static pthread_mutex_t *kv_lock_for(struct store *s, unsigned bucket)
{
	return &s->locks[bucket % STRIPES];
}

static struct entry *entry_new(uint64_t key, const char *value)
{
	struct entry *e = malloc(sizeof(*e));
	if (!e) {
		perror("kvstore: malloc");
		exit(1);
	}
	e->key = key;
	snprintf(e->value, sizeof(e->value), "%s", value);
	e->next = NULL;
	return e;
}

static void kv_put(struct store *s, uint64_t key, const char *value)
{
	unsigned b = kv_hash(key);
	pthread_mutex_t *lock = kv_lock_for(s, b);

	pthread_mutex_lock(lock);
	for (struct entry *e = s->buckets[b]; e; e = e->next) {
		if (e->key == key) {
			snprintf(e->value, sizeof(e->value), "%s", value);
			pthread_mutex_unlock(lock);
			return;
		}
	}
	struct entry *e = entry_new(key, value);
	e->next = s->buckets[b];
	s->buckets[b] = e;
	pthread_mutex_unlock(lock);
}

static int kv_get(struct store *s, uint64_t key, char *out, size_t len)
{
	unsigned b = kv_hash(key);
	pthread_mutex_t *lock = kv_lock_for(s, b);
	int found = 0;

	pthread_mutex_lock(lock);
	for (struct entry *e = s->buckets[b]; e; e = e->next) {
		if (e->key == key) {
			snprintf(out, len, "%s", e->value);
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(lock);
	return found;
}

static int kv_delete(struct store *s, uint64_t key)
{
	unsigned b = kv_hash(key);
	pthread_mutex_t *lock = kv_lock_for(s, b);
	int found = 0;

	pthread_mutex_lock(lock);
	for (struct entry **p = &s->buckets[b]; *p; p = &(*p)->next) {
		if ((*p)->key == key) {
			struct entry *dead = *p;
			*p = dead->next;
			free(dead);
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(lock);
	return found;
}

static uint64_t checksum_add(uint64_t sum, const char *s)
{
	while (*s)
		sum = sum * 31 + (unsigned char)*s++;
	return sum;
}

static void format_value(char *buf, size_t len, int worker, uint64_t key, long op)
{
	snprintf(buf, len, "w%d-k%llu-op%ld", worker, (unsigned long long)key, op);
}

static void workload_step(struct worker *w, long op)
{
	uint64_t r = rng_next(&w->rng);
	/* Keys are private to the worker: results do not depend on timing. */
	uint64_t key = ((uint64_t)w->id << 32) | (r >> 40) % 512;
	char value[VALUE_MAX];

	switch (r % 10) {
	case 0: case 1: case 2: case 3:
		format_value(value, sizeof(value), w->id, key, op);
		kv_put(w->store, key, value);
		w->puts++;
		break;
	case 9:
		w->deletes += kv_delete(w->store, key);
		break;
	default:
		if (kv_get(w->store, key, value, sizeof(value))) {
			w->hits++;
			w->checksum = checksum_add(w->checksum, value);
		} else {
			w->misses++;
		}
	}
}

static void *workload_run(void *arg)
{
	struct worker *w = arg;
	for (long op = 0; op < w->ops; op++)
		workload_step(w, op);
	return NULL;
}

static void store_init(struct store *s)
{
	memset(s->buckets, 0, sizeof(s->buckets));
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&s->locks[i], NULL);
}

static long store_free(struct store *s)
{
	long n = 0;
	for (int b = 0; b < BUCKETS; b++) {
		struct entry *e = s->buckets[b];
		while (e) {
			struct entry *next = e->next;
			free(e);
			e = next;
			n++;
		}
	}
	return n;
}

static void report(const struct worker *w, int threads, long remaining)
{
	long puts = 0, hits = 0, misses = 0, deletes = 0;
	uint64_t sum = 0;
	for (int i = 0; i < threads; i++) {
		printf("worker %d: %ld puts, %ld hits, %ld misses, %ld deletes, checksum %016llx\n",
		       i, w[i].puts, w[i].hits, w[i].misses, w[i].deletes, (unsigned long long)w[i].checksum);
		puts += w[i].puts;
		hits += w[i].hits;
		misses += w[i].misses;
		deletes += w[i].deletes;
		sum ^= w[i].checksum;
	}
	printf("total: %ld puts, %ld hits, %ld misses, %ld deletes, %ld keys left, checksum %016llx\n",
	       puts, hits, misses, deletes, remaining, (unsigned long long)sum);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	long ops = argc > 2 ? atol(argv[2]) : 20000;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 42;
	static struct store store;

	if (threads < 1 || threads > 256 || ops < 0) {
		fprintf(stderr, "usage: kvstore [THREADS (1-256) [OPS_PER_THREAD [SEED]]]\n");
		return 2;
	}
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 1;
	store_init(&store);
	for (int i = 0; i < threads; i++) {
		w[i].store = &store;
		w[i].id = i;
		w[i].ops = ops;
		w[i].rng = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i + 1;
		pthread_create(&w[i].thread, NULL, workload_run, &w[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].thread, NULL);
	report(w, threads, store_free(&store));
	free(w);
	return 0;
}
