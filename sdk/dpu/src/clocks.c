/* OpenPIM DPU runtime: CLOCKS_PER_SEC (perfcounter.h). The value is the default hardware
 * profile's frequency; the loader overwrites it with the frequency of the profile the
 * program is loaded under (docs/internals/dpu-abi.md, "ELF symbols the loader reads"). */
#include <stdint.h>
#include <perfcounter.h>

/* In the host-visible section, as a __host variable: hosts read it with dpu_copy_from (as on
 * the SDK). The linker script (dpu.ld) pulls it into every program, used or not. */
__attribute__((__aligned__(8), __section__(".dpu_host.CLOCKS_PER_SEC"), __used__))
const volatile uint32_t CLOCKS_PER_SEC = 350000000;
