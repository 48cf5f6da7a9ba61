/*
 * timingprobe: guest programs that check the timing model from inside.
 *
 *  - chase: a pointer chase through a random cyclic permutation of 64-byte
 *    lines, for working sets from 1 KiB to MAX_WS; cycles per load step up
 *    where the working set outgrows a cache level.
 *  - branch: one data-dependent branch over random bits, then over the same
 *    bits sorted (same instructions, same taken count, almost no
 *    mispredictions); the difference in cycles is mispredictions x penalty.
 *
 * Two builds of this one file:
 *  - with -DTIMINGPROBE_BARE_METAL and cpubound-bare.ld, a bare-metal M-mode
 *    ELF that counts with mcycle and mhpmcounter3..5 (branch misses,
 *    branches, L1 D-cache read misses; hartscope's event selectors are the
 *    SBI PMU event indices) and prints through Spike's HTIF;
 *  - a static Linux program (/usr/bin/timingprobe) that counts with rdtime
 *    and, where the kernel offers them, perf_event_open hardware counters
 *    (the SBI PMU path), printing the same lines.
 *
 * Output, one line per measurement:
 *   chase ws=BYTES steps=N cycles=C l1d_misses=M
 *   branch pattern=random|sorted n=N cycles=C misses=M branches=B
 */
#include <stddef.h>
#include <stdint.h>

#ifndef MAX_WS
#define MAX_WS (1u << 20)
#endif
#define LINE 64
#define NB 8192

static uint64_t chase_buf[MAX_WS / 8] __attribute__((aligned(4096)));
static uint32_t order[MAX_WS / LINE];
static uint8_t bits_random[NB], bits_sorted[NB];

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The counters this build reads (defined per build below). */
static uint64_t cycles_now(void);
static void counters_start(void);
static uint64_t l1d_misses(void);
static uint64_t branch_misses(void);
static uint64_t branches(void);
static void out_str(const char *s);
static void out_num(uint64_t v);

static void line3(const char *a, uint64_t x, const char *b, uint64_t y, const char *c, uint64_t z)
{
	out_str(a);
	out_num(x);
	out_str(b);
	out_num(y);
	out_str(c);
	out_num(z);
}

/* Link the first ws bytes of chase_buf into one random cycle of lines. */
static void build_cycle(uint32_t ws, uint64_t *seed)
{
	uint32_t n = ws / LINE;
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(xorshift(seed) % (i + 1));
		uint32_t t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint64_t *from = &chase_buf[order[k] * (LINE / 8)];
		uint64_t *to = &chase_buf[order[(k + 1) % n] * (LINE / 8)];
		*from = (uint64_t)(uintptr_t)to;
	}
}

/* Follow `steps` pointers (a multiple of 8) from p; returns where it ended. */
static uint64_t *follow(uint64_t *p, uint32_t steps)
{
	for (uint32_t i = 0; i < steps; i += 8) {
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
		p = (uint64_t *)*p;
	}
	return p;
}

static volatile uint64_t sink;

static void chase_sweep(void)
{
	uint64_t seed = 0x2545f4914f6cdd1dull;
	for (uint32_t ws = 1024; ws <= MAX_WS; ws *= 2) {
		build_cycle(ws, &seed);
		uint32_t n = ws / LINE;
		uint32_t steps = 4 * n < 16384 ? 16384 : 4 * n;
		uint64_t *p = &chase_buf[order[0] * (LINE / 8)];
		p = follow(p, 2 * n < 8 ? 8 : (2 * n + 7) / 8 * 8); /* warm up */
		uint64_t m0 = l1d_misses();
		uint64_t c0 = cycles_now();
		p = follow(p, steps);
		uint64_t c1 = cycles_now();
		uint64_t m1 = l1d_misses();
		sink = (uint64_t)(uintptr_t)p;
		line3("chase ws=", ws, " steps=", steps, " cycles=", c1 - c0);
		out_str(" l1d_misses=");
		out_num(m1 - m0);
		out_str("\n");
	}
}

/* One conditional branch per byte, taken when the byte is zero. */
static uint64_t branch_loop(const uint8_t *b, uint32_t n)
{
	uint64_t ones = 0;
	__asm__ volatile("1: lbu t0, 0(%[p])\n"
			 "   beqz t0, 2f\n"
			 "   addi %[ones], %[ones], 1\n"
			 "2: addi %[p], %[p], 1\n"
			 "   bne %[p], %[end], 1b\n"
			 : [p] "+r"(b), [ones] "+r"(ones)
			 : [end] "r"(b + n)
			 : "t0", "memory");
	return ones;
}

static void branch_run(const char *name, const uint8_t *b)
{
	sink = branch_loop(b, NB); /* warm caches and predictor tables */
	uint64_t m0 = branch_misses(), b0 = branches();
	uint64_t c0 = cycles_now();
	sink = branch_loop(b, NB);
	uint64_t c1 = cycles_now();
	uint64_t m1 = branch_misses(), b1 = branches();
	out_str("branch pattern=");
	out_str(name);
	line3(" n=", NB, " cycles=", c1 - c0, " misses=", m1 - m0);
	out_str(" branches=");
	out_num(b1 - b0);
	out_str("\n");
}

static void branch_test(void)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint32_t ones = 0;
	for (uint32_t i = 0; i < NB; i++) {
		bits_random[i] = (uint8_t)(xorshift(&seed) >> 63);
		ones += bits_random[i];
	}
	for (uint32_t i = 0; i < NB; i++)
		bits_sorted[i] = i >= NB - ones;
	branch_run("random", bits_random);
	branch_run("sorted", bits_sorted);
}

static void probe(void)
{
	counters_start();
	chase_sweep();
	branch_test();
	out_str("timingprobe: done\n");
}

#ifdef TIMINGPROBE_BARE_METAL

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

static void htif_putc(char ch)
{
	tohost = (1ull << 56) | (1ull << 48) | (uint8_t)ch;
	while (fromhost == 0)
		;
	fromhost = 0;
}

static void out_str(const char *s)
{
	while (*s)
		htif_putc(*s++);
}

static void out_num(uint64_t v)
{
	char buf[24];
	int n = 0;
	do {
		buf[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		htif_putc(buf[--n]);
}

#define CSR_READ(name) ({ uint64_t v_; __asm__ volatile("csrr %0, " #name : "=r"(v_)); v_; })

static uint64_t cycles_now(void) { return CSR_READ(mcycle); }
static uint64_t branch_misses(void) { return CSR_READ(mhpmcounter3); }
static uint64_t branches(void) { return CSR_READ(mhpmcounter4); }
static uint64_t l1d_misses(void) { return CSR_READ(mhpmcounter5); }

static void counters_start(void)
{
	__asm__ volatile("csrw mhpmevent3, %0" ::"r"(0x6ull));     /* branch misses */
	__asm__ volatile("csrw mhpmevent4, %0" ::"r"(0x5ull));     /* branches */
	__asm__ volatile("csrw mhpmevent5, %0" ::"r"(0x10001ull)); /* L1D read misses */
	__asm__ volatile("csrw mcountinhibit, zero");
}

void bare_main(void)
{
	probe();
	tohost = 1; /* exit status 0 */
	for (;;)
		;
}

__asm__(".section .text.init, \"ax\", @progbits\n"
	".globl _start\n"
	"_start:\n"
	"  csrr t0, mhartid\n"
	"  bnez t0, 2f\n"
	"  la t0, __bss_start\n"
	"  la t1, __bss_end\n"
	"1: bgeu t0, t1, 3f\n"
	"  sd zero, 0(t0)\n"
	"  addi t0, t0, 8\n"
	"  j 1b\n"
	"2: wfi\n"
	"  j 2b\n"
	"3: la sp, __stack_top\n"
	"  call bare_main\n"
	"  j 2b\n"
	".text\n");

#else /* a Linux program */

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "marker.h"

static int fd_branch_misses = -1, fd_branches = -1, fd_l1d_misses = -1;

static int open_counter(uint32_t type, uint64_t config, const char *name)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = type;
	a.config = config; /* no exclude_kernel: without Sscofpmf the SBI PMU cannot filter by mode */
	/* time running tells a counter that never ran (an event the PMU
	 * refused when it was scheduled) from one that counted 0 */
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	int fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		printf("timingprobe: perf counter %s unavailable (errno %d)\n", name, errno);
	else
		printf("timingprobe: perf counter %s open\n", name);
	return fd;
}

static uint64_t read_counter(int fd)
{
	uint64_t v[3] = { 0, 0, 0 };
	if (fd >= 0 && read(fd, v, sizeof v) != sizeof v)
		v[0] = v[2] = 0;
	return v[0];
}

/* As perf stat says it: counted, or `<not counted>` when it never ran. */
static void counter_status(int fd, const char *name)
{
	uint64_t v[3] = { 0, 0, 0 };
	if (fd < 0)
		return;
	if (read(fd, v, sizeof v) != sizeof v || v[2] == 0)
		printf("timingprobe: perf counter %s <not counted> (time running 0)\n", name);
	else
		printf("timingprobe: perf counter %s counted %llu\n", name, (unsigned long long)v[0]);
}

static void counters_start(void)
{
	fd_branch_misses = open_counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "branch-misses");
	fd_branches = open_counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branches");
	fd_l1d_misses = open_counter(PERF_TYPE_HW_CACHE,
				     PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
					     (PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
				     "L1-dcache-load-misses");
	fflush(stdout);
}

/* rdtime: user mode may always read it; 10 MHz on hartscope's virt board. */
static uint64_t cycles_now(void)
{
	uint64_t v;
	__asm__ volatile("rdtime %0" : "=r"(v));
	return v;
}
static uint64_t branch_misses(void) { return read_counter(fd_branch_misses); }
static uint64_t branches(void) { return read_counter(fd_branches); }
static uint64_t l1d_misses(void) { return read_counter(fd_l1d_misses); }
static void out_str(const char *s) { fputs(s, stdout); }
static void out_num(uint64_t v) { printf("%llu", (unsigned long long)v); }

int main(void)
{
	static const char label[] = "timingprobe";
	mark_phase(label, sizeof label - 1);
	printf("timingprobe: cycles= are rdtime ticks in this build\n");
	probe();
	counter_status(fd_branch_misses, "branch-misses");
	counter_status(fd_branches, "branches");
	counter_status(fd_l1d_misses, "L1-dcache-load-misses");
	fflush(stdout);
	return 0;
}

#endif
