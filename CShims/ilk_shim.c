/*
 * The shim is header-only (static inline functions that Swift inlines) but for the few
 * definitions below; this file also checks at build time the assumptions the headers make.
 */
#include "include/CInterlock.h"

_Static_assert(__GCC_ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(__GCC_ATOMIC_POINTER_LOCK_FREE == 2, "pointer atomics must be lock-free");
_Static_assert(ILK_ORDER_RELAXED == 0 && ILK_ORDER_SEQ_CST == 5, "orders are the C11 values");

#if ILK_HAVE_FUTEX
#include <pthread.h>

_Thread_local uint32_t ilk_thread_id_cache;

/* In the child of fork() the one surviving thread has a new kernel id: forget the parent's. */
static void ilk_thread_id_after_fork_in_child(void) { ilk_thread_id_cache = 0; }

static pthread_once_t ilk_thread_id_once = PTHREAD_ONCE_INIT;
static void ilk_thread_id_register_atfork(void) {
    (void)pthread_atfork(NULL, NULL, ilk_thread_id_after_fork_in_child);
}

uint32_t ilk_thread_id_slow(void) {
    pthread_once(&ilk_thread_id_once, ilk_thread_id_register_atfork);
    uint32_t id = (uint32_t)syscall(SYS_gettid);
    ilk_thread_id_cache = id;
    return id;
}
#endif

/* The mutex release under ThreadSanitizer (ilk_mutex.h): cold and out of line on purpose, so
 * that the assembly form is the fall-through wherever ilk_mutex_release is inlined. */
__attribute__((cold, noinline)) uint32_t ilk_mutex_release_sanitized(uint32_t *word) {
    return ilk_mutex_release_builtin(word);
}
