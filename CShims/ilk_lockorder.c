/*
 * ilk_lockorder.c — the per-thread held-lock stack and backtraces of lock-order checking
 * (ilk_lockorder.h).
 */
#include "ilk_lockorder.h"

#include <execinfo.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Thread_local struct ilk_lockorder_held ilk_lockorder_held_state;

uint8_t ilk_lockorder_mode_cache = 0;

struct ilk_lockorder_held *ilk_lockorder_thread_held(void) { return &ilk_lockorder_held_state; }

int ilk_lockorder_backtrace(void **frames, int max) { return backtrace(frames, max); }

void ilk_lockorder_print_frames(void *const *frames, int count, const char *indent) {
    for (int i = 0; i < count; i++) {
        (void)!write(STDERR_FILENO, indent, strlen(indent));
        backtrace_symbols_fd((void *const *)&frames[i], 1, STDERR_FILENO);
    }
}
