/* OpenPIM DPU: <stdbool.h> */
#ifndef _OPENPIM_STDBOOL_H
#define _OPENPIM_STDBOOL_H
#ifndef __cplusplus
#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 202311L
#define bool _Bool
#define true 1
#define false 0
#endif
#endif
#define __bool_true_false_are_defined 1
#endif
