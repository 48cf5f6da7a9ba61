/*
 * spin [CPU]: a busy loop pinned to CPU (default: wherever it runs), used as
 * background load on the harts a study is not measuring. Runs until killed.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

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
	for (;;)
		n++;
}
