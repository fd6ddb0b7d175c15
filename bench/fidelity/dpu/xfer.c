/* (e) The DPU side of the transfer benchmarks: nothing runs; the host moves data to and from
 * the MRAM heap (and this host variable). */
#include <defs.h>
#include <stdint.h>

__host uint64_t marker;

int main(void)
{
    marker++;
    return 0;
}
