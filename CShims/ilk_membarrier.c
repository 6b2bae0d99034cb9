/* The asymmetric fence's heavy half; see include/ilk_membarrier.h. */
#include "include/ilk_membarrier.h"

#if defined(__linux__)
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* 0: not yet known; 1: usable; 2: unusable. Relaxed would do (the answer is idempotent), but
 * acquire/release keeps the registration ordered before any caller that reads 1. */
static int ilk_membarrier_state;

#if defined(__linux__) && defined(SYS_membarrier)
static long ilk_membarrier_call(int command) { return syscall(SYS_membarrier, command, 0, 0); }

int ilk_membarrier_setup(void) {
    int state = __atomic_load_n(&ilk_membarrier_state, __ATOMIC_ACQUIRE);
    if (state != 0) return state == 1;
    long commands = ilk_membarrier_call(MEMBARRIER_CMD_QUERY);
    int usable = commands >= 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                 (commands & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0 &&
                 ilk_membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    /* Several first callers may race here: they compute the same answer, and registering
     * twice is harmless. */
    __atomic_store_n(&ilk_membarrier_state, usable ? 1 : 2, __ATOMIC_RELEASE);
    return usable;
}

int ilk_membarrier_heavy(void) {
    if (ilk_membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return 0;
    if (errno == EPERM && ilk_membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
        ilk_membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return 0;
    return -errno;
}
#else
int ilk_membarrier_setup(void) {
    __atomic_store_n(&ilk_membarrier_state, 2, __ATOMIC_RELEASE);
    return 0;
}
int ilk_membarrier_heavy(void) { return -38; /* ENOSYS */ }
#endif
