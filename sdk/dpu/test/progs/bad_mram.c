#include <stdint.h>
#include <mram.h>
__mram uint64_t src[8];
uint64_t dst[8];
int main(void)
{
    mram_read(src, dst, 12);
    return 0;
}
