/* printf with a 64-byte buffer (a ring, as the SDK's): mode 0 fits; mode 1 prints one message
 * larger than the whole buffer (a DPU fault); mode 2 prints many small ones, which wrap over
 * the oldest (no fault; the host cannot show the log). */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>

STDOUT_BUFFER_INIT(64);

__host uint32_t mode;

int main(void)
{
    if (me() != 0)
        return 0;
    printf("x%d\n", 1);
    if (mode == 1)
        printf("%s\n", "a message of more than sixty-four bytes, which no 64-byte buffer holds");
    if (mode == 2)
        for (uint32_t i = 0; i < 100; i++)
            printf("line %u of a long log\n", i);
    return 0;
}
