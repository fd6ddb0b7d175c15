/* OpenPIM — UPMEM SDK compatible host API: the DPU backend types (#include <dpu_target.h>).
 *
 * A rank id (dpu_rank_id_t) carries the backend type of its rank in its top bits
 * (dpu_target_macros.h). OpenPIM's ranks are emulated; they report HW, or
 * FUNCTIONAL_SIMULATOR under backend=simulator. */
#ifndef DPU_TARGET_H
#define DPU_TARGET_H

#include <stdbool.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a function defined in a header as possibly unused. */
#ifndef __MAYBE_UNUSED__
#define __MAYBE_UNUSED__ __attribute__((unused))
#endif

/** The backend types. */
typedef enum _dpu_type_t {
    FUNCTIONAL_SIMULATOR = 0,
    CYCLE_ACCURATE_SIMULATOR = 1,
    RTL_SIMULATOR = 2,
    HW = 3,
    BACKUP_SPI = 4,
    SCENARIO = 5,

    NB_OF_DPU_TYPES = 6
} dpu_type_t;

/** The display name of a backend type. */
__MAYBE_UNUSED__ static inline const char *dpu_type_to_string(dpu_type_t dpu_type)
{
    switch (dpu_type) {
    case FUNCTIONAL_SIMULATOR:
        return "FUNCTIONAL_SIMULATOR";
    case CYCLE_ACCURATE_SIMULATOR:
        return "CYCLE_ACCURATE_SIMULATOR";
    case RTL_SIMULATOR:
        return "RTL_SIMULATOR";
    case HW:
        return "HW";
    case BACKUP_SPI:
        return "BACKUP_SPI";
    case SCENARIO:
        return "SCENARIO";
    case NB_OF_DPU_TYPES:
    default:
        return "UNKNOWN";
    }
}

/** The backend type of a profile's `backend=` value; false when it names none. */
__MAYBE_UNUSED__ static inline bool dpu_type_from_profile_string(const char *string,
    dpu_type_t *dpu_type)
{
    static const struct {
        const char *name;
        dpu_type_t type;
    } names[] = { { "simulator", FUNCTIONAL_SIMULATOR }, { "cas", CYCLE_ACCURATE_SIMULATOR },
        { "model", RTL_SIMULATOR }, { "hw", HW }, { "spi", BACKUP_SPI },
        { "scenario", SCENARIO } };
    size_t i;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(string, names[i].name) == 0) {
            *dpu_type = names[i].type;
            return true;
        }
    }
    return false;
}

#ifdef __cplusplus
}
#endif

#endif /* DPU_TARGET_H */
