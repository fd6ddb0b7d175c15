/* A helper file with one function the kernel calls and one it never calls (as SimplePIM's
 * lib/Table.c: combine_tables_lockfree is used, print_entry is not). The unused one calls
 * printf: the link must drop it, and printf with it. */
#include <stdint.h>
#include <stdio.h>

uint64_t add_block(const uint32_t *block, uint32_t count)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < count; i++)
        s += (uint64_t)block[i] * (i % 7 + 1);
    return s;
}

void print_block(const uint32_t *block, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        printf("%u ", block[i]);
    printf("\n");
}
