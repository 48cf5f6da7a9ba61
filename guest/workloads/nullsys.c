/*
 * nullsys [COUNT]: calls getppid COUNT times (default 100000) between two
 * phase markers, so the host can divide the cycles of the middle phase by
 * COUNT to get cycles per system call. Also measures the loop itself with
 * CLOCK_MONOTONIC (the guest's own view, to check the host's against),
 * prints nanoseconds per call and sends it on the `metrics` channel as
 * `getppid_ns_per_call VALUE ns` (docs/markers.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "marker.h"

static void phase(const char *label) { mark_phase(label, strlen(label)); }

int main(int argc, char **argv)
{
	long count = argc > 1 ? strtol(argv[1], NULL, 0) : 100000;
	long i;
	struct timespec t0, t1;
	double ns;
	char text[96];
	if (count <= 0) {
		fprintf(stderr, "nullsys: COUNT must be a positive number\n");
		return 2;
	}
	phase("nullsys getppid loop");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The raw syscall, so no libc caching can skip the kernel. */
	for (i = 0; i < count; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	phase("nullsys done");
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("nullsys: %ld getppid calls, %.2f ns per call (CLOCK_MONOTONIC)\n", count, ns / count);
	snprintf(text, sizeof text, "getppid_ns_per_call %.2f ns\n", ns / count);
	mark_send(text, strlen(text), "metrics", strlen("metrics"));
	return 0;
}
