/* OpenPIM DPU: <assert.h>. A failed assertion stops the DPU with FAULT code 2 (detail = line). */
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#ifndef _OPENPIM_ASSERT_DECL
#define _OPENPIM_ASSERT_DECL
void __assert_fail_line(unsigned int line) __attribute__((__noreturn__));
#endif
#define assert(e) ((e) ? (void)0 : __assert_fail_line(__LINE__))
#endif
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && __STDC_VERSION__ < 202311L
#ifndef static_assert
#define static_assert _Static_assert
#endif
#endif
