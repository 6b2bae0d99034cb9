/*
 * The system library liburcu (userspace RCU; Debian's and Ubuntu's liburcu-dev), found with
 * pkg-config as liburcu-bp. Interlock uses the "bulletproof" flavor, whose readers register
 * themselves on first use, so that threads Interlock never created (Dispatch's workers, the
 * Swift concurrency pool, threads that come and go) need nothing from the user.
 */
/* Inline read side (liburcu's static functions), as CShims/include/ilk_rcu.h uses it. */
#ifndef _LGPL_SOURCE
#define _LGPL_SOURCE 1
#endif
#include <urcu-bp.h>
