/* OpenPIM DPU: <sysdef.h> — basic system types. */
#ifndef _OPENPIM_SYSDEF_H
#define _OPENPIM_SYSDEF_H
#include <stdint.h>
typedef unsigned int sysname_t;
typedef uint32_t thread_id_t;
typedef uint32_t mram_addr_t;
typedef uint32_t wram_addr_t;
typedef uint32_t iram_addr_t;
#endif
