/* More data than the 64 KiB WRAM: must still link (the loader reports the overflow). */
#include <stdint.h>
#include <attributes.h>
__host uint8_t table[80 * 1024];
int main(void)
{
    table[1] = 1;
    return 0;
}
