/*
 * cpubound [ROUNDS]: a deterministic, CPU-bound integer kernel for speed
 * comparisons. Each round runs a table-driven CRC-32 over 64 KiB, a heap
 * sort of 16,384 words and a 32x32 matrix multiply, all on data from a fixed
 * xorshift seed, and folds the results into one checksum, so the same
 * ROUNDS give the same checksum and the same instruction stream everywhere.
 *
 * Two builds of this one file:
 *  - a static Linux program (every image's /usr/bin/cpubound), which marks
 *    the phases `cpubound` and `cpubound done` around the work;
 *  - with -DCPUBOUND_BARE_METAL and cpubound-bare.ld, a bare-metal M-mode
 *    ELF that prints through Spike's HTIF and exits with status 0 (run by
 *    `hartscope bench` with -bios none on hartscope and on QEMU -M spike).
 */
#include <stddef.h>
#include <stdint.h>

#define WORDS 16384
#define MAT 32
#ifndef DEFAULT_ROUNDS /* the bare-metal build sets its own with -D */
#define DEFAULT_ROUNDS 100
#endif

static uint32_t data[WORDS];
static uint32_t sorted[WORDS];
static uint32_t crc_table[256];
static uint32_t mat_a[MAT][MAT], mat_b[MAT][MAT], mat_c[MAT][MAT];

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32(const uint32_t *words, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		uint32_t w = words[i];
		for (int b = 0; b < 4; b++, w >>= 8)
			c = crc_table[(c ^ w) & 0xff] ^ (c >> 8);
	}
	return ~c;
}

static void sift_down(uint32_t *a, size_t root, size_t end)
{
	while (2 * root + 1 < end) {
		size_t child = 2 * root + 1;
		if (child + 1 < end && a[child] < a[child + 1])
			child++;
		if (a[root] >= a[child])
			return;
		uint32_t t = a[root];
		a[root] = a[child];
		a[child] = t;
		root = child;
	}
}

static void heap_sort(uint32_t *a, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(a, i, n);
	for (size_t end = n; end-- > 1;) {
		uint32_t t = a[0];
		a[0] = a[end];
		a[end] = t;
		sift_down(a, 0, end);
	}
}

static uint32_t mat_mul(void)
{
	uint32_t sum = 0;
	for (int i = 0; i < MAT; i++)
		for (int j = 0; j < MAT; j++) {
			uint32_t acc = 0;
			for (int k = 0; k < MAT; k++)
				acc += mat_a[i][k] * mat_b[k][j];
			mat_c[i][j] = acc;
			sum = sum * 31 + acc;
		}
	return sum;
}

static uint64_t run(long rounds)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint64_t check = 0;
	crc_init();
	for (size_t i = 0; i < WORDS; i++)
		data[i] = (uint32_t)xorshift(&seed);
	for (long r = 0; r < rounds; r++) {
		check = check * 0x100000001b3ull ^ crc32(data, WORDS);
		for (size_t i = 0; i < WORDS; i++)
			sorted[i] = data[i];
		heap_sort(sorted, WORDS);
		check = check * 0x100000001b3ull ^ sorted[r % WORDS] ^ sorted[WORDS / 2];
		for (int i = 0; i < MAT; i++)
			for (int j = 0; j < MAT; j++) {
				mat_a[i][j] = data[(r + i * MAT + j) % WORDS];
				mat_b[i][j] = (uint32_t)xorshift(&seed);
			}
		check = check * 0x100000001b3ull ^ mat_mul();
		/* New data for the next round, so no round repeats the last. */
		data[xorshift(&seed) % WORDS] ^= (uint32_t)check;
		data[r % WORDS] += (uint32_t)(check >> 32);
	}
	return check;
}

#ifdef CPUBOUND_BARE_METAL

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

/* HTIF console: device 1, command 1; the host answers in fromhost. */
static void htif_putc(char ch)
{
	tohost = (1ull << 56) | (1ull << 48) | (uint8_t)ch;
	while (fromhost == 0)
		;
	fromhost = 0;
}

static void print(const char *s)
{
	while (*s)
		htif_putc(*s++);
}

static void print_num(uint64_t v, unsigned base, int min_digits)
{
	char buf[24];
	int n = 0;
	do {
		buf[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v || n < min_digits);
	while (n)
		htif_putc(buf[--n]);
}

/* The compiler may still emit calls to these. */
void *memset(void *d, int c, size_t n)
{
	volatile unsigned char *p = d;
	while (n--)
		*p++ = (unsigned char)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	volatile unsigned char *p = d;
	const unsigned char *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

void bare_main(void)
{
	uint64_t check = run(DEFAULT_ROUNDS);
	print("cpubound: ");
	print_num(DEFAULT_ROUNDS, 10, 1);
	print(" rounds, checksum 0x");
	print_num(check, 16, 16);
	print("\n");
	tohost = 1; /* exit status 0: (0 << 1) | 1 */
	for (;;)
		;
}

/* M-mode entry at the start of RAM: clear .bss, set the stack, run. */
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "marker.h"

static void phase(const char *label) { mark_phase(label, strlen(label)); }

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 0) : DEFAULT_ROUNDS;
	if (rounds <= 0) {
		fprintf(stderr, "cpubound: ROUNDS must be a positive number\n");
		return 2;
	}
	phase("cpubound");
	uint64_t check = run(rounds);
	phase("cpubound done");
	printf("cpubound: %ld rounds, checksum 0x%016llx\n", rounds, (unsigned long long)check);
	return 0;
}

#endif
