/* A pointer chase through 4096 lines (256 KiB, beyond a 32 KiB L1),
 * 200,000 steps. */
#include <stdint.h>
#define LINES 4096
static uint64_t buf[LINES * 8];
int main(void)
{
	uint64_t x = 88172645463325252ull;
	static uint32_t order[LINES];
	for (uint32_t i = 0; i < LINES; i++)
		order[i] = i;
	for (uint32_t i = LINES - 1; i > 0; i--) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t j = (uint32_t)(x % (i + 1)), t = order[i];
		order[i] = order[j], order[j] = t;
	}
	for (uint32_t k = 0; k < LINES; k++)
		buf[order[k] * 8] = (uint64_t)(uintptr_t)&buf[order[(k + 1) % LINES] * 8];
	uint64_t *p = &buf[order[0] * 8];
	for (int s = 0; s < 200000; s++)
		p = (uint64_t *)*p;
	return p == 0;
}
