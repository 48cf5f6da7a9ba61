/*
 * rtloop CPU ITERATIONS [DEVICE]: a SCHED_DEADLINE task (runtime = deadline =
 * period = 1 ms) pinned to CPU. Each iteration is one period: one device
 * operation, then sched_yield() to give up the rest of the period (the
 * seed's real-time loop). DEVICE is
 *   spi:/dev/spidev0.0         an 8-byte write through spidev
 *   gpio:/dev/gpiochip0:LINE   toggle one GPIO output line (the seed's control)
 *   /dev/spidev0.0             as spi:
 * and absent for an empty loop. Prints the wall time of the loop against the
 * ideal (ITERATIONS periods), the periods the loop overran, and the device
 * operation's time (mean, max), all in guest CLOCK_MONOTONIC time.
 *
 * A deadline task may only be pinned with admission control off, so this
 * writes -1 to /proc/sys/kernel/sched_rt_runtime_us first (a 100% task would
 * not pass admission control either). The phase markers "rtloop cpuN" and
 * "rtloop cpuN done" bracket the loop for the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

/* One device operation per period. */
struct device {
	int fd;          /* -1: none */
	int gpio;        /* 1: fd is a GPIO line request */
	int level;
};

static int open_device(const char *arg, struct device *d)
{
	d->fd = -1;
	d->gpio = 0;
	d->level = 0;
	if (strncmp(arg, "gpio:", 5) == 0) {
		char chip[256];
		const char *colon = strrchr(arg + 5, ':');
		struct gpio_v2_line_request req;
		int cfd;
		if (!colon || (size_t)(colon - (arg + 5)) >= sizeof chip) {
			fprintf(stderr, "rtloop: %s: expected gpio:/dev/gpiochipN:LINE\n", arg);
			return -1;
		}
		memcpy(chip, arg + 5, colon - (arg + 5));
		chip[colon - (arg + 5)] = 0;
		cfd = open(chip, O_RDWR);
		if (cfd < 0) {
			fprintf(stderr, "rtloop: cannot open %s: %s\n", chip, strerror(errno));
			return -1;
		}
		memset(&req, 0, sizeof req);
		req.offsets[0] = atoi(colon + 1);
		req.num_lines = 1;
		req.config.flags = GPIO_V2_LINE_FLAG_OUTPUT;
		strcpy(req.consumer, "rtloop");
		if (ioctl(cfd, GPIO_V2_GET_LINE_IOCTL, &req) != 0) {
			fprintf(stderr, "rtloop: %s: cannot request line %u as output: %s\n", chip, req.offsets[0], strerror(errno));
			return -1;
		}
		close(cfd);
		d->fd = req.fd;
		d->gpio = 1;
		return 0;
	}
	if (strncmp(arg, "spi:", 4) == 0)
		arg += 4;
	d->fd = open(arg, O_WRONLY);
	if (d->fd < 0) {
		fprintf(stderr, "rtloop: cannot open %s: %s\n", arg, strerror(errno));
		return -1;
	}
	return 0;
}

static int device_op(struct device *d)
{
	static const uint8_t payload[8] = { 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04 };
	if (d->fd < 0)
		return 0;
	if (d->gpio) {
		struct gpio_v2_line_values v = { .bits = 0, .mask = 1 };
		d->level ^= 1;
		v.bits = d->level;
		return ioctl(d->fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v);
	}
	return write(d->fd, payload, sizeof payload) == (ssize_t)sizeof payload ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct sched_attr_v1 attr;
	cpu_set_t set;
	struct device dev = { .fd = -1 };
	int cpu;
	long iterations, i, overruns = 0;
	double start, elapsed, op_sum = 0, op_max = 0, prev;
	char label[64];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: rtloop CPU ITERATIONS [spi:/dev/spidevB.C | gpio:/dev/gpiochipN:LINE]\n");
		return 2;
	}
	cpu = atoi(argv[1]);
	iterations = strtol(argv[2], NULL, 0);
	if (iterations <= 0) {
		fprintf(stderr, "rtloop: ITERATIONS must be a positive number\n");
		return 2;
	}
	if (argc == 4 && open_device(argv[3], &dev) != 0)
		return 1;
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

	/* Start on a period boundary: the first yield ends the partial period. */
	sched_yield();
	snprintf(label, sizeof label, "rtloop cpu%d", cpu);
	phase(label);
	start = prev = now();
	for (i = 0; i < iterations; i++) {
		double t0 = now(), t1;
		/* More than 1.5 periods since the last iteration began: a period was lost. */
		if (i > 0 && t0 - prev > 1.5e-3)
			overruns++;
		prev = t0;
		if (device_op(&dev) != 0) {
			fprintf(stderr, "rtloop: device operation %ld failed: %s\n", i, strerror(errno));
			return 1;
		}
		t1 = now();
		op_sum += t1 - t0;
		if (t1 - t0 > op_max)
			op_max = t1 - t0;
		sched_yield();
	}
	elapsed = now() - start;
	snprintf(label, sizeof label, "rtloop cpu%d done", cpu);
	phase(label);
	printf("rtloop: cpu %d, %ld iterations, %.6f s (ideal %.6f s, %+.1f%%), %ld overrun periods, op mean %.2f us max %.2f us\n",
	       cpu, iterations, elapsed, iterations / 1000.0, (elapsed / (iterations / 1000.0) - 1) * 100, overruns,
	       op_sum / iterations * 1e6, op_max * 1e6);
	return 0;
}
