// AsyncLazy: a value computed once by an async function, awaited by every task that asks for it
// while it is computed — Lazy (Lazy.swift) for Swift concurrency, where a waiter must suspend,
// never block its thread (the cooperative pool has one thread per core).
//
// Algorithm: a single-flight memoizer (the pattern of Go's singleflight and of a shared
// `Task` cached by an actor), split like Lazy into a lock-free final state and a locked slow
// path. The first caller registers itself as a waiter and starts ONE computation in a task of
// the AsyncLazy's own (detached, so it inherits no caller's cancellation); every caller that
// arrives while it runs registers a continuation and suspends; the computation's end stores the
// value (on success), publishes DONE, and resumes every registered continuation with its
// result. A thrown error is handed to the waiters of that computation and not kept: the word
// stays EMPTY and the next caller starts a new computation. Once DONE, a read is one acquire
// load of the state word and a copy of the stored value.
//
// Layout: the object's stored properties, in its one heap allocation:
//
//   field          guarded by / written by                  read by
//   -------------  ---------------------------------------  ------------------------------------
//   _state         atomics only; written (DONE) once, by    the getter's fast path (acquire);
//                  a successful computation's end, under     the slow path, under the mutex
//                  the mutex
//   _mutexWord     _MutexWord (C11 atomics through its       _MutexWord
//                  address; never touched as a property)
//   _nextWaiterID  atomic fetch-add                          every slow-path call (its waiter id)
//   _value         a successful computation's end, once,     anyone after reading DONE with an
//                  under the mutex, before DONE              acquire, or under the mutex
//   _slow          the mutex: `running`, `waiters` ((id,     under the mutex only
//                  continuation) pairs), `make` (nil once
//                  DONE)
//
// State (the word, and the slow state under the mutex):
//
//   _state  running  waiters  meaning
//   ------  -------  -------  ---------------------------------------------------------------
//   EMPTY   false    none     no value and no computation: the next caller to register starts one
//                             (the initial state, and the state after a computation threw)
//   EMPTY   true     any      one computation runs in its task; each waiter awaits its result
//   DONE    false    none     the value is in `_value`; final
//   (EMPTY, false, some) and (DONE, true, _) and (DONE, _, some) never occur: see the invariants.
//
// Transitions (all under the mutex but the fast path's load):
//   value, fast path   acquire load of `_state`; DONE -> return `_value` (inline in the caller)
//   value, slow path   take a waiter id (fetch-add); install a cancellation handler; in the
//                      continuation's body, under the mutex:
//                        DONE            -> resume with `_value` (a reader that lost the race
//                                           with the end of the computation)
//                        task cancelled  -> resume throwing CancellationError; register nothing
//                        otherwise       -> register (append id, continuation); if !running:
//                                           running = true, copy `make`, and after unlocking
//                                           start the computation's task with it
//   cancellation       under the mutex: remove the entry of the waiter's id; if there was one,
//                      resume it throwing CancellationError after unlocking; if none, do nothing
//                      (the waiter has not registered yet, or a computation's end took it)
//   computation ends   under the mutex: on success `_value` = value, `_state` = DONE (release
//                      store), `make` = nil; always running = false and take every waiter;
//                      after unlocking, resume each with the result: the value or the error
//
// Invariants:
//   - Every continuation is resumed exactly once. One that is not registered is resumed by the
//     body that created it, at once, and nothing else ever sees it. One that is registered is
//     in `waiters` until exactly one party removes it under the mutex: the computation's end
//     (which takes them all) or its waiter's cancellation handler (which removes its own entry).
//     Whoever removes it resumes it, and once removed nobody can find it.
//   - The cancel-before-register race: the handler may run before the waiter registers (at
//     once, when the task was cancelled before withTaskCancellationHandler, or concurrently with
//     the continuation's body). The runtime sets the task's cancelled flag before it runs the
//     handlers, and the handler's critical section then precedes the registration's, so the
//     registration reads `Task.isCancelled == true` and resumes with CancellationError instead
//     of registering. If the registration comes first, the handler finds the entry. Either way a
//     cancelled waiter is resumed at once and leaves no entry behind.
//   - At most one computation runs at a time. `running` goes false -> true only under the mutex,
//     by the registration that starts the computation, and true -> false only at that
//     computation's end. Each computation's result therefore goes to the waiters registered
//     between its start and its end (at least its starter, unless that one was cancelled).
//   - Waiters exist only while a computation runs: a registration sets `running` in the same
//     critical section, and the end clears it and takes every waiter in the same section. So
//     after a failure the next registration finds `running == false` and starts a new
//     computation: errors are not cached.
//   - DONE is final and `_value` is written once. Only a successful end writes `_value` and
//     DONE, in the same section; a registration checks DONE first, so no computation starts
//     after DONE. `_value` is read only after DONE is seen, with an acquire or under the mutex.
//   - No cancellation reaches the computation: it runs in a detached task that nobody cancels
//     (its handle is not kept). Cancelling a waiter resumes that waiter only.
//   - The computation's task holds `self` until it ends and every waiter holds it for its call,
//     so the object is never freed while a computation runs or a waiter is registered.
//
// Memory ordering (x86-64 and aarch64):
//   - DONE: the end's release store (after its write of `_value`) pairs with the fast path's
//     acquire load, so everything `make` wrote and the stored value happen-before every read that
//     sees DONE. On x86-64 both are plain MOVs (TSO); on aarch64 STLR and LDAR (or LDAPR). A
//     plain load would let the caller's load of `_value` be satisfied before the load of DONE.
//   - The slow path's load of `_state`, under the mutex: relaxed. The end stored DONE under the
//     same mutex, whose unlock (release) and lock (acquire) order that section before ours.
//   - `_nextWaiterID`: relaxed fetch-add. Only uniqueness matters (an atomic read-modify-write
//     reads the latest value), and the id publishes nothing.
//   - The slow state: `_MutexWord`'s acquire lock and release unlock (MutexWord.swift).
//   - A resumed waiter reads its result from the continuation. The runtime's enqueue of the
//     resumed task and the task's run are ordered by the runtime's own release and acquire, so
//     on the hardware the result and what was written before the resume are visible to it.
//     ThreadSanitizer does not always see that edge (the concurrency runtime and Dispatch are
//     not instrumented): TaskWait.swift carries its outcome in an atomic word for that reason.
//     The stress workloads under TSan have not reported this result; should they, the same
//     remedy applies.
//   - The cancelled flag: the runtime's own atomics. The race argument above needs only that
//     the flag is set before the handlers run (program order in the cancelling thread) and
//     the mutex's ordering between the handler's section and the registration's.
//
// Why `_MutexWord` and not the Synchronization module's `Mutex`: on Linux a contended `Mutex`
// is handed over by the kernel (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI in the uninstrumented standard
// library), an edge ThreadSanitizer cannot see, so every contended section would be reported as
// a race; `_MutexWord`'s edges are C11 atomics in CInterlock, which it sees. The mutex blocks a
// thread only for the few instructions of a section (an append, a search and removal, a flag);
// no section awaits.
//
// Sendable: the class is checked `Sendable`, not `@unchecked`. Only the two fields whose
// guard the compiler cannot see are `nonisolated(unsafe)`: `_value` (ordered by `_state`, as
// above) and `_slow` (under `_mutexWord`). The other fields are atomics.
//
// Testing: `_isDone` is the fast path's check on its own, so that AsyncLazyTests can run it on a
// plain thread, which then reads what make wrote without touching `_value`. Only there does
// ThreadSanitizer check the acquire. With a relaxed load in its place, a reader that was a task
// went unreported (between two tasks it sees the concurrency runtime's own edges), and so did a
// thread that copied `_value`, an Optional of a generic type, which at -Onone calls into the
// runtime for its metadata and value witnesses. The thread with `_isDone` was reported.
// `_waiterCount` lets the tests wait until their readers are registered instead of sleeping.
//
// Costs: once DONE, `value` is one inline acquire load, a compare and a copy of the value (a
// retain when it holds a reference); no lock, no allocation (when the getter is not inlined,
// its async frame comes from the task's own stack allocator, as for any async call). Before
// DONE a caller pays one mutex section, an append to an array, an unsafe continuation and a
// cancellation record; the first also starts a task. The waiters are an array of (id,
// continuation) in registration order, not a dictionary: a cancellation searches it (rare, and
// linear in the waiters), every registration only appends. Continuations are unsafe ones (no
// allocation): the invariants above resume each exactly once, and the tests check it. Deciding
// figures, 64 tasks awaiting each fresh value (AsyncBenchmarks, "AsyncLazy fresh value"): 96.7 us
// per value with a dictionary and checked continuations, 89.2 with unsafe ones, 80.6 with the
// array, against 64 us for a Task stored behind a Mutex (whose readers cannot be cancelled while
// they wait; the cancellation record alone costs about 6 us of the 80.6).

import CInterlock
import Synchronization

/// A value computed once by an async function, on first use; every task that asks while it is
/// computed awaits the same computation.
///
/// The first read of ``value`` starts the computation given to ``init(_:)``, in a task that
/// belongs to the `AsyncLazy`, not to the reader. Every read that arrives while it runs suspends
/// (without blocking its thread) and resumes with its result; every read after it succeeded
/// returns the stored value at the cost of one atomic load. Every reader gets the same value,
/// with everything the computation wrote visible to it.
///
/// ```swift
/// let catalog = AsyncLazy { try await Catalog.download(from: server) }
/// let item = try await catalog.value[id]
/// ```
///
/// Errors: a computation that throws hands its error to every reader awaiting it (each gets
/// the same error) and is not cached. The next read after the failure starts a new computation.
///
/// Cancellation: cancelling a reader's task resumes that reader at once with
/// `CancellationError`. Nothing else changes: the computation goes on (it is never cancelled,
/// even when the reader that started it is cancelled), and every other reader still gets its
/// result. A reader whose task is already cancelled when it reads gets the value if it exists,
/// and otherwise `CancellationError`, without starting or joining a computation.
///
/// - Note: The computation runs in a detached task at the priority of the reader that starts it.
///   It inherits neither that reader's cancellation nor its task-local values. It holds the
///   `AsyncLazy` (and so the closure) until it ends. The closure is released once the value is
///   stored. Until then it is kept for retries.
/// - Warning: Reading ``value`` from inside the closure, or from anything the closure awaits,
///   waits for the computation to end, which waits for the read: the computation never ends, and
///   only the waiters' own cancellation gets them out. That is not detected.
public final class AsyncLazy<Value: Sendable>: Sendable {
    // The state word, EMPTY or DONE, loaded by the fast path (see the file comment).
    @usableFromInline internal let _state = Atomic<UInt32>(_AsyncLazyState.empty)
    // The mutex of the slow state; at offset 4, reached only through `_mutex`.
    internal let _mutexWord = Atomic<UInt32>(0)
    // Waiter ids, unique per object (see the file comment).
    internal let _nextWaiterID = Atomic<UInt64>(0)
    // Written once by a successful computation's end before DONE; read after DONE.
    @exclusivity(unchecked) @usableFromInline internal nonisolated(unsafe) var _value: Value? = nil
    // Under `_mutexWord` only.
    internal nonisolated(unsafe) var _slow: _AsyncLazySlowState<Value>

    /// Creates a lazy value that `make` computes on first use.
    ///
    /// - Parameter make: Computes the value. Called by the first read of ``value``, in a task
    ///   of this object's own. Called again by the next read after each call that throws.
    ///   Never called again once one call has returned. Released once the value is stored.
    public init(_ make: @escaping @Sendable () async throws -> Value) {
        _slow = _AsyncLazySlowState(make: make)
        assert(
            UnsafeMutableRawPointer(_mutex) == _getUnsafePointerToStoredProperties(self) + 4,
            "AsyncLazy: the mutex word does not follow the state word")
    }

    @inline(__always)
    internal var _mutex: UnsafeMutablePointer<UInt32> {
        // SAFETY: `_state` and `_mutexWord` (each an Atomic<UInt32>: 4 bytes, laid out as a
        // UInt32) are the first two stored properties of this final class, at offsets 0 and 4
        // whatever `Value` is; objects never move, and `self` is alive for the call.
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: UInt32.self) + 1
    }

    /// The value. The first read starts its computation; reads during the computation await its
    /// result; once it has succeeded every read returns the same value at once.
    ///
    /// - Throws: The error the computation this read awaited threw (it is not cached: the next
    ///   read starts a new computation), or `CancellationError` when this read's task is
    ///   cancelled while it waits (or before it, when there is no value yet). The computation
    ///   and other readers are unaffected.
    @inlinable
    public var value: Value {
        get async throws {
            if _fastPath(_isDone) {
                // SAFETY: DONE was read with an acquire, so the store of `.some` is visible and
                // nothing writes `_value` again.
                return _value.unsafelyUnwrapped
            }
            return try await _valueSlow()
        }
    }

    /// Whether the value is stored: the check of ``value``'s fast path, one acquire load. On
    /// its own so that a test can run it on a plain thread (file comment, "Testing").
    @inlinable @inline(__always)
    internal var _isDone: Bool {
        // Acquire: pairs with the release store of DONE at the computation's end, so the value
        // and everything the computation wrote are visible (file comment).
        _state.load(ordering: .acquiring) == _AsyncLazyState.done
    }

    /// The slow path of ``value``: registers a waiter (starting the computation when none runs)
    /// and suspends until the computation's end or the task's cancellation resumes it.
    @usableFromInline @inline(never)
    internal func _valueSlow() async throws -> Value {
        // Relaxed: only uniqueness matters (file comment, "Memory ordering").
        let id = _nextWaiterID.wrappingAdd(1, ordering: .relaxed).oldValue
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (waiter: UnsafeContinuation<Value, any Error>) in
                _register(waiter, id: id)
            }
        } onCancel: {
            // The waiter's entry if it is still registered; none if it has not registered yet
            // (it will see the cancellation) or a computation's end took it (and resumes it).
            let registered = _withSlowState { slow -> UnsafeContinuation<Value, any Error>? in
                guard let index = slow.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return slow.waiters.remove(at: index).waiter
            }
            registered?.resume(throwing: CancellationError())
        }
    }

    /// The registration, in the continuation's body: resumes `waiter` at once with the value or
    /// `CancellationError`, or registers it, starting a computation when none runs.
    private func _register(_ waiter: UnsafeContinuation<Value, any Error>, id: UInt64) {
        let outcome: _AsyncLazyRegistration<Value> = _withSlowState { slow in
            // Relaxed: under the mutex, after the section that stored DONE (file comment).
            if _state.load(ordering: .relaxed) == _AsyncLazyState.done {
                return .value(_value.unsafelyUnwrapped)
            }
            // After a cancellation handler's section that found no entry, this reads true:
            // the cancel-before-register race (file comment, "Invariants").
            if Task.isCancelled { return .cancelled }
            slow.waiters.append((id, waiter))
            if slow.running { return .registered }
            slow.running = true
            return .start(slow.make.unsafelyUnwrapped)
        }
        switch outcome {
        case .value(let value):
            waiter.resume(returning: value)
        case .cancelled:
            waiter.resume(throwing: CancellationError())
        case .registered:
            break
        case .start(let make):
            // Detached: the computation belongs to no reader, so no reader's cancellation (nor
            // its task-local values) reaches it; the starter's priority is kept.
            Task.detached(priority: Task.currentPriority) { await self._compute(make) }
        }
    }

    /// One computation, in its own task: runs `make`, stores the value on success, and resumes
    /// every waiter registered meanwhile with the result.
    private func _compute(_ make: @Sendable () async throws -> Value) async {
        let result: Result<Value, any Error>
        do {
            result = .success(try await make())
        } catch {
            result = .failure(error)
        }
        let waiters = _withSlowState { slow in
            if case .success(let value) = result {
                _value = value
                // Release: publishes `_value` and the computation's writes to the fast path's
                // acquire load (file comment, "Memory ordering").
                _state.store(_AsyncLazyState.done, ordering: .releasing)
                slow.make = nil
            }
            slow.running = false
            defer { slow.waiters = [] }
            return slow.waiters
        }
        for entry in waiters { entry.waiter.resume(with: result) }
    }

    /// Runs `body` on the slow state, holding the mutex. `body` must not block or suspend.
    @inline(__always)
    private func _withSlowState<R>(_ body: (inout _AsyncLazySlowState<Value>) -> R) -> R {
        _MutexWord.lock(_mutex, for: .asyncLazy)
        defer {
            if _slowPath(!_MutexWord.unlock(_mutex, for: .asyncLazy)) {
                fatalError("AsyncLazy: its mutex word was not locked at unlock (memory corruption?)")
            }
        }
        return body(&_slow)
    }

    /// The number of readers registered and waiting for the running computation (a snapshot;
    /// for tests and diagnostics).
    internal var _waiterCount: Int { _withSlowState { $0.waiters.count } }
}

/// The values of ``AsyncLazy``'s state word.
@usableFromInline
internal enum _AsyncLazyState {
    /// No value stored (a computation may be running; the slow state says).
    @usableFromInline static var empty: UInt32 { 0 }
    /// The value is stored. Final.
    @usableFromInline static var done: UInt32 { 1 }
}

/// ``AsyncLazy``'s state under its mutex (the file comment's state table).
internal struct _AsyncLazySlowState<Value: Sendable> {
    /// Whether a computation's task is running.
    var running = false
    /// The readers awaiting the running computation, by waiter id.
    var waiters: [(id: UInt64, waiter: UnsafeContinuation<Value, any Error>)] = []
    /// The computation; nil once the value is stored.
    var make: (@Sendable () async throws -> Value)?
}

/// What a registration found, decided under the mutex and acted on after it.
private enum _AsyncLazyRegistration<Value: Sendable> {
    /// The value exists: resume with it.
    case value(Value)
    /// The task is cancelled: resume with CancellationError.
    case cancelled
    /// Registered; a computation runs.
    case registered
    /// Registered, and this reader starts the computation with this closure.
    case start(@Sendable () async throws -> Value)
}
