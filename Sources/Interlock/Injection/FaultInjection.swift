// Fault injection: named points in the slow paths of every primitive where a build for testing
// can make the calling thread yield or sleep, so that the stress harness reaches the
// interleavings a 2-core machine rarely produces (a waiter preempted between registering and
// sleeping, an unlock split between its decrement and its store, a grace period that starts at
// the wrong moment).
//
// Off unless the module is compiled with `-DINTERLOCK_FAULT_INJECTION` (in its own scratch path:
// `make stress-inject`). Off, `_inject` is an empty inline function and every point compiles to
// nothing: the release build's code is unchanged. On, each point calls the handler installed
// with `_FaultInjection.install(_:)` (the stress harness's `--inject SEED`), if any.
//
// The points sit where a delay widens a window that the algorithm's invariants argue about:
//
//   point                       where                                             window widened
//   --------------------------  ------------------------------------------------  ---------------
//   futexWait                   _Futex.wait, before the system call              registered as a
//                                                                                 sleeper, not yet
//                                                                                 asleep
//   futexWake                   _Futex.wake and requeue, before the system call  state published,
//                                                                                 sleeper not woken
//   mutexUnlockStore            _MutexWord unlock of 2: after the decrement,     word reads 1 with
//                               before the store of 0                            nobody holding it
//   semaphoreCommitted          Semaphore._waitSlow: decremented, not queued     overtaking,
//                                                                                 `pending`
//   semaphoreHandOff            Semaphore._handOff: counted, before listLock     grant in flight
//   waitGroupZero               WaitGroup leave: count 0 reached, not processed  PENDING zero
//   onceRunnerDone              OnceWord: body done, before the DONE exchange    RUNNING with the
//                                                                                 work finished
//   queueSlotHandOff            LockFreeQueue: a slot claimed, value not yet      a dequeuer
//                               written / read                                   waiting on the
//                                                                                 slot
//   rcuRetire                   LockFreeQueue and LockFreeStack: before a block  a reader still in
//                               is retired (to RCU; a stack's node to the pool)  its section
//   stackPopRead                LockFreeStack pop: top's next read, before the   top popped,
//                               compare-and-swap                                 recycled and
//                                                                                 pushed again (ABA)
//   distributedLockLinked       DistributedLock: link(2) done, before the        a breaker between
//                               verification                                     link and check
//   channelSlotClaimed          BoundedChannel: a ticket (or a rendezvous        a slot's waiter
//                               claim) taken, the slot not yet written / read    asleep on it
//   channelRendezvousPut        BoundedChannel rendezvous: the element stored,   a close or a
//                               not yet announced                                retraction

/// A named point where an injection build may delay the calling thread (see the file comment).
@usableFromInline
internal enum _InjectionPoint: UInt32, CaseIterable, Sendable {
    case futexWait = 1
    case futexWake
    case mutexUnlockStore
    case semaphoreCommitted
    case semaphoreHandOff
    case waitGroupZero
    case onceRunnerDone
    case queueSlotHandOff
    case rcuRetire
    case distributedLockLinked
    case channelSlotClaimed
    case channelRendezvousPut
    case stackPopRead
}

/// Calls the injection handler at `point` in an injection build; nothing otherwise.
@inlinable @inline(__always)
internal func _inject(_ point: _InjectionPoint) {
    #if INTERLOCK_FAULT_INJECTION
    _FaultInjection.visit(point.rawValue)
    #endif
}

#if INTERLOCK_FAULT_INJECTION
/// The handler of an injection build (`-DINTERLOCK_FAULT_INJECTION`); absent from other builds.
public enum _FaultInjection {
    /// Called at every point with the point's number (1 ...), on the thread that reached it.
    public typealias Handler = @Sendable (_ point: UInt32) -> Void

    // Set once by `install`, before the threads that visit the points start (thread creation
    // orders the write before their reads); read-only afterwards.
    nonisolated(unsafe) internal static var handler: Handler?

    /// The points' names, by number (index 0 unused).
    public static let pointNames: [String] = ["-"] + _InjectionPoint.allCases.map { "\($0)" }

    /// Installs `handler`. Call it once, before starting the threads that use Interlock.
    public static func install(_ handler: @escaping Handler) {
        precondition(Self.handler == nil, "_FaultInjection.install: a handler is installed already")
        Self.handler = handler
    }

    @usableFromInline
    internal static func visit(_ point: UInt32) {
        handler?(point)
    }
}
#endif
