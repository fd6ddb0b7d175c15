/* OpenPIM DPU runtime: CLOCKS_PER_SEC (perfcounter.h). The value is the default hardware
 * profile's frequency; the loader overwrites it with the frequency of the profile the
 * program is loaded under (docs/internals/dpu-abi.md, "ELF symbols the loader reads"). */
#include <stdint.h>
#include <perfcounter.h>

const volatile uint32_t CLOCKS_PER_SEC = 350000000;
