/*
 * ttcp: a ttcp-like TCP bulk transfer that reports bytes per second.
 *
 *   ttcp -r [-p PORT] [-l LEN]                    receive and discard
 *   ttcp -c HOST [-p PORT] [-l LEN] [-n COUNT]    connect to HOST, ask for LEN x COUNT bytes
 *                                                 (8-byte big-endian count), receive until it closes
 *   ttcp -t HOST [-p PORT] [-l LEN] [-n COUNT]    send LEN x COUNT bytes
 *   ttcp [-p PORT] [-l LEN] [-n COUNT]            both ends over loopback
 *
 * -b BYTES sets the socket's send and receive buffers (SO_SNDBUF, SO_RCVBUF;
 * default: the kernel's, autotuned); -m BYTES its maximum segment size
 * (TCP_MAXSEG, before connecting: the packet size on the wire both ways);
 * -P LABEL names the transfer's phase marker (default "ttcp receive" /
 * "ttcp transmit"), so a study can tell its transfers apart.
 *
 * -u: UDP instead, with -c or -t only. `-u -c HOST` asks HOST's UDP source
 * for COUNT datagrams of LEN bytes (a 12-byte request: 8-byte big-endian
 * count, 4-byte big-endian size; asked again every 100 ms until the first
 * arrives) and takes them until an end marker (a datagram of 4 bytes or
 * fewer) or 500 ms of silence; it prints bytes, datagrams and loss as
 * `ttcp-r: ...` and the FNV-1a of the payloads in arrival order. `-u -t
 * HOST` sends COUNT datagrams of LEN bytes (byte i of each is i mod 256),
 * then four one-byte end markers; its time runs until the socket's queue
 * has drained (SIOCOUTQ: every datagram handed to the device below).
 * A transmitter shuts its side down after the last write and waits for the
 * receiver to close, so its time covers delivery, not just queueing; it
 * sends its figures on the `metrics` channel too (ttcp_t.*).
 *
 * Defaults: LEN 8192, COUNT 2048 (16 MiB), PORT 5001. The transmit and
 * receive phases are bracketed by markers. A receiver prints, as the
 * Openmoko seed's ttcp-r did, bytes, real seconds and KB/sec, then its own
 * user and system time, the FNV-1a 64 of the bytes received, and sends the
 * figures on the marker channel `metrics` (ttcp_r.*).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "marker.h"

static void phase(const char *label) { mark_phase(label, strlen(label)); }

static int sockbuf, mss;
static const char *label;

/* -b and -m, on a socket before it connects or listens. */
static void tune(int fd)
{
	if (sockbuf > 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
	}
	if (mss > 0 && setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss) != 0)
		perror("ttcp: TCP_MAXSEG");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void report(const char *who, long long bytes, double secs)
{
	printf("ttcp-%s: %lld bytes in %.6f s = %.1f bytes/s\n", who, bytes, secs,
	       secs > 0 ? bytes / secs : 0.0);
	fflush(stdout);
}

static int listen_on(int port)
{
	struct sockaddr_in sa;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	tune(fd);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static double tv(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

/* Read `fd` until EOF in LEN-byte reads; the seed's ttcp-r lines. */
static int receive_from(int fd, long len)
{
	char *buf = malloc(len), text[512];
	long long total = 0;
	unsigned long long fnv = 0xcbf29ce484222325ull;
	double start, secs;
	struct rusage ru0, ru1;
	ssize_t n;
	if (!buf) {
		perror("ttcp-r: malloc");
		return 1;
	}
	phase(label ? label : "ttcp receive");
	getrusage(RUSAGE_SELF, &ru0);
	start = now();
	while ((n = read(fd, buf, len)) > 0) {
		total += n;
		for (ssize_t i = 0; i < n; i++)
			fnv = (fnv ^ (unsigned char)buf[i]) * 0x100000001b3ull;
	}
	secs = now() - start;
	getrusage(RUSAGE_SELF, &ru1);
	phase("ttcp done");
	if (n < 0) {
		perror("ttcp-r: read");
		return 1;
	}
	report("r", total, secs);
	{
		double user = tv(ru1.ru_utime) - tv(ru0.ru_utime), sys = tv(ru1.ru_stime) - tv(ru0.ru_stime);
		double kbs = secs > 0 ? total / 1024.0 / secs : 0.0;
		printf("ttcp-r: %lld bytes in %.2f real seconds = %.2f KB/sec +++\n", total, secs, kbs);
		printf("ttcp-r: %.2fuser %.2fsys\n", user, sys);
		printf("ttcp-r: fnv1a %016llx\n", fnv);
		snprintf(text, sizeof text,
			 "ttcp_r.bytes %lld B\nttcp_r.seconds %.6f s\nttcp_r.kb_per_s %.3f KB/s\n"
			 "ttcp_r.user %.6f s\nttcp_r.sys %.6f s\n",
			 total, secs, kbs, user, sys);
		mark_send(text, strlen(text), "metrics", strlen("metrics"));
	}
	fflush(stdout);
	close(fd);
	free(buf);
	return 0;
}

static int receive(int lfd, long len)
{
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("ttcp-r: accept");
		return 1;
	}
	return receive_from(fd, len);
}

/*
 * Connect to HOST:PORT and receive: the sender there (hartscope's network
 * peer) sends as many bytes as the 8-byte big-endian count we write first.
 */
static int receive_client(const char *host, int port, long len, long count)
{
	unsigned long long want = (unsigned long long)len * count;
	unsigned char req[8];
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("ttcp-r: socket");
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "ttcp-r: `%s` is not an IPv4 address\n", host);
		return 2;
	}
	tune(fd);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		fprintf(stderr, "ttcp-r: connect to %s:%d: %s\n", host, port, strerror(errno));
		return 1;
	}
	for (int i = 0; i < 8; i++)
		req[i] = (unsigned char)(want >> (56 - 8 * i));
	if (write(fd, req, sizeof req) != (ssize_t)sizeof req) {
		perror("ttcp-r: write request");
		return 1;
	}
	return receive_from(fd, len);
}

static int transmit(const char *host, int port, long len, long count)
{
	struct sockaddr_in sa;
	char *buf = malloc(len);
	long i;
	double start, secs;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || !buf) {
		perror("ttcp-t: socket");
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "ttcp-t: `%s` is not an IPv4 address\n", host);
		return 2;
	}
	tune(fd);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		fprintf(stderr, "ttcp-t: connect to %s:%d: %s\n", host, port, strerror(errno));
		return 1;
	}
	for (i = 0; i < len; i++)
		buf[i] = (char)i;
	phase(label ? label : "ttcp transmit");
	start = now();
	for (i = 0; i < count; i++) {
		long off = 0;
		while (off < len) {
			ssize_t n = write(fd, buf + off, len - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				perror("ttcp-t: write");
				return 1;
			}
			off += n;
		}
	}
	/* Delivered, not just queued: wait for the receiver's close. */
	shutdown(fd, SHUT_WR);
	while (read(fd, buf, len) > 0)
		;
	secs = now() - start;
	phase("ttcp done");
	close(fd);
	report("t", (long long)len * count, secs);
	{
		char text[256];
		snprintf(text, sizeof text, "ttcp_t.bytes %lld B\nttcp_t.seconds %.6f s\nttcp_t.kb_per_s %.3f KB/s\n",
			 (long long)len * count, secs, secs > 0 ? len * count / 1024.0 / secs : 0.0);
		mark_send(text, strlen(text), "metrics", strlen("metrics"));
	}
	free(buf);
	return 0;
}

/* UDP from HOST's source: ask, then take datagrams until an end marker. */
static int udp_receive(const char *host, int port, long len, long count)
{
	struct sockaddr_in sa;
	unsigned char req[12], *buf = malloc(65536);
	unsigned long long fnv = 0xcbf29ce484222325ull, want = count;
	long long total = 0, got = 0;
	double start = 0, last = 0;
	char text[256];
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || !buf) {
		perror("ttcp-r: socket");
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "ttcp-r: `%s` is not an IPv4 address\n", host);
		return 2;
	}
	if (sockbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		fprintf(stderr, "ttcp-r: connect to %s:%d: %s\n", host, port, strerror(errno));
		return 1;
	}
	for (int i = 0; i < 8; i++)
		req[i] = (unsigned char)(want >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		req[8 + i] = (unsigned char)((unsigned long)len >> (24 - 8 * i));
	phase(label ? label : "ttcp receive");
	for (int tries = 0;; tries++) {
		struct pollfd p = {fd, POLLIN, 0};
		if (got == 0 && write(fd, req, sizeof req) != (ssize_t)sizeof req) {
			perror("ttcp-r: request");
			return 1;
		}
		int r = poll(&p, 1, got == 0 ? 100 : 500);
		if (r == 0 && got == 0 && tries < 50)
			continue;
		if (r <= 0)
			break;
		ssize_t n = read(fd, buf, 65536);
		if (n < 0) {
			perror("ttcp-r: read");
			return 1;
		}
		if (n <= 4)
			break;
		if (got++ == 0)
			start = now();
		last = now();
		total += n;
		for (ssize_t i = 0; i < n; i++)
			fnv = (fnv ^ buf[i]) * 0x100000001b3ull;
	}
	phase("ttcp done");
	double secs = last - start;
	report("r", total, secs);
	printf("ttcp-r: %lld datagrams of %ld, %lld lost\n", got, count, (long long)count - got);
	printf("ttcp-r: fnv1a %016llx\n", fnv);
	snprintf(text, sizeof text, "ttcp_r.bytes %lld B\nttcp_r.seconds %.6f s\nttcp_r.datagrams %lld\nttcp_r.lost %lld\n",
		 total, secs, got, (long long)count - got);
	mark_send(text, strlen(text), "metrics", strlen("metrics"));
	fflush(stdout);
	close(fd);
	free(buf);
	return got > 0 ? 0 : 1;
}

/* UDP to HOST: COUNT datagrams of LEN bytes, then end markers. */
static int udp_transmit(const char *host, int port, long len, long count)
{
	struct sockaddr_in sa;
	char *buf = malloc(len), text[256];
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || !buf) {
		perror("ttcp-t: socket");
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "ttcp-t: `%s` is not an IPv4 address\n", host);
		return 2;
	}
	if (sockbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		fprintf(stderr, "ttcp-t: connect to %s:%d: %s\n", host, port, strerror(errno));
		return 1;
	}
	for (long i = 0; i < len; i++)
		buf[i] = (char)i;
	phase(label ? label : "ttcp transmit");
	double start = now();
	for (long i = 0; i < count; i++) {
		if (write(fd, buf, len) != len) {
			if (errno == ENOBUFS) { /* the queue below is full: try again */
				i--;
				continue;
			}
			perror("ttcp-t: write");
			return 1;
		}
	}
	/* Handed to the device, not just queued (at most 2 s). */
	for (int k = 0, q = 0; k < 2000 && ioctl(fd, SIOCOUTQ, &q) == 0 && q > 0; k++)
		usleep(1000);
	double secs = now() - start;
	for (int i = 0; i < 4; i++)
		if (write(fd, buf, 1) != 1)
			perror("ttcp-t: end marker");
	phase("ttcp done");
	report("t", (long long)len * count, secs);
	snprintf(text, sizeof text, "ttcp_t.bytes %lld B\nttcp_t.seconds %.6f s\n", (long long)len * count, secs);
	mark_send(text, strlen(text), "metrics", strlen("metrics"));
	close(fd);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	long len = 8192, count = 2048;
	int port = 5001, opt, mode = 0, udp = 0; /* mode: 0 loopback, 'r', 'c', 't' */
	const char *host = "127.0.0.1";
	while ((opt = getopt(argc, argv, "rc:t:p:l:n:b:m:P:u")) != -1) {
		switch (opt) {
		case 'r': mode = 'r'; break;
		case 'c': mode = 'c'; host = optarg; break;
		case 't': mode = 't'; host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'l': len = strtol(optarg, NULL, 0); break;
		case 'n': count = strtol(optarg, NULL, 0); break;
		case 'b': sockbuf = atoi(optarg); break;
		case 'm': mss = atoi(optarg); break;
		case 'P': label = optarg; break;
		case 'u': udp = 1; break;
		default:
			fprintf(stderr, "usage: ttcp [-r | -c HOST | -t HOST] [-p PORT] [-l LEN] [-n COUNT] [-b SOCKBUF] [-m MSS] [-P LABEL] [-u]\n");
			return 2;
		}
	}
	if (len <= 0 || count <= 0) {
		fprintf(stderr, "ttcp: LEN and COUNT must be positive\n");
		return 2;
	}
	if (udp && mode == 't')
		return udp_transmit(host, port, len, count);
	if (udp && mode == 'c')
		return udp_receive(host, port, len, count);
	if (udp) {
		fprintf(stderr, "ttcp: -u goes with -c HOST or -t HOST\n");
		return 2;
	}
	if (mode == 't')
		return transmit(host, port, len, count);
	if (mode == 'c')
		return receive_client(host, port, len, count);
	{
		int lfd = listen_on(port), status = 0;
		pid_t child;
		if (lfd < 0) {
			fprintf(stderr, "ttcp-r: cannot listen on port %d: %s\n", port, strerror(errno));
			return 1;
		}
		if (mode == 'r')
			return receive(lfd, len);
		child = fork();
		if (child == 0) {
			close(lfd);
			_exit(transmit("127.0.0.1", port, len, count));
		}
		if (receive(lfd, len) != 0)
			return 1;
		waitpid(child, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
}
