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
/*
 * Without liburcu, say so first: the #error below is the first diagnostic of a build that lacks
 * it (a dependent package's included), and the #include after it stops the compiler with the
 * bare "file not found" instead of a cascade of undeclared names. The same check guards
 * CShims/include/ilk_rcu.h; scripts/check-urcu-missing-error.sh proves both.
 */
#if defined(__has_include)
#if !__has_include(<urcu-bp.h>)
#error "Interlock needs liburcu (userspace RCU), whose header urcu-bp.h was not found. Install it with: sudo apt-get install liburcu-dev (Debian, Ubuntu) or sudo dnf install userspace-rcu-devel (Fedora), then build again."
#endif
#endif
#include <urcu-bp.h>
