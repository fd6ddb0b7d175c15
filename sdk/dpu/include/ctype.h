/* OpenPIM DPU: <ctype.h> (ASCII) */
#ifndef _OPENPIM_CTYPE_H
#define _OPENPIM_CTYPE_H
static __inline__ int isdigit(int c) { return (unsigned)c - '0' < 10u; }
static __inline__ int isupper(int c) { return (unsigned)c - 'A' < 26u; }
static __inline__ int islower(int c) { return (unsigned)c - 'a' < 26u; }
static __inline__ int isalpha(int c) { return ((unsigned)c | 32u) - 'a' < 26u; }
static __inline__ int isalnum(int c) { return isalpha(c) || isdigit(c); }
static __inline__ int isxdigit(int c) { return isdigit(c) || ((unsigned)c | 32u) - 'a' < 6u; }
static __inline__ int isspace(int c) { return c == ' ' || (unsigned)c - '\t' < 5u; }
static __inline__ int isblank(int c) { return c == ' ' || c == '\t'; }
static __inline__ int iscntrl(int c) { return (unsigned)c < 0x20u || c == 0x7f; }
static __inline__ int isprint(int c) { return (unsigned)c - 0x20u < 0x5fu; }
static __inline__ int isgraph(int c) { return (unsigned)c - 0x21u < 0x5eu; }
static __inline__ int ispunct(int c) { return isgraph(c) && !isalnum(c); }
static __inline__ int tolower(int c) { return isupper(c) ? (c | 32) : c; }
static __inline__ int toupper(int c) { return islower(c) ? (c & 0x5f) : c; }
#endif
