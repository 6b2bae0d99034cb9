/*
 * CPeers — the C peers Interlock is measured against, one header per family.
 *
 *   ilk_peer_atomic.h   the GCC/Clang __atomic builtins on a plain int64_t (the atomics benchmarks)
 *
 * Later families (pthread mutex, rwlock and condvar; liburcu, Concurrency Kit, Boost.Lockfree)
 * add a header here named ilk_peer_<family>.h, or a sibling target when they need their own
 * system library or C++. Every symbol is prefixed ilk_peer_.
 */
#ifndef CPEERS_H
#define CPEERS_H

#include "ilk_peer_atomic.h"

#endif
