/*
 * nullsys [COUNT]: calls getppid COUNT times (default 100000) between two
 * phase markers, so the host can divide the cycles of the middle phase by
 * COUNT to get cycles per system call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "marker.h"

static void phase(const char *label) { mark_phase(label, strlen(label)); }

int main(int argc, char **argv)
{
	long count = argc > 1 ? strtol(argv[1], NULL, 0) : 100000;
	long i;
	if (count <= 0) {
		fprintf(stderr, "nullsys: COUNT must be a positive number\n");
		return 2;
	}
	phase("nullsys getppid loop");
	/* The raw syscall, so no libc caching can skip the kernel. */
	for (i = 0; i < count; i++)
		syscall(SYS_getppid);
	phase("nullsys done");
	printf("nullsys: %ld getppid calls\n", count);
	return 0;
}
