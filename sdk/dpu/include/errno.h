/* OpenPIM DPU: <errno.h> */
#ifndef _OPENPIM_ERRNO_H
#define _OPENPIM_ERRNO_H
extern int errno;
#define EPERM 1
#define ENOENT 2
#define EINTR 4
#define EIO 5
#define EAGAIN 11
#define ENOMEM 12
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define EINVAL 22
#define ERANGE 34
#define EDEADLK 35
#define ENOSYS 38
#define EALREADY 114
#endif
