/*
 * The hartscope marker instruction (docs/markers.md is the definition):
 * `slti zero, zero, IMM` with IMM in 0x480..0x48f and arguments in a0..a3.
 * A no-op HINT everywhere but on hartscope.
 */
#ifndef HARTSCOPE_MARKER_H
#define HARTSCOPE_MARKER_H

#include <stddef.h>

#define MARK_PHASE_MAX 256
#define MARK_SEND_MAX 65536
#define MARK_CHANNEL_MAX 64

/* The host reads buffers through the current page tables without faulting,
 * so every page is touched before the marker retires. */
static inline void touch(const char *buf, size_t len)
{
	volatile const char *p = buf;
	size_t i;
	for (i = 0; i < len; i += 4096)
		(void)p[i];
	if (len)
		(void)p[len - 1];
}

/* Register variables are bound to a0..a3 only at the asm statement itself:
 * GCC may reuse those registers for anything computed before it (touch()
 * included), so they are assigned last, right before the marker. */
static inline void mark_phase(const char *label, size_t len)
{
	touch(label, len);
	register long a0 __asm__("a0") = (long)label;
	register long a1 __asm__("a1") = (long)len;
	__asm__ volatile("slti zero, zero, 0x480" : : "r"(a0), "r"(a1) : "memory");
}

static inline void mark_exit(long status)
{
	register long a0 __asm__("a0") = status;
	__asm__ volatile("slti zero, zero, 0x481" : : "r"(a0) : "memory");
}

static inline void mark_send(const char *data, size_t len, const char *chan, size_t chan_len)
{
	touch(data, len);
	touch(chan, chan_len);
	register long a0 __asm__("a0") = (long)data;
	register long a1 __asm__("a1") = (long)len;
	register long a2 __asm__("a2") = (long)chan;
	register long a3 __asm__("a3") = (long)chan_len;
	__asm__ volatile("slti zero, zero, 0x482" : : "r"(a0), "r"(a1), "r"(a2), "r"(a3) : "memory");
}

#endif
