/*
 * ipiping [pipe|futex] ROUNDS [CLIENT_CPU SERVER_CPU]: a synchronous
 * request/response of an empty request between two processes pinned to
 * different CPUs (default 0 and 1), ROUNDS round trips (after 10 warm-up
 * rounds that are not counted). The server blocks between requests, so its
 * CPU sleeps and each request has to wake it: with `pipe` the request and
 * the response are one byte through a pipe each way; with `futex` they are
 * a shared word and FUTEX_WAIT / FUTEX_WAKE.
 *
 * Each round trip is timed with CLOCK_MONOTONIC (guest time). Prints the
 * distribution (min, median, p90, p99, max, mean in microseconds) and sends
 * it to the host on the marker channel `metrics`, one `NAME VALUE UNIT`
 * line per value (docs/markers.md), and every round trip in nanoseconds on
 * the channel `rtt_ns`. The timed loop is the phase `ipiping MODE`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "marker.h"

#define WARMUP 10
#define MAX_ROUNDS 100000

static void phase(const char *label) { mark_phase(label, strlen(label)); }

static void send_text(const char *chan, const char *text)
{
	mark_send(text, strlen(text), chan, strlen(chan));
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		fprintf(stderr, "ipiping: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		return -1;
	}
	return 0;
}

static long futex(volatile uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, (uint32_t *)word, op, val, NULL, NULL, 0);
}

/* Wait until *word == want (shared-memory futex, not private: two processes). */
static void futex_wait_for(volatile uint32_t *word, uint32_t want)
{
	uint32_t v;
	while ((v = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != want)
		futex(word, FUTEX_WAIT, v);
}

static void futex_set(volatile uint32_t *word, uint32_t v)
{
	__atomic_store_n(word, v, __ATOMIC_RELEASE);
	futex(word, FUTEX_WAKE, 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static uint64_t pct(const uint64_t *v, long n, int p)
{
	long rank = (p * n + 99) / 100;
	if (rank < 1)
		rank = 1;
	return v[rank - 1];
}

int main(int argc, char **argv)
{
	int use_futex, client_cpu = 0, server_cpu = 1, req[2], resp[2];
	long rounds, total, i;
	volatile uint32_t *shared;
	uint64_t *rtt, sum = 0;
	pid_t child;
	char byte = 0, label[64], *text;
	size_t cap, len;

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: ipiping pipe|futex ROUNDS [CLIENT_CPU SERVER_CPU]\n");
		return 2;
	}
	if (strcmp(argv[1], "pipe") != 0 && strcmp(argv[1], "futex") != 0) {
		fprintf(stderr, "ipiping: the mode is `pipe` or `futex`, not `%s`\n", argv[1]);
		return 2;
	}
	use_futex = argv[1][0] == 'f';
	rounds = strtol(argv[2], NULL, 0);
	if (rounds <= 0 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "ipiping: ROUNDS must be 1 to %d\n", MAX_ROUNDS);
		return 2;
	}
	if (argc == 5) {
		client_cpu = atoi(argv[3]);
		server_cpu = atoi(argv[4]);
	}
	if (client_cpu == server_cpu) {
		fprintf(stderr, "ipiping: the client and the server must be on different CPUs\n");
		return 2;
	}
	total = rounds + WARMUP;
	rtt = calloc(total, sizeof *rtt);
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!rtt || shared == MAP_FAILED || pipe(req) != 0 || pipe(resp) != 0) {
		fprintf(stderr, "ipiping: set-up failed: %s\n", strerror(errno));
		return 1;
	}
	shared[0] = 0; /* futex mode: 1 = request posted, 0 = answered */
	shared[1] = 0; /* the server is pinned and ready */
	if (pin(client_cpu) != 0)
		return 1;

	child = fork();
	if (child < 0) {
		fprintf(stderr, "ipiping: fork: %s\n", strerror(errno));
		return 1;
	}
	if (child == 0) {
		if (pin(server_cpu) != 0)
			_exit(1);
		futex_set(&shared[1], 1);
		for (i = 0; i < total; i++) {
			if (use_futex) {
				futex_wait_for(&shared[0], 1);
				futex_set(&shared[0], 0);
			} else if (read(req[0], &byte, 1) != 1 || write(resp[1], &byte, 1) != 1) {
				_exit(1);
			}
		}
		_exit(0);
	}

	futex_wait_for(&shared[1], 1);
	snprintf(label, sizeof label, "ipiping %s", argv[1]);
	for (i = 0; i < total; i++) {
		uint64_t t0, t1;
		if (i == WARMUP)
			phase(label);
		t0 = now_ns();
		if (use_futex) {
			futex_set(&shared[0], 1);
			futex_wait_for(&shared[0], 0);
		} else if (write(req[1], &byte, 1) != 1 || read(resp[0], &byte, 1) != 1) {
			fprintf(stderr, "ipiping: round %ld: pipe: %s\n", i, strerror(errno));
			return 1;
		}
		t1 = now_ns();
		rtt[i] = t1 - t0;
	}
	phase("ipiping done");
	{
		int status = 0;
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "ipiping: the server failed\n");
			return 1;
		}
	}

	/* Every counted round trip, in order, before sorting. */
	cap = (size_t)rounds * 24 + 64;
	text = malloc(cap);
	if (!text)
		return 1;
	len = 0;
	for (i = WARMUP; i < total; i++)
		len += snprintf(text + len, cap - len, "%llu\n", (unsigned long long)rtt[i]);
	for (size_t off = 0; off < len; off += MARK_SEND_MAX)
		mark_send(text + off, len - off < MARK_SEND_MAX ? len - off : MARK_SEND_MAX, "rtt_ns", 6);

	qsort(rtt + WARMUP, rounds, sizeof *rtt, cmp_u64);
	for (i = WARMUP; i < total; i++)
		sum += rtt[i];
	{
		const uint64_t *v = rtt + WARMUP;
		struct {
			const char *name;
			uint64_t ns;
		} rows[] = {
			{ "min", v[0] },
			{ "p50", pct(v, rounds, 50) },
			{ "p90", pct(v, rounds, 90) },
			{ "p99", pct(v, rounds, 99) },
			{ "max", v[rounds - 1] },
			{ "mean", sum / rounds },
		};
		len = 0;
		len += snprintf(text + len, cap - len, "rounds %ld count\n", rounds);
		printf("ipiping %s: %ld round trips, CPU %d <-> CPU %d, microseconds:", argv[1], rounds, client_cpu,
		       server_cpu);
		for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
			printf(" %s %.3f", rows[r].name, rows[r].ns / 1000.0);
			len += snprintf(text + len, cap - len, "rtt_us.%s %.3f us\n", rows[r].name, rows[r].ns / 1000.0);
		}
		printf("\n");
	}
	send_text("metrics", text);
	fflush(stdout);
	return 0;
}
