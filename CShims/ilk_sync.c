/*
 * ilk_sync.c — the storage declared in include/ilk_sync.h: the table of `synchronized`, zeroed
 * static memory (every bucket starts unlocked and empty), its counters, and each thread's held
 * stack. A thread's held stack is empty whenever it is outside every `synchronized` body, so a
 * thread that exits leaves nothing behind and the variable needs no destructor.
 */
#include "include/ilk_sync.h"

ilk_sync_bucket ilk_sync_buckets[ILK_SYNC_BUCKET_COUNT] __attribute__((aligned(128)));
ilk_sync_counter_words ilk_sync_counter_storage;
_Thread_local ilk_sync_held ilk_sync_held_by_thread;
