/* OpenPIM DPU: <mram_unaligned.h> — MRAM transfers with any alignment and size.
 * mram_read_unaligned: copies the 8-byte blocks covering [from, from+n) into `buffer`
 *   (8-aligned, at least n + 16 bytes) and returns where `from`'s first byte landed in it.
 * mram_write_unaligned: writes n bytes from WRAM to any MRAM address (read-modify-write of the
 *   partial 8-byte blocks at both ends). */
#ifndef _OPENPIM_MRAM_UNALIGNED_H
#define _OPENPIM_MRAM_UNALIGNED_H
#include <stdint.h>
#include <mram.h>

void *mram_read_unaligned(const __mram_ptr void *from, void *buffer, unsigned int nb_of_bytes);
void mram_write_unaligned(const void *from, __mram_ptr void *dest, unsigned int nb_of_bytes);

#endif
