// The suspension of a task waiting on a Semaphore or a WaitGroup: what both async waits share.
//
// A waiter object (the caller's) goes through `register`, called once, synchronously, with the
// task's continuation before the task suspends: it either stores the continuation (the waiter
// is listed) or resumes it at once. `abandon` is called by the cancellation handler (with
// `.cancelled`) and, for a deadline, by a timer task suspended on the clock until it passes
// (with `.timedOut`); it may run before `register` (a task already cancelled: the handler runs
// first; or an expired timer), concurrently with it, or after the continuation was resumed. The
// caller's state machine, under its own lock, decides which of them resumes the continuation,
// once (Semaphore+Async.swift, WaitGroup+Async.swift). No thread sleeps for a deadline.
//
// The outcome travels in a word of the waiter's (`resume(_:with:at:)` stores it with release, the
// task loads it with acquire after the await), not in the continuation's result: the runtime's
// enqueue of a resumed task is an edge ThreadSanitizer does not always see (the concurrency
// runtime and Dispatch are not instrumented), and it reported the continuation's result slot,
// written by the resumer and read by the task, as a race (stress workload
// semaphore-threads-and-tasks). The word's release/acquire pair is an edge it sees, and it orders
// everything the resumer did before (the unit's release chain, the list's state) for the task.
//
// Costs: the cancellation handler is most of a suspension's price (the runtime adds and removes
// a status record on the task; AsyncBenchmarks, Benchmarks/README.md). `suspend` is inlined into
// its callers' slow paths so that a wait allocates one async frame, not two (the deciding
// figure: the task hand-off took 0.93 of its time before).

import CInterlock

/// How a task's wait ended, as stored in its waiter's outcome word (0 while not resumed).
@usableFromInline
internal enum _TaskWaitOutcome: UInt32, Sendable {
    /// Served: a unit (Semaphore) or the zero (WaitGroup).
    case served = 1
    case cancelled = 2
    case timedOut = 3
}

@usableFromInline
internal enum _TaskWait {
    /// Suspends the task until its continuation is resumed (see the file comment), then reads
    /// how its wait ended from `outcome`, the word in `owner`'s storage that the resumer wrote.
    /// `owner` is kept alive until that read: the pointer alone does not keep it, and the
    /// caller's local may be released after its last use, which precedes the call.
    /// - Returns: `true` when served, `false` when `deadline` passed first.
    /// - Throws: `CancellationError` when the task was cancelled first.
    @usableFromInline @inline(__always)
    internal static func suspend(
        deadline: ContinuousClock.Instant?,
        owner: some AnyObject,
        outcome: UnsafeMutablePointer<UInt32>,
        register: (UnsafeContinuation<Void, Never>) -> Void,
        abandon: @escaping @Sendable (_TaskWaitOutcome) -> Void
    ) async throws -> Bool {
        let timer = deadline.map { deadline in
            Task {
                // Task.sleep may end a little early on some clocks: sleep until it is past.
                while ContinuousClock.now < deadline {
                    do { try await Task.sleep(until: deadline, clock: .continuous) } catch { return }
                }
                abandon(.timedOut)
            }
        }
        defer { timer?.cancel() }
        await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in register(continuation) }
        } onCancel: {
            abandon(.cancelled)
        }
        // Acquire: pairs with the release store in resume(_:with:at:).
        let ended = withExtendedLifetime(owner) { ilk_atomic_load_u32(outcome, ILK_ORDER_ACQUIRE) }
        switch _TaskWaitOutcome(rawValue: ended) {
        case .served: return true
        case .timedOut: return false
        case .cancelled: throw CancellationError()
        case nil: preconditionFailure("Interlock: internal error, a task resumed without an outcome")
        }
    }

    /// Resumes a waiting task: stores `outcome` in its waiter's word `word`, then resumes
    /// `continuation`. Called once per wait, by whichever of register, abandon or the grant
    /// takes the continuation under the primitive's list lock.
    @usableFromInline
    internal static func resume(
        _ continuation: UnsafeContinuation<Void, Never>, with outcome: _TaskWaitOutcome,
        at word: UnsafeMutablePointer<UInt32>
    ) {
        // Release: pairs with suspend's acquire load after the await (the file comment).
        ilk_atomic_store_u32(word, outcome.rawValue, ILK_ORDER_RELEASE)
        continuation.resume()
    }
}
