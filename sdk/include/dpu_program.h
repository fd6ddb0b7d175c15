/* OpenPIM — the SDK's dpu_program.h: programs include it for the program functions, which
 * <dpu.h> declares here (dpu_load, dpu_get_symbol, struct dpu_program_t). */
#ifndef DPU_PROGRAM_H
#define DPU_PROGRAM_H

#include "dpu.h"

#endif /* DPU_PROGRAM_H */
