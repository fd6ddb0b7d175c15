/* OpenPIM DPU: <handshake.h> — rendezvous between two tasklets.
 * handshake_notify(): blocks the caller until a tasklet waits for it, then releases both.
 * handshake_wait_for(n): blocks until tasklet n calls handshake_notify(); returns 0, or
 * EINVAL (bad id: not a tasklet or the caller itself) or EBUSY (another tasklet already
 * waits for n) without blocking. */
#ifndef _OPENPIM_HANDSHAKE_H
#define _OPENPIM_HANDSHAKE_H
#include <stdint.h>
#include <sysdef.h>

void handshake_notify(void);
int handshake_wait_for(sysname_t notifier);

#endif
