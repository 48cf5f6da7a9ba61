/*
 * spin [CPU [fifo PRIO BUSY_US PERIOD_US]]: background load pinned to CPU
 * (default: wherever it runs). Without "fifo": a busy loop at normal
 * priority, forever. With "fifo": a SCHED_FIFO task at PRIO that is busy
 * BUSY_US out of every PERIOD_US (absolute periods, clock_nanosleep) — a
 * higher-priority real-time load that delays whatever else must run on
 * that CPU. Runs until killed.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long ns(const struct timespec *t) { return t->tv_sec * 1000000000LL + t->tv_nsec; }

int main(int argc, char **argv)
{
	volatile unsigned long n = 0;
	if (argc > 1) {
		cpu_set_t set;
		int cpu = atoi(argv[1]);
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0) {
			perror("spin: sched_setaffinity");
			return 1;
		}
	}
	if (argc == 6 && strcmp(argv[2], "fifo") == 0) {
		struct sched_param sp = { .sched_priority = atoi(argv[3]) };
		long long busy = atoll(argv[4]) * 1000, period = atoll(argv[5]) * 1000;
		struct timespec next, now;
		if (busy <= 0 || period <= busy) {
			fprintf(stderr, "spin: need 0 < BUSY_US < PERIOD_US\n");
			return 2;
		}
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
			perror("spin: sched_setscheduler(SCHED_FIFO)");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &next);
		for (;;) {
			long long end = ns(&next) + busy;
			do {
				n++;
				clock_gettime(CLOCK_MONOTONIC, &now);
			} while (ns(&now) < end);
			next.tv_nsec += period;
			while (next.tv_nsec >= 1000000000) {
				next.tv_nsec -= 1000000000;
				next.tv_sec++;
			}
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		}
	} else if (argc > 2) {
		fprintf(stderr, "usage: spin [CPU [fifo PRIO BUSY_US PERIOD_US]]\n");
		return 2;
	}
	for (;;)
		n++;
}
