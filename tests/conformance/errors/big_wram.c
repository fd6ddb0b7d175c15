/* A program whose WRAM data (a 70,000-byte array) is larger than the 64 KiB WRAM. */
#include <stdint.h>
#include <defs.h>

static uint8_t huge[70000];
__host uint32_t out;

int main(void)
{
    huge[me() * 1000] = 1;
    out = huge[69999];
    return 0;
}
