/* seqread and unaligned MRAM transfers: results checked with assert (fault code 2). */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <alloc.h>
#include <defs.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <seqread.h>

#define N 1024
__mram uint32_t data[N];
__mram_noinit uint8_t scratch[256];
__host uint32_t result;

typedef struct {
    uint32_t a, b, c;
} triple_t;

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    mem_reset();
    /* fill MRAM: data[i] = i * 7 + 1 */
    uint32_t *buf = mem_alloc(2048);
    for (uint32_t base = 0; base < N; base += 512) {
        for (uint32_t i = 0; i < 512; i++) {
            buf[i] = (base + i) * 7 + 1;
        }
        mram_write(buf, &data[base], 2048);
    }
    /* sequential 12-byte elements from an address that is not 8-aligned */
    seqreader_buffer_t cache = seqread_alloc();
    seqreader_t sr;
    triple_t *t = seqread_init(cache, &data[3], &sr);
    uint32_t idx = 3;
    for (int k = 0; k < 300; k++) {
        assert(t->a == idx * 7 + 1 && t->b == (idx + 1) * 7 + 1 && t->c == (idx + 2) * 7 + 1);
        assert(seqread_tell(t, &sr) == (__mram_ptr void *)&data[idx]);
        idx += 3;
        t = seqread_get(t, sizeof(triple_t), &sr);
    }
    /* seek backwards, then bytes one at a time */
    uint8_t *b = seqread_seek((__mram_ptr uint8_t *)&data[10] + 1, &sr);
    uint32_t expect = 10 * 7 + 1;
    for (int k = 0; k < 700; k++) {
        uint32_t byte_index = 41 + (uint32_t)k; /* byte offset in data */
        uint32_t word = (byte_index / 4) * 7 + 1;
        assert(*b == ((word >> (8 * (byte_index % 4))) & 0xff));
        b = seqread_get(b, 1, &sr);
    }
    (void)expect;
    /* unaligned read */
    uint8_t tmp[64] __attribute__((aligned(8)));
    uint8_t *u = mram_read_unaligned((__mram_ptr uint8_t *)data + 5, tmp, 30);
    for (int k = 0; k < 30; k++) {
        uint32_t byte_index = 5 + (uint32_t)k;
        assert(u[k] == (((byte_index / 4) * 7 + 1) >> (8 * (byte_index % 4)) & 0xff));
    }
    /* unaligned write between untouched neighbours */
    uint64_t zeros[32] __attribute__((aligned(8)));
    memset(zeros, 0xee, sizeof(zeros));
    mram_write(zeros, scratch, 256);
    uint8_t src[100];
    for (int k = 0; k < 100; k++) {
        src[k] = (uint8_t)k;
    }
    mram_write_unaligned(src + 1, scratch + 3, 77);
    mram_read(scratch, zeros, 256);
    uint8_t *z = (uint8_t *)zeros;
    for (int k = 0; k < 256; k++) {
        uint8_t want = (k >= 3 && k < 80) ? (uint8_t)(k - 3 + 1) : 0xee;
        assert(z[k] == want);
    }
    result = 1;
    printf("seqread ok\n");
    return 0;
}
