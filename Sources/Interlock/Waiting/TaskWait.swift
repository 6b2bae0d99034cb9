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
    @usableFromInline
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
