/* OpenPIM DPU: <attributes.h> — where variables live (see docs/internals/dpu-abi.md). */
#ifndef _OPENPIM_ATTRIBUTES_H
#define _OPENPIM_ATTRIBUTES_H

/* MRAM pointers are plain 32-bit addresses in OpenPIM (MRAM is mapped at 0x08000000). */
#define __mram_ptr
/* Variables in MRAM, loaded with the program (host-reachable by name). */
#define __mram __attribute__((__section__(".mram"), __aligned__(8), __used__))
/* Variables in MRAM, not initialised by the loader (host-reachable by name). */
#define __mram_noinit __attribute__((__section__(".mram.noinit"), __aligned__(8), __used__))
#define __mram_noinit_keep __mram_noinit
#define __mram_keep __mram
/* 8-byte alignment, as DMA transfers require. */
#define __dma_aligned __attribute__((__aligned__(8)))
/* WRAM variables that the host reads and writes by name. */
#define __host __attribute__((__aligned__(8), __section__(".dpu_host"), __used__))
/* One of the 256 atomic bits (declare as uint8_t; never read or write it directly). */
#define __atomic_bit __attribute__((__section__(".atomic"), __used__))
/* Kept in the program even when nothing references it (survives --gc-sections). */
#if defined(__has_attribute)
#if __has_attribute(__retain__)
#define __keep __attribute__((__used__, __retain__))
#endif
#endif
#ifndef __keep
#define __keep __attribute__((__used__))
#endif
#define __noinline __attribute__((__noinline__))
#define __section(s) __attribute__((__section__(s)))

#endif
