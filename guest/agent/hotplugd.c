/*
 * hotplugd: load the modules of devices that appear after the agent's
 * coldplug pass (an SD card found on its bus, a virtio device behind a
 * virtio-mmio window that a module just bound).
 *
 * It listens for the kernel's uevents on netlink, as udev and mdev do, and
 * runs `modprobe -q MODALIAS` once for each alias an "add" event names. It
 * returns to its caller once it is listening (so no later event is missed)
 * and carries on in the background. Unlike `mdev -d` it does no initial scan
 * of /sys (the agent has just done that), which keeps boot short.
 */
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SEEN 256

static char *seen[MAX_SEEN];
static int nseen;

/* True the first time `alias` is asked about. */
static int first_time(const char *alias)
{
	for (int i = 0; i < nseen; i++)
		if (strcmp(seen[i], alias) == 0)
			return 0;
	if (nseen < MAX_SEEN) {
		char *copy = strdup(alias);
		if (copy)
			seen[nseen++] = copy;
	}
	return 1;
}

static void modprobe(const char *alias)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/sbin/modprobe", "modprobe", "-q", alias, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

int main(void)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (fd < 0) {
		perror("hotplugd: netlink socket");
		return 1;
	}
	struct sockaddr_nl addr = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		perror("hotplugd: bind");
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("hotplugd: fork");
		return 1;
	}
	if (pid > 0)
		return 0;
	setsid();

	static char buf[8192];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
		if (n <= 0)
			continue; /* EINTR, or ENOBUFS after a burst: keep listening */
		buf[n] = '\0';
		/* "ACTION@DEVPATH\0KEY=VALUE\0KEY=VALUE\0..." */
		const char *action = NULL, *alias = NULL;
		for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
			if (strncmp(p, "ACTION=", 7) == 0)
				action = p + 7;
			else if (strncmp(p, "MODALIAS=", 9) == 0)
				alias = p + 9;
		}
		if (action && alias && strcmp(action, "add") == 0 && first_time(alias))
			modprobe(alias);
	}
}
