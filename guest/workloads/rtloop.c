/*
 * rtloop CPU ITERATIONS [SPIDEV]: a SCHED_DEADLINE task (runtime = deadline =
 * period = 1 ms) pinned to CPU. Each iteration is one period: optionally an
 * 8-byte write to SPIDEV, then sched_yield() to give up the rest of the
 * period. Prints the wall time of the loop; ITERATIONS periods is the ideal.
 *
 * A deadline task may only be pinned with admission control off, so this
 * writes -1 to /proc/sys/kernel/sched_rt_runtime_us first (a 100% task would
 * not pass admission control either).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "marker.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

struct sched_attr_v1 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

static void phase(const char *label) { mark_phase(label, strlen(label)); }

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;
	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sched_attr_v1 attr;
	cpu_set_t set;
	int cpu, spi = -1;
	long iterations, i;
	const uint8_t payload[8] = { 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04 };
	double start, elapsed;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: rtloop CPU ITERATIONS [SPIDEV]\n");
		return 2;
	}
	cpu = atoi(argv[1]);
	iterations = strtol(argv[2], NULL, 0);
	if (iterations <= 0) {
		fprintf(stderr, "rtloop: ITERATIONS must be a positive number\n");
		return 2;
	}
	if (argc == 4) {
		spi = open(argv[3], O_WRONLY);
		if (spi < 0) {
			fprintf(stderr, "rtloop: cannot open %s: %s\n", argv[3], strerror(errno));
			return 1;
		}
	}
	if (write_file("/proc/sys/kernel/sched_rt_runtime_us", "-1\n") != 0) {
		fprintf(stderr, "rtloop: cannot disable deadline admission control: %s\n", strerror(errno));
		return 1;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0) {
		fprintf(stderr, "rtloop: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		return 1;
	}
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.sched_policy = SCHED_DEADLINE;
	attr.sched_runtime = 1000000;
	attr.sched_deadline = 1000000;
	attr.sched_period = 1000000;
	if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
		fprintf(stderr, "rtloop: sched_setattr(SCHED_DEADLINE): %s\n", strerror(errno));
		return 1;
	}

	phase("rtloop");
	start = now();
	for (i = 0; i < iterations; i++) {
		if (spi >= 0 && write(spi, payload, sizeof payload) != (ssize_t)sizeof payload) {
			fprintf(stderr, "rtloop: spidev write %ld failed: %s\n", i, strerror(errno));
			return 1;
		}
		sched_yield();
	}
	elapsed = now() - start;
	phase("rtloop done");
	printf("rtloop: cpu %d, %ld iterations, %.6f s (ideal %.6f s)\n", cpu, iterations, elapsed,
	       iterations / 1000.0);
	return 0;
}
