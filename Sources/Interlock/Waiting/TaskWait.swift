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
// Costs: the cancellation handler is most of a suspension's price (the runtime adds and removes
// a status record on the task): about 290 ns per round trip of two tasks handing a unit back and
// forth, measured on a peer that has none (AsyncBenchmarks, Benchmarks/README.md). `suspend` is
// inlined into its callers' slow paths so that a wait allocates one async frame, not two: the
// hand-off went from 1,389 to 1,285 ns.

/// How a task's wait ended: the value its continuation is resumed with.
@usableFromInline
internal enum _TaskWaitOutcome: Sendable {
    /// Served: a unit (Semaphore) or the zero (WaitGroup).
    case served
    case cancelled
    case timedOut
}

@usableFromInline
internal enum _TaskWait {
    /// Suspends the task until its continuation is resumed (see the file comment).
    /// - Returns: `true` when served, `false` when `deadline` passed first.
    /// - Throws: `CancellationError` when the task was cancelled first.
    @usableFromInline @inline(__always)
    internal static func suspend(
        deadline: ContinuousClock.Instant?,
        register: (UnsafeContinuation<_TaskWaitOutcome, Never>) -> Void,
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
        let outcome = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in register(continuation) }
        } onCancel: {
            abandon(.cancelled)
        }
        switch outcome {
        case .served: return true
        case .timedOut: return false
        case .cancelled: throw CancellationError()
        }
    }
}
