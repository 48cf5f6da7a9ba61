/*
 * nicd: a user-space driver for the OpenCores Ethernet MAC (ethoc) behind a
 * process boundary, for the nic-boundary study (the Genode seed's NIC driver
 * in its own address space).
 *
 *   nicd [-u /dev/uio0] [-i tap0] [-a gp|slot] [-c byte|word] [-n packet|batch]
 *
 * Two processes share one anonymous mapping holding two packet streams
 * (Genode's packet-stream model: a bulk buffer the source allocates from, a
 * submit ring to the sink, an acknowledgement ring back):
 *
 *   driver process:  owns the NIC through UIO (map 0: registers and
 *                    descriptors; map 1: packet memory, so no physical
 *                    address is ever needed). Received frames are copied
 *                    out of packet memory into the rx stream; frames from
 *                    the tx stream are copied into packet memory and sent.
 *   tap process:     owns tap0 (the kernel's stack sees an ordinary
 *                    Ethernet interface with the NIC's address); frames the
 *                    stack sends go into the tx stream, frames from the rx
 *                    stream are written to tap0.
 *
 * The ladder's knobs, each a choice the seed measured:
 *   -a gp    a general-purpose first-fit allocator with an address-ordered
 *            free list and coalescing over each bulk buffer (default);
 *   -a slot  fixed 2 KiB slots and a bitmap;
 *   -c byte  copies byte by byte (default);  -c word  alignment-aware copies
 *            (64-bit words once both sides are aligned);
 *   -n packet  one notification per packet: the source signals the sink's
 *            eventfd for every packet and the sink takes one per wakeup, and
 *            every acknowledgement is signalled (default);
 *   -n batch   the source signals only when the ring was empty, the sink
 *            drains everything per wakeup and acknowledges once per batch.
 *
 * It prints `nicd: up` once tap0 exists (with the NIC's MAC), and on SIGTERM
 * its counters. Errors name the file or device and exit non-zero.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <net/if_arp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ethoc registers (drivers/net/ethernet/ethoc.c) */
#define MODER 0x00
#define INT_SOURCE 0x04
#define INT_MASK 0x08
#define TX_BD_NUM 0x20
#define MAC_ADDR0 0x40
#define MAC_ADDR1 0x44
#define BD_BASE 0x400
#define MODER_RXEN (1u << 0)
#define MODER_TXEN (1u << 1)
#define MODER_FULLD (1u << 10)
#define MODER_CRC (1u << 13)
#define MODER_PAD (1u << 15)
#define INT_TXF (1u << 0)
#define INT_TXE (1u << 1)
#define INT_RXF (1u << 2)
#define INT_RXE (1u << 3)
#define INT_BUSY (1u << 4)
#define TX_BD_CRC (1u << 11)
#define TX_BD_PAD (1u << 12)
#define TX_BD_WRAP (1u << 13)
#define TX_BD_IRQ (1u << 14)
#define TX_BD_READY (1u << 15)
#define RX_BD_WRAP (1u << 13)
#define RX_BD_IRQ (1u << 14)
#define RX_BD_EMPTY (1u << 15)
#define RX_BD_ERRORS 0xffu
#define BUFSIZ_NIC 1536
#define MAX_FRAME 1514

/* The allocators and copies stay functions of their own, so a profile names
 * the cycles each rung of the study's ladder moves. */
#define NAMED __attribute__((noinline))

/* ---- packet streams ---------------------------------------------------- */

#define RING 64   /* descriptors per ring: a power of two */
#define BULK (RING * 2048)
#define SLOT 2048

struct desc {
	uint32_t off, len;
};

struct ring {
	volatile uint32_t head, tail; /* producer writes head, consumer tail */
	struct desc d[RING];
};

struct stream {
	struct ring submit, ack;
	int submit_fd, ack_fd; /* eventfds: packets for the sink, acks for the source */
	uint8_t bulk[BULK];
};

struct shared {
	struct stream rx, tx; /* rx: driver -> tap; tx: tap -> driver */
	uint8_t mac[6];
	volatile int up;
};

static int ring_full(struct ring *r) { return r->head - r->tail == RING; }
static int ring_empty(struct ring *r) { return r->head == r->tail; }
static void ring_put(struct ring *r, struct desc d)
{
	r->d[r->head % RING] = d;
	__atomic_store_n(&r->head, r->head + 1, __ATOMIC_RELEASE);
}
static struct desc ring_get(struct ring *r)
{
	struct desc d = r->d[r->tail % RING];
	__atomic_store_n(&r->tail, r->tail + 1, __ATOMIC_RELEASE);
	return d;
}

/* ---- allocators over a bulk buffer (source side only) ----------------- */

enum { ALLOC_GP, ALLOC_SLOT } alloc_kind = ALLOC_GP;
enum { COPY_BYTE, COPY_WORD } copy_kind = COPY_BYTE;
enum { NOTIFY_PACKET, NOTIFY_BATCH } notify_kind = NOTIFY_PACKET;

/* General purpose: free blocks in address order, first fit, split, and
 * coalesce with both neighbours on free. Blocks are 8-byte aligned. */
struct gp_block {
	uint32_t off, len;
};
struct gp {
	struct gp_block free[RING * 2 + 2];
	int n;
	uint32_t size_of[BULK / 8]; /* allocation length by offset / 8 */
};

static void gp_init(struct gp *g)
{
	g->n = 1;
	g->free[0].off = 0;
	g->free[0].len = BULK;
}

NAMED static long gp_alloc(struct gp *g, uint32_t len)
{
	len = (len + 7) & ~7u;
	for (int i = 0; i < g->n; i++) {
		if (g->free[i].len >= len) {
			uint32_t off = g->free[i].off;
			g->free[i].off += len;
			g->free[i].len -= len;
			if (g->free[i].len == 0) {
				memmove(&g->free[i], &g->free[i + 1], (g->n - i - 1) * sizeof g->free[0]);
				g->n--;
			}
			g->size_of[off / 8] = len;
			return off;
		}
	}
	return -1;
}

NAMED static void gp_free(struct gp *g, uint32_t off)
{
	uint32_t len = g->size_of[off / 8];
	int i = 0;
	while (i < g->n && g->free[i].off < off)
		i++;
	/* merge with the previous block, the next, or both */
	if (i > 0 && g->free[i - 1].off + g->free[i - 1].len == off) {
		g->free[i - 1].len += len;
		if (i < g->n && off + len == g->free[i].off) {
			g->free[i - 1].len += g->free[i].len;
			memmove(&g->free[i], &g->free[i + 1], (g->n - i - 1) * sizeof g->free[0]);
			g->n--;
		}
		return;
	}
	if (i < g->n && off + len == g->free[i].off) {
		g->free[i].off = off;
		g->free[i].len += len;
		return;
	}
	memmove(&g->free[i + 1], &g->free[i], (g->n - i) * sizeof g->free[0]);
	g->free[i].off = off;
	g->free[i].len = len;
	g->n++;
}

/* Fixed slots: one bit per 2 KiB slot. */
struct slots {
	uint64_t used;
};

NAMED static long slot_alloc(struct slots *s)
{
	if (s->used == ~0ull >> (64 - BULK / SLOT))
		return -1;
	int i = __builtin_ctzll(~s->used);
	s->used |= 1ull << i;
	return (long)i * SLOT;
}

NAMED static void slot_free(struct slots *s, uint32_t off) { s->used &= ~(1ull << (off / SLOT)); }

struct source {
	struct stream *s;
	struct gp gp;
	struct slots slots;
};

static long source_alloc(struct source *src, uint32_t len)
{
	return alloc_kind == ALLOC_SLOT ? slot_alloc(&src->slots) : gp_alloc(&src->gp, len);
}

/* Take back every acknowledged packet's memory. */
static void source_reclaim(struct source *src)
{
	while (!ring_empty(&src->s->ack)) {
		struct desc d = ring_get(&src->s->ack);
		if (alloc_kind == ALLOC_SLOT)
			slot_free(&src->slots, d.off);
		else
			gp_free(&src->gp, d.off);
	}
}

static void signal_fd(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof one) != sizeof one)
		perror("nicd: eventfd write");
}

static void drain_fd(int fd)
{
	uint64_t v;
	if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
		perror("nicd: eventfd read");
}

/* Submit a packet: one signal per packet, or only when the sink may be asleep. */
static void source_submit(struct source *src, uint32_t off, uint32_t len)
{
	int was_empty = ring_empty(&src->s->submit);
	ring_put(&src->s->submit, (struct desc){off, len});
	if (notify_kind == NOTIFY_PACKET || was_empty)
		signal_fd(src->s->submit_fd);
}

/* ---- copies ------------------------------------------------------------ */

NAMED static void copy_bytes(volatile uint8_t *dst, const volatile uint8_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

NAMED static void copy_words(volatile uint8_t *dst, const volatile uint8_t *src, size_t n)
{
	size_t i = 0;
	if ((((uintptr_t)dst ^ (uintptr_t)src) & 7) == 0) {
		while (i < n && ((uintptr_t)(dst + i) & 7))
			dst[i] = src[i], i++;
		for (; i + 8 <= n; i += 8)
			*(volatile uint64_t *)(dst + i) = *(const volatile uint64_t *)(src + i);
	}
	for (; i < n; i++)
		dst[i] = src[i];
}

static void copy(volatile uint8_t *dst, const volatile uint8_t *src, size_t n)
{
	if (copy_kind == COPY_WORD)
		copy_words(dst, src, n);
	else
		copy_bytes(dst, src, n);
}

/* ---- the driver process ------------------------------------------------ */

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

struct nic {
	volatile uint32_t *regs;
	volatile uint8_t *mem;
	size_t mem_len;
	unsigned num_tx, num_rx, cur_tx, dty_tx, cur_rx;
};

static uint32_t rd(struct nic *n, unsigned off) { return n->regs[off / 4]; }
static void wr(struct nic *n, unsigned off, uint32_t v) { n->regs[off / 4] = v; }
static uint32_t bd_stat(struct nic *n, unsigned i) { return rd(n, BD_BASE + 8 * i); }
static void bd_set(struct nic *n, unsigned i, uint32_t stat) { wr(n, BD_BASE + 8 * i, stat); }

/* Buffer i at packet memory offset i * 1536. The descriptor holds the
 * buffer's bus address: map 1's base as UIO publishes it plus the offset.
 * No RAM is ever handed to the device, so nothing is pinned or translated. */
static void nic_init(struct nic *n, unsigned long phys)
{
	unsigned num_bd = n->mem_len / BUFSIZ_NIC;
	if (num_bd > 128)
		num_bd = 128;
	n->num_tx = 1;
	while (n->num_tx * 2 <= num_bd / 2)
		n->num_tx *= 2;
	n->num_rx = num_bd - n->num_tx;
	n->cur_tx = n->dty_tx = n->cur_rx = 0;
	wr(n, MODER, rd(n, MODER) & ~(MODER_RXEN | MODER_TXEN));
	wr(n, TX_BD_NUM, n->num_tx);
	for (unsigned i = 0; i < num_bd; i++) {
		uint32_t stat = i < n->num_tx ? (TX_BD_IRQ | TX_BD_CRC | (i == n->num_tx - 1 ? TX_BD_WRAP : 0))
					      : (RX_BD_EMPTY | RX_BD_IRQ | (i == num_bd - 1 ? RX_BD_WRAP : 0));
		wr(n, BD_BASE + 8 * i + 4, (uint32_t)(phys + (unsigned long)i * BUFSIZ_NIC));
		bd_set(n, i, stat);
	}
	wr(n, MODER, rd(n, MODER) | MODER_CRC | MODER_PAD | MODER_FULLD);
	wr(n, INT_SOURCE, 0x7f);
	wr(n, INT_MASK, INT_TXF | INT_TXE | INT_RXF | INT_RXE | INT_BUSY);
	wr(n, MODER, rd(n, MODER) | MODER_RXEN | MODER_TXEN);
}

static unsigned long counters[8];
enum { RX_FRAMES, RX_DROPPED, TX_FRAMES, TX_WAITED, IRQS, WAKEUPS };

/* Received frames into the rx stream. */
static void nic_rx(struct nic *n, struct source *rx)
{
	for (;;) {
		unsigned i = n->num_tx + n->cur_rx;
		uint32_t stat = bd_stat(n, i);
		if (stat & RX_BD_EMPTY)
			break;
		uint32_t len = (stat >> 16) - 4; /* without the FCS */
		if (!(stat & RX_BD_ERRORS) && len <= MAX_FRAME) {
			source_reclaim(rx);
			long off = ring_full(&rx->s->submit) ? -1 : source_alloc(rx, len);
			if (off >= 0) {
				copy(rx->s->bulk + off, n->mem + (size_t)i * BUFSIZ_NIC, len);
				source_submit(rx, off, len);
				counters[RX_FRAMES]++;
			} else {
				counters[RX_DROPPED]++;
			}
		}
		bd_set(n, i, (stat & ~RX_BD_ERRORS & 0xffff) | RX_BD_EMPTY);
		if (++n->cur_rx == n->num_rx)
			n->cur_rx = 0;
	}
}

/* Completed transmit descriptors back. */
static void nic_tx_done(struct nic *n)
{
	while (n->dty_tx != n->cur_tx && !(bd_stat(n, n->dty_tx % n->num_tx) & TX_BD_READY))
		n->dty_tx++;
}

/* Frames from the tx stream onto free transmit descriptors; acknowledges
 * each (one signal per packet, or one per batch). Per packet, only as many
 * packets as signals taken (`owed`): one packet per notification. */
static void nic_tx(struct nic *n, struct stream *tx, unsigned *owed)
{
	if (notify_kind == NOTIFY_PACKET && *owed == 0)
		return;
	int acked = 0;
	while (!ring_empty(&tx->submit)) {
		if (n->cur_tx - n->dty_tx == n->num_tx) {
			counters[TX_WAITED]++;
			break; /* the TX interrupt brings us back */
		}
		struct desc d = ring_get(&tx->submit);
		unsigned i = n->cur_tx % n->num_tx;
		uint32_t len = d.len; /* the MAC pads short frames (TX_BD_PAD) */
		copy(n->mem + (size_t)i * BUFSIZ_NIC, tx->bulk + d.off, d.len);
		uint32_t stat = (bd_stat(n, i) & (TX_BD_WRAP | TX_BD_IRQ | TX_BD_CRC)) | TX_BD_PAD | (len << 16);
		bd_set(n, i, stat | TX_BD_READY);
		n->cur_tx++;
		counters[TX_FRAMES]++;
		ring_put(&tx->ack, d);
		acked++;
		if (notify_kind == NOTIFY_PACKET) {
			signal_fd(tx->ack_fd);
			if (--*owed == 0)
				break;
		}
	}
	if (acked && notify_kind == NOTIFY_BATCH)
		signal_fd(tx->ack_fd);
}

static long sysfs_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;
	if (!f || fscanf(f, "%li", &v) != 1) {
		fprintf(stderr, "nicd: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	return v;
}

static int driver(struct shared *sh, const char *uio)
{
	char path[128];
	const char *name = strrchr(uio, '/') ? strrchr(uio, '/') + 1 : uio;
	struct nic n;
	struct source rx = {.s = &sh->rx};
	int fd = open(uio, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "nicd: %s: %s (is the NIC bound to uio_pdrv_genirq?)\n", uio, strerror(errno));
		return 1;
	}
	long pg = sysconf(_SC_PAGESIZE);
	snprintf(path, sizeof path, "/sys/class/uio/%s/maps/map0/size", name);
	long regs_len = sysfs_long(path);
	snprintf(path, sizeof path, "/sys/class/uio/%s/maps/map1/size", name);
	n.mem_len = sysfs_long(path);
	snprintf(path, sizeof path, "/sys/class/uio/%s/maps/map1/addr", name);
	unsigned long phys = sysfs_long(path);
	n.regs = mmap(NULL, regs_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	n.mem = mmap(NULL, n.mem_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg);
	if (n.regs == MAP_FAILED || n.mem == MAP_FAILED) {
		fprintf(stderr, "nicd: %s: mmap: %s\n", uio, strerror(errno));
		return 1;
	}
	gp_init(&rx.gp);
	uint32_t a0 = rd(&n, MAC_ADDR0), a1 = rd(&n, MAC_ADDR1);
	uint8_t mac[6] = {a1 >> 8, a1, a0 >> 24, a0 >> 16, a0 >> 8, a0};
	memcpy(sh->mac, mac, 6);
	nic_init(&n, phys);
	__atomic_store_n(&sh->up, 1, __ATOMIC_RELEASE);
	uint32_t on = 1;
	if (write(fd, &on, sizeof on) != sizeof on) {
		fprintf(stderr, "nicd: %s: cannot enable the interrupt: %s\n", uio, strerror(errno));
		return 1;
	}
	struct pollfd p[3] = {{fd, POLLIN, 0}, {sh->tx.submit_fd, POLLIN, 0}, {sh->rx.ack_fd, POLLIN, 0}};
	unsigned owed = 0;
	while (!stop) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("nicd: poll");
			return 1;
		}
		counters[WAKEUPS]++;
		if (p[0].revents & POLLIN) {
			uint32_t count;
			if (read(fd, &count, sizeof count) != sizeof count)
				perror("nicd: uio read");
			counters[IRQS]++;
			wr(&n, INT_SOURCE, rd(&n, INT_SOURCE));
			nic_rx(&n, &rx);
			nic_tx_done(&n);
			nic_tx(&n, &sh->tx, &owed);
			if (write(fd, &on, sizeof on) != sizeof on)
				perror("nicd: uio irq enable");
		}
		if (p[1].revents & POLLIN) {
			drain_fd(sh->tx.submit_fd);
			owed++;
			nic_tx_done(&n);
			nic_tx(&n, &sh->tx, &owed);
		}
		if (p[2].revents & POLLIN) {
			drain_fd(sh->rx.ack_fd);
			source_reclaim(&rx);
		}
	}
	printf("nicd: driver rx_frames %lu rx_dropped %lu tx_frames %lu tx_waited %lu irqs %lu wakeups %lu\n",
	       counters[RX_FRAMES], counters[RX_DROPPED], counters[TX_FRAMES], counters[TX_WAITED],
	       counters[IRQS], counters[WAKEUPS]);
	return 0;
}

/* ---- the tap process --------------------------------------------------- */

static int tap_open(const char *ifname, const uint8_t mac[6])
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "nicd: /dev/net/tun: %s\n", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	if (ioctl(fd, TUNSETIFF, &ifr) != 0) {
		fprintf(stderr, "nicd: %s: TUNSETIFF: %s\n", ifname, strerror(errno));
		return -1;
	}
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&ifr.ifr_hwaddr, 0, sizeof ifr.ifr_hwaddr);
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
	if (s < 0 || ioctl(s, SIOCSIFHWADDR, &ifr) != 0) {
		fprintf(stderr, "nicd: %s: cannot set the NIC's address: %s\n", ifname, strerror(errno));
		return -1;
	}
	close(s);
	return fd;
}

static unsigned long tap_counters[4];

static int tap_process(struct shared *sh, const char *ifname)
{
	struct source tx = {.s = &sh->tx};
	uint8_t frame[2048];
	while (!__atomic_load_n(&sh->up, __ATOMIC_ACQUIRE))
		usleep(1000);
	int fd = tap_open(ifname, sh->mac);
	if (fd < 0)
		return 1;
	gp_init(&tx.gp);
	printf("nicd: up %s %02x:%02x:%02x:%02x:%02x:%02x\n", ifname, sh->mac[0], sh->mac[1], sh->mac[2],
	       sh->mac[3], sh->mac[4], sh->mac[5]);
	fflush(stdout);
	struct pollfd p[3] = {{fd, POLLIN, 0}, {sh->rx.submit_fd, POLLIN, 0}, {sh->tx.ack_fd, POLLIN, 0}};
	while (!stop) {
		/* Wait for the stack only while the tx stream has room. */
		p[0].events = ring_full(&sh->tx.submit) ? 0 : POLLIN;
		if (poll(p, 3, p[0].events ? -1 : 1) < 0) {
			if (errno == EINTR)
				continue;
			perror("nicd: poll");
			return 1;
		}
		if (p[0].revents & POLLIN) {
			ssize_t len = read(fd, frame, sizeof frame);
			if (len > 0) {
				source_reclaim(&tx);
				long off = source_alloc(&tx, len);
				if (off >= 0) {
					copy(tx.s->bulk + off, frame, len);
					source_submit(&tx, off, len);
					tap_counters[0]++;
				} else {
					tap_counters[1]++;
				}
			}
		}
		if (p[1].revents & POLLIN) {
			/* per packet: the eventfd is a semaphore, one packet per wakeup */
			int acked = 0;
			drain_fd(sh->rx.submit_fd);
			while (!ring_empty(&sh->rx.submit)) {
				struct desc d = ring_get(&sh->rx.submit);
				if (write(fd, sh->rx.bulk + d.off, d.len) < 0)
					tap_counters[2]++;
				ring_put(&sh->rx.ack, d);
				acked++;
				if (notify_kind == NOTIFY_PACKET) {
					signal_fd(sh->rx.ack_fd);
					break;
				}
			}
			if (acked && notify_kind == NOTIFY_BATCH)
				signal_fd(sh->rx.ack_fd);
			tap_counters[3]++;
		}
		if (p[2].revents & POLLIN) {
			drain_fd(sh->tx.ack_fd);
			source_reclaim(&tx);
		}
	}
	printf("nicd: tap tx_frames %lu tx_dropped %lu rx_write_errors %lu rx_wakeups %lu\n", tap_counters[0],
	       tap_counters[1], tap_counters[2], tap_counters[3]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *uio = "/dev/uio0", *ifname = "tap0";
	int opt;
	while ((opt = getopt(argc, argv, "u:i:a:c:n:")) != -1) {
		switch (opt) {
		case 'u': uio = optarg; break;
		case 'i': ifname = optarg; break;
		case 'a':
			if (!strcmp(optarg, "gp")) alloc_kind = ALLOC_GP;
			else if (!strcmp(optarg, "slot")) alloc_kind = ALLOC_SLOT;
			else goto usage;
			break;
		case 'c':
			if (!strcmp(optarg, "byte")) copy_kind = COPY_BYTE;
			else if (!strcmp(optarg, "word")) copy_kind = COPY_WORD;
			else goto usage;
			break;
		case 'n':
			if (!strcmp(optarg, "packet")) notify_kind = NOTIFY_PACKET;
			else if (!strcmp(optarg, "batch")) notify_kind = NOTIFY_BATCH;
			else goto usage;
			break;
		default:
			goto usage;
		}
	}
	struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("nicd: mmap");
		return 1;
	}
	/* Per packet, an eventfd read takes one packet's signal (a semaphore). */
	int flags = EFD_NONBLOCK | (notify_kind == NOTIFY_PACKET ? EFD_SEMAPHORE : 0);
	sh->rx.submit_fd = eventfd(0, flags);
	sh->rx.ack_fd = eventfd(0, flags);
	sh->tx.submit_fd = eventfd(0, flags);
	sh->tx.ack_fd = eventfd(0, flags);
	signal(SIGTERM, on_term);
	pid_t child = fork();
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		int rc = tap_process(sh, ifname);
		fflush(stdout);
		_exit(rc);
	}
	int rc = driver(sh, uio);
	kill(child, SIGTERM);
	int status = 0;
	waitpid(child, &status, 0);
	return rc ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 1);
usage:
	fprintf(stderr, "usage: nicd [-u /dev/uioN] [-i IFNAME] [-a gp|slot] [-c byte|word] [-n packet|batch]\n");
	return 2;
}
