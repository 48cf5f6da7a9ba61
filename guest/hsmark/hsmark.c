/*
 * hsmark: exposes the hartscope marker instruction to shell scripts.
 * The encoding is defined once, in docs/markers.md. On real hardware and on
 * QEMU the instruction is a HINT that does nothing, so every command here is
 * safe to run anywhere and returns 0 unless its arguments are wrong.
 *
 *   hsmark phase LABEL...        a new phase starts (words joined by spaces)
 *   hsmark exit STATUS           the workload finished with STATUS
 *   hsmark send FILE [CHANNEL]   stream FILE to CHANNEL (default: FILE's
 *                                base name, or maps/PID for /proc/PID/maps)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "marker.h"

static int usage(void)
{
	fputs("usage: hsmark phase LABEL... | hsmark exit STATUS | hsmark send FILE [CHANNEL]\n", stderr);
	return 2;
}

static int cmd_phase(int argc, char **argv)
{
	static char label[MARK_PHASE_MAX];
	size_t len = 0;
	int i;
	for (i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);
		if (i > 0 && len < sizeof label)
			label[len++] = ' ';
		if (n > sizeof label - len)
			n = sizeof label - len;
		memcpy(label + len, argv[i], n);
		len += n;
	}
	mark_phase(label, len);
	return 0;
}

static int cmd_exit(const char *arg)
{
	char *end;
	long status;
	errno = 0;
	status = strtol(arg, &end, 0);
	if (errno || *arg == '\0' || *end != '\0') {
		fprintf(stderr, "hsmark: exit status `%s` is not a number\n", arg);
		return 2;
	}
	mark_exit(status);
	return 0;
}

static void default_channel(const char *path, char *out, size_t cap)
{
	const char *base = strrchr(path, '/');
	int pid;
	char tail[16];
	if (sscanf(path, "/proc/%d/%15s", &pid, tail) == 2 && strcmp(tail, "maps") == 0) {
		snprintf(out, cap, "maps/%d", pid);
		return;
	}
	snprintf(out, cap, "%s", base ? base + 1 : path);
}

static int cmd_send(const char *path, const char *channel_arg)
{
	static char buf[MARK_SEND_MAX];
	char channel[MARK_CHANNEL_MAX + 1];
	size_t chan_len;
	int fd;
	if (channel_arg)
		snprintf(channel, sizeof channel, "%s", channel_arg);
	else
		default_channel(path, channel, sizeof channel);
	chan_len = strlen(channel);
	if (chan_len == 0) {
		fputs("hsmark: channel name is empty\n", stderr);
		return 2;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "hsmark: cannot open %s: %s\n", path, strerror(errno));
		return 1;
	}
	for (;;) {
		/* Fill whole chunks: /proc files return short reads. */
		size_t have = 0;
		while (have < sizeof buf) {
			ssize_t n = read(fd, buf + have, sizeof buf - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				fprintf(stderr, "hsmark: cannot read %s: %s\n", path, strerror(errno));
				close(fd);
				return 1;
			}
			if (n == 0)
				break;
			have += (size_t)n;
		}
		if (have == 0)
			break;
		mark_send(buf, have, channel, chan_len);
		if (have < sizeof buf)
			break;
	}
	close(fd);
	mark_send(buf, 0, channel, chan_len);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "phase") == 0)
		return cmd_phase(argc - 2, argv + 2);
	if (strcmp(argv[1], "exit") == 0 && argc == 3)
		return cmd_exit(argv[2]);
	if (strcmp(argv[1], "send") == 0 && (argc == 3 || argc == 4))
		return cmd_send(argv[2], argc == 4 ? argv[3] : NULL);
	return usage();
}
