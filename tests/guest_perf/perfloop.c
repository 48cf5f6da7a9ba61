/*
 * perfloop: the small program tests/guest_perf.rs measures with Debian's
 * perf inside the guest. Between the phase markers `perfloop` and
 * `perfloop done` it fills a 1 MiB buffer with pseudo-random bytes and then
 * walks it line by line ROUNDS times, branching on each byte's low bit:
 * every step touches a new 64-byte line of a buffer four times the in-order
 * machine's L2 (cache references and misses), and the branch follows
 * random data (branch misses).
 *
 *   perfloop [ROUNDS]      (default 100)
 */
#include <stdint.h>
#include <stdlib.h>

#include "marker.h"

#define BYTES (1u << 20)
#define LINE 64

static uint8_t buf[BYTES];
static volatile uint64_t sink;

__attribute__((noinline)) static void perfloop_fill(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < BYTES; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		*(uint64_t *)(buf + i) = x;
	}
}

__attribute__((noinline)) static uint64_t perfloop_walk(long rounds)
{
	uint64_t sum = 0;
	for (long r = 0; r < rounds; r++) {
		for (uint32_t i = 0; i < BYTES; i += LINE) {
			uint8_t b = buf[i + (r & 63)];
			if (b & 1)
				sum += b;
			else
				sum ^= i;
		}
	}
	return sum;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 0) : 100;
	static const char start[] = "perfloop", done[] = "perfloop done";
	mark_phase(start, sizeof start - 1);
	perfloop_fill();
	sink = perfloop_walk(rounds);
	mark_phase(done, sizeof done - 1);
	return 0;
}
