// _OnceWord: the run-once algorithm over two 32-bit words, shared by Once and Lazy.
//
// Algorithm: a four-state futex word in the manner of Drepper's mutex ("Futexes Are Tricky",
// 2011) and of the futex-based call_once of musl's pthread_once and Rust's std::sync::Once:
// the first caller moves the word from NEW to RUNNING and runs the body; later callers mark
// the word "sleepers" and sleep on it in the kernel; the runner publishes DONE with one
// release exchange and wakes the sleepers only when the word says there may be some. Once
// the word reads DONE it never changes again, so every later call is one acquire load.
//
// Words (the first stored property of the owning object, at a stable address):
//
//   word        written by                         meaning
//   ----------  ---------------------------------  -------------------------------------------
//   state       CAS/exchange, see below            NEW, RUNNING, SLEEPERS or DONE
//   runner      the runner, after taking RUNNING   its thread id (ilk_current_thread_id, never
//               and before leaving it              0) while it runs the body; 0 otherwise
//
// State word:
//
//   value  name      meaning
//   -----  --------  -------------------------------------------------------------------------
//     0    NEW       nobody has completed the body and nobody runs it: the next caller runs it
//     1    RUNNING   one thread runs the body; nobody sleeps on the word
//     2    SLEEPERS  one thread runs the body, and threads MAY sleep on the word: its end wakes all
//     3    DONE      the body has completed without throwing; final
//
// Transitions:
//   call, fast path    acquire load; DONE -> return (inline in the caller)
//   call, NEW          CAS 0 -> 1 (acquire): the winner runs the body; a loser goes on with the
//                      value it found
//   call, RUNNING      once per call, re-read (acquire) after each pause, up to 128 pauses,
//                      while RUNNING; then CAS 1 -> 2 (acquire), then futex-wait on 2; after
//                      any wake-up, load again (acquire) and start over
//   call, SLEEPERS     futex-wait on 2, then load again and start over
//   body returns       runner = 0; exchange(3) (release); if it found 2, wake all
//   body throws        runner = 0; exchange(0) (release); if it found 2, wake all, so that the
//                      sleepers start over and one of them runs the body again
//   call, RUNNING or   when `runner` holds the caller's own id, the caller is inside the body:
//   SLEEPERS           trap (a recursive call would wait for itself forever)
//
// Invariants:
//   - DONE is final: nothing writes the word after the exchange(3), so a load that reads DONE
//     needs nothing more, and the body completed exactly once.
//   - At most one thread runs the body at a time: only a CAS 0 -> 1 starts it, and only the
//     runner's own exchange leaves 1 or 2. A body that throws is run again by the next
//     thread to win a CAS 0 -> 1, never concurrently with the failed attempt.
//   - No lost wake-up: a thread sleeps only on the value 2, and 2 is written only by a CAS
//     from 1 while a runner runs; that runner's exchange, which is the only write that leaves
//     2, reads it (an atomic read-modify-write reads the latest value of the word) and wakes
//     every sleeper after it. A waiter that reaches the kernel after the exchange finds the
//     word changed (the kernel compares the word with 2 and queues the waiter atomically with
//     respect to wakes), and does not sleep.
//   - `runner` holds a thread's id only while that thread runs the body. A thread can read its
//     own id there only from its own store (no other thread writes that value, and a thread
//     reads its own latest write or a later one), so reading its id means it is inside the
//     body: the recursion check has no false positives and needs no ordering.
//   - No thundering herd on success: sleepers wake once, to read DONE. On a throw they all
//     wake and race for the CAS 0 -> 1; the losers mark 2 and sleep again. Throwing bodies are
//     rare enough that waking one at a time (which needs the woken thread to take the word
//     straight to 2, and still loses wake-ups when a newcomer completes the body first) is not
//     worth its complexity.
//
// Memory ordering (x86-64 and aarch64):
//   - DONE: the runner's exchange(3) is a release and every check for DONE is an acquire (the
//     inline load, the slow path's loads, and the failure side of its CASes, which may find
//     DONE and return). The exchange comes after the body in program order, so the body's
//     writes happen-before every return from a call that read DONE. On aarch64 the exchange is
//     SWPL (or an LDXR/STLXR loop) and the acquire load LDAR (LDAPR with RCpc): a plain LDR
//     would let the caller's later loads of the body's data be satisfied before the load of
//     DONE, returning stale data, which the acquire forbids. On x86-64 the acquire load is a
//     plain MOV (loads are not reordered with later loads or stores) and the exchange an XCHG.
//   - NEW after a throw: the exchange(0) is a release and the next runner's CAS 0 -> 1 an
//     acquire, so a retry sees what the failed attempt wrote (as a mutex hands its section
//     over). The CAS 1 -> 2 publishes nothing; it is an acquire only because the value it may
//     find instead is DONE, and C11 forbids a failure order stronger than the success order.
//   - `runner`: relaxed loads and stores; the invariant above needs only per-word coherence.
//   - A futex wait or wake is not an ordering edge (FutexWait.swift): every waiter re-reads the
//     word with an acquire load after waking.
//
// A short spin before sleeping: a caller that finds RUNNING re-reads the word after each pause
// (no backoff: a body's end must be seen within a pause), for at most 128 pauses (a few
// microseconds), before it marks SLEEPERS and sleeps. Bodies of a once-initialisation that
// allocate, open files or build tables outlast the spin, and their callers sleep as before (the
// spin is bounded, never the length of a body); bodies shorter than a futex round trip (tens of
// microseconds on a virtual machine) no longer cost every overlapping caller a sleep and the
// runner a wake-all. Deciding figure (OnceBenchmarks, four threads on two cores racing through
// fresh tokens with a body of a few dozen multiply-adds): Lazy's time per token fell to about a
// third. The runs, and the Once rows that this did not fix, are in Benchmarks/README.md.

import CInterlock

/// The run-once algorithm over two words at a stable address (state, runner id). The owner
/// names itself (`user`) in the recursion trap and in the futex failure trap.
@usableFromInline
internal enum _OnceWord {
    /// Nobody has completed the body, and nobody runs it.
    @usableFromInline static var new: UInt32 { 0 }
    /// One thread runs the body; nobody sleeps on the word.
    @usableFromInline static var running: UInt32 { 1 }
    /// One thread runs the body, and threads may sleep on the word.
    @usableFromInline static var sleepers: UInt32 { 2 }
    /// The body has completed without throwing. Final.
    @usableFromInline static var done: UInt32 { 3 }

    /// Whether the body has completed: the whole fast path, one acquire load.
    @inlinable @inline(__always)
    internal static func isDone(_ word: UnsafeMutablePointer<UInt32>) -> Bool {
        // Acquire: pairs with the runner's release exchange(DONE), so that the body's writes
        // are visible to the caller once this returns true (file comment, "Memory ordering").
        ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE) == done
    }

    /// The slow path of a call: runs `body` if nobody has completed it, or waits for the
    /// thread that runs it. Returns once the word is DONE; rethrows the body's error when this
    /// caller ran it and it threw (the word is then NEW again).
    @usableFromInline @inline(never)
    internal static func runSlow(
        _ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser, _ body: () throws -> Void
    ) rethrows {
        let me = ilk_current_thread_id()
        // Acquire (here and in every CAS below, on success and failure): the value found may
        // be DONE, and the caller then returns and reads the body's data.
        var state = ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE)
        var spun = false
        while true {
            switch state {
            case done:
                return
            case new:
                state = ilk_atomic_cas_value_u32(word, new, running, ILK_ORDER_ACQUIRE, ILK_ORDER_ACQUIRE)
                if state == new {
                    try _runBody(word, me, user, body)
                    return
                }
            case running:
                if _isRunner(word, me) { _recursiveCall(user) }
                if !spun {
                    spun = true
                    state = _spinWhileRunning(word)
                    continue
                }
                state = ilk_atomic_cas_value_u32(word, running, sleepers, ILK_ORDER_ACQUIRE, ILK_ORDER_ACQUIRE)
                if state == running { state = sleepers }  // marked: go to sleep
            case sleepers:
                if _isRunner(word, me) { _recursiveCall(user) }
                _ = _Futex.wait(word, expected: sleepers, for: user)
                state = ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE)
            default:
                _corrupted(word, state, user)
            }
        }
    }

    /// Re-reads the word, one pause between two looks, while it is RUNNING, for at most 128
    /// pauses (the file comment); returns the state last read.
    @inline(never)
    internal static func _spinWhileRunning(_ word: UnsafeMutablePointer<UInt32>) -> UInt32 {
        var budget = 128
        while true {
            ilk_spin_pause()
            // Acquire: the value may be DONE, and the caller then returns and reads the body's
            // data (pairs with the runner's release exchange).
            let state = ilk_atomic_load_u32(word, ILK_ORDER_ACQUIRE)
            budget -= 1
            if state != running || budget == 0 { return state }
        }
    }

    /// Runs the body as the one runner (the caller won the CAS NEW -> RUNNING), then leaves
    /// RUNNING for DONE, or for NEW when the body throws, waking sleepers in both cases.
    @inline(__always)
    internal static func _runBody(
        _ word: UnsafeMutablePointer<UInt32>, _ me: UInt32, _ user: _FutexUser, _ body: () throws -> Void
    ) rethrows {
        let runner = word + 1
        // Relaxed: read only by the recursion check, which needs no ordering (file comment).
        ilk_atomic_store_u32(runner, me, ILK_ORDER_RELAXED)
        var completed = false
        defer {
            // Relaxed: as above. Cleared before the state leaves RUNNING, so that a retry by
            // another thread never finds this thread's id.
            ilk_atomic_store_u32(runner, 0, ILK_ORDER_RELAXED)
            _inject(.onceRunnerDone)
            // Release: publishes the body's writes to every acquire that reads DONE (or, after a
            // throw, to the next runner's CAS NEW -> RUNNING).
            let previous = ilk_atomic_exchange_u32(word, completed ? done : new, ILK_ORDER_RELEASE)
            if previous == sleepers { _Futex.wakeAll(word, for: user) }
        }
        try body()
        completed = true
    }

    /// Whether the calling thread (`me`) is the one running the body.
    @inline(__always)
    internal static func _isRunner(_ word: UnsafeMutablePointer<UInt32>, _ me: UInt32) -> Bool {
        // Relaxed: a thread reads its own id here only from its own store (file comment).
        ilk_atomic_load_u32(word + 1, ILK_ORDER_RELAXED) == me
    }

    /// The trap for a call from inside the body on the thread that runs it.
    @usableFromInline @inline(never)
    internal static func _recursiveCall(_ user: _FutexUser) -> Never {
        switch user {
        case .lazy:
            fatalError(
                "Lazy: value read recursively from its own initializer (the make closure); "
                    + "it would wait for itself forever")
        default:
            fatalError(
                "\(user.typeName): run(_:) called recursively from its own body; "
                    + "it would wait for itself forever")
        }
    }

    /// The trap for a state word holding none of the four states (memory corruption).
    @usableFromInline @inline(never)
    internal static func _corrupted(
        _ word: UnsafeMutablePointer<UInt32>, _ state: UInt32, _ user: _FutexUser
    ) -> Never {
        fatalError(
            "\(user.typeName): state word at \(word) holds \(state), which is no state of the algorithm "
                + "(memory corruption?)")
    }
}
