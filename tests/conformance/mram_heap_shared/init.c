/* The first program loaded (SimplePIM's dpu_init_binary): no MRAM variables, no printf. */
#include <alloc.h>

int main(void)
{
    mem_reset();
    return 0;
}
