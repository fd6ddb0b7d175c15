/* OpenPIM DPU: <macro_utils.h> */
#ifndef _OPENPIM_MACRO_UTILS_H
#define _OPENPIM_MACRO_UTILS_H
#ifndef __STR
#define __STR(x) __STR_AGAIN(x)
#define __STR_AGAIN(x) #x
#endif
#ifndef __CONCAT
#define __CONCAT(x, y) __CONCAT_AGAIN(x, y)
#define __CONCAT_AGAIN(x, y) x##y
#endif
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#endif
