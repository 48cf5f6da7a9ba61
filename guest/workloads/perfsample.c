/*
 * perfsample: does `perf record` work here? Opens a sampling perf event on
 * this thread (PERF_TYPE_HARDWARE cycles, instructions, or a raw event),
 * runs a busy loop, and counts the PERF_RECORD_SAMPLE records the kernel
 * wrote into the ring buffer — what `perf record` itself relies on. Sampling
 * needs counter-overflow interrupts (Sscofpmf); without them Linux refuses
 * a sampling event (EOPNOTSUPP) or never writes a sample.
 *
 *   perfsample [cycles|instructions|rN] [PERIOD] [LOOPS] [user|all]
 *
 * Prints "perfsample: EVENT period P: N samples, M in user mode, K lost"
 * and sends perfsample.samples on the metrics channel.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "marker.h"

#define RING_PAGES 64

static volatile uint64_t sink;

static void busy(long loops)
{
	uint64_t x = 1;
	for (long i = 0; i < loops; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

int main(int argc, char **argv)
{
	const char *ev = argc > 1 ? argv[1] : "cycles";
	uint64_t period = argc > 2 ? strtoull(argv[2], NULL, 0) : 100000;
	long loops = argc > 3 ? strtol(argv[3], NULL, 0) : 20000000;
	int user_only = argc > 4 && strcmp(argv[4], "user") == 0;
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	if (strcmp(ev, "cycles") == 0) {
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
	} else if (strcmp(ev, "instructions") == 0) {
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_INSTRUCTIONS;
	} else if (ev[0] == 'r') {
		a.type = PERF_TYPE_RAW;
		a.config = strtoull(ev + 1, NULL, 16);
	} else {
		fprintf(stderr, "perfsample: unknown event %s\n", ev);
		return 2;
	}
	a.sample_period = period;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	a.disabled = 1;
	a.exclude_kernel = user_only;
	a.exclude_hv = 1;
	int fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		printf("perfsample: %s period %llu: perf_event_open failed: %s (errno %d)\n", ev,
		       (unsigned long long)period, strerror(errno), errno);
		return 1;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = page * (RING_PAGES + 1);
	struct perf_event_mmap_page *meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED) {
		printf("perfsample: mmap of the ring failed: %s\n", strerror(errno));
		return 1;
	}
	static const char label[] = "perfsample";
	mark_phase(label, sizeof label - 1);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	busy(loops);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	/* Walk the records the kernel wrote (we never advanced data_tail, so
	 * the ring holds the first RING_PAGES pages' worth). */
	uint64_t head = meta->data_head;
	__sync_synchronize();
	const char *data = (const char *)meta + page;
	size_t size = page * RING_PAGES;
	uint64_t samples = 0, user = 0, lost = 0, pos = 0;
	while (pos < head && pos < size) {
		const struct perf_event_header *h = (const void *)(data + (pos % size));
		if (h->size == 0)
			break;
		if (h->type == PERF_RECORD_SAMPLE) {
			samples++;
			if (h->misc & PERF_RECORD_MISC_USER)
				user++;
		} else if (h->type == PERF_RECORD_LOST) {
			lost += ((const uint64_t *)(h + 1))[1];
		}
		pos += h->size;
	}
	uint64_t v[1] = { 0 };
	if (read(fd, v, sizeof v) != sizeof v)
		v[0] = 0;
	printf("perfsample: %s period %llu: %llu samples, %llu in user mode, %llu lost; count %llu\n", ev,
	       (unsigned long long)period, (unsigned long long)samples, (unsigned long long)user,
	       (unsigned long long)lost, (unsigned long long)v[0]);
	char text[128];
	snprintf(text, sizeof text, "perfsample.samples %llu count\nperfsample.count %llu count\n",
		 (unsigned long long)samples, (unsigned long long)v[0]);
	mark_send(text, strlen(text), "metrics", strlen("metrics"));
	fflush(stdout);
	return 0;
}
