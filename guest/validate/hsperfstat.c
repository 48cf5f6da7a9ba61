/*
 * hsperfstat: count one program the way `perf stat -e
 * cycles,instructions,branches,branch-misses PROG` does on a board — the
 * whole process, user and kernel, counters inherited by its children,
 * enabled at its exec — and print one line:
 *
 *   hsperfstat NAME instructions=N cycles=N branches=N branch-misses=N status=S
 *
 * (a counter the kernel refused or never ran prints `-1`). Around the run it
 * marks the phases `NAME` and `NAME done`, so hartscope's own phase table
 * has the same window seen from outside.
 *
 * Built per run by `hartscope validate` (static, with the cross compiler),
 * not part of any image.
 *
 * Usage: hsperfstat NAME PROG [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "marker.h"

#define NCOUNTERS 4

static const struct {
	const char *name;
	uint64_t config;
} counters[NCOUNTERS] = {
	{ "instructions", PERF_COUNT_HW_INSTRUCTIONS },
	{ "cycles", PERF_COUNT_HW_CPU_CYCLES },
	{ "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_COUNT_HW_BRANCH_MISSES },
};

static int open_counter(pid_t pid, uint64_t config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return (int)syscall(__NR_perf_event_open, &a, pid, -1, -1, 0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: hsperfstat NAME PROG [ARGS...]\n");
		return 2;
	}
	const char *name = argv[1];
	int go[2];
	if (pipe(go) != 0) {
		perror("hsperfstat: pipe");
		return 2;
	}
	char label[MARK_PHASE_MAX];
	snprintf(label, sizeof label, "%s", name);
	mark_phase(label, strlen(label));
	pid_t child = fork();
	if (child < 0) {
		perror("hsperfstat: fork");
		return 2;
	}
	if (child == 0) {
		/* wait until the counters are attached, then exec (which enables them) */
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execv(argv[2], &argv[2]);
		fprintf(stderr, "hsperfstat: cannot run %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	int fd[NCOUNTERS];
	for (int i = 0; i < NCOUNTERS; i++) {
		fd[i] = open_counter(child, counters[i].config);
		if (fd[i] < 0)
			fprintf(stderr, "hsperfstat: %s: counter %s unavailable (errno %d)\n", name,
				counters[i].name, errno);
	}
	if (write(go[1], "g", 1) != 1) {
		perror("hsperfstat: write");
		return 2;
	}
	int status = 0;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	snprintf(label, sizeof label, "%s done", name);
	mark_phase(label, strlen(label));
	printf("hsperfstat %s", name);
	for (int i = 0; i < NCOUNTERS; i++) {
		uint64_t v[3] = { 0, 0, 0 };
		long long shown = -1;
		if (fd[i] >= 0 && read(fd[i], v, sizeof v) == sizeof v && v[2] != 0)
			shown = (long long)v[0];
		printf(" %s=%lld", counters[i].name, shown);
	}
	printf(" status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	fflush(stdout);
	return 0;
}
