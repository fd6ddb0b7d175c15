/* A program whose code is larger than the 24 KiB IRAM: 2 x 4^5 = 2048 volatile
 * read-modify-write statements with distinct constants (about 40 KiB of code). */
#include <stdint.h>
#include <defs.h>

volatile uint32_t sink;

#define S(n) sink = (sink ^ (uint32_t)(n)) + 0x1234567u;
#define S4(n) S(n) S((n) + 1) S((n) + 2) S((n) + 3)
#define S16(n) S4(n) S4((n) + 4) S4((n) + 8) S4((n) + 12)
#define S64(n) S16(n) S16((n) + 16) S16((n) + 32) S16((n) + 48)
#define S256(n) S64(n) S64((n) + 64) S64((n) + 128) S64((n) + 192)
#define S1024(n) S256(n) S256((n) + 256) S256((n) + 512) S256((n) + 768)

int main(void)
{
    S1024(0x10000)
    S1024(0x20000)
    return 0;
}
