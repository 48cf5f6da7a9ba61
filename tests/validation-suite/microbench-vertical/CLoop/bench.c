/* 2,000,000 iterations of a two-instruction loop (4,000,000 instructions,
 * 2,000,000 conditional branches), plus the C runtime around it. */
int main(void)
{
	long n = 2000000;
	__asm__ volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(n));
	return (int)n;
}
