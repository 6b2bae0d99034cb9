/*
 * ilk_membarrier.h — the heavy half of an asymmetric fence (Linux membarrier(2)).
 *
 * An asymmetric fence lets a hot path order a store before a later load with a compiler
 * barrier alone, when the rare path that pairs with it issues a system-wide barrier instead:
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED makes every running thread of this process execute a full
 * memory barrier before the call returns (liburcu's urcu-memb flavor rests on the same pairing).
 *
 *   ilk_membarrier_setup()   1 when the expedited private command is usable (the process is
 *                            registered for it on the first call), 0 otherwise: not Linux, a
 *                            kernel before 4.14, or a sandbox that forbids the system call.
 *                            Thread-safe; the answer is computed once per process.
 *   ilk_membarrier_heavy()   issues the barrier; 0 on success, -errno on failure (ENOMEM is
 *                            possible since Linux 5.10, EPERM under a seccomp filter installed
 *                            after setup). The registration is kept per address space; Linux
 *                            copies it to the child of fork() and resets it at exec. An EPERM
 *                            is answered by registering again and retrying once, in case a
 *                            kernel does not copy it.
 *
 * Callers that got 0 from ilk_membarrier_setup() must use a symmetric fence (a full fence on
 * the hot path) instead; they never call ilk_membarrier_heavy().
 */
#ifndef ILK_MEMBARRIER_H
#define ILK_MEMBARRIER_H

int ilk_membarrier_setup(void);
int ilk_membarrier_heavy(void);

#endif /* ILK_MEMBARRIER_H */
