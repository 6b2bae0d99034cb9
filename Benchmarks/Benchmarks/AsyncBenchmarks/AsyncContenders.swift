// The contenders of the async benchmarks: Interlock's Semaphore (async waits) and AsyncLazy,
// and what a Swift user writes by hand today.

import Interlock
import Synchronization

/// A semaphore whose waiting tasks suspend, as each contender spells it.
protocol AsyncSemaphoreContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init(value: Int)
    func wait() async throws
    func signal() async
}

final class InterlockAsyncSemaphore: AsyncSemaphoreContender {
    static var contenderName: String { "Interlock Semaphore" }
    let semaphore: Interlock.Semaphore
    init(value: Int) { semaphore = Interlock.Semaphore(value: value) }
    @inline(__always) func wait() async throws { try await semaphore.wait() }
    @inline(__always) func signal() async { semaphore.signal() }
}

/// A FIFO of waiters in an array with a moving head (amortized: no allocation per waiter once
/// the array has grown), as the hand-written peers keep them.
struct WaiterFIFO<Waiter> {
    var waiters: [Waiter] = []
    var head = 0
    var isEmpty: Bool { head == waiters.count }
    mutating func append(_ waiter: Waiter) { waiters.append(waiter) }
    mutating func popFirst() -> Waiter? {
        guard head < waiters.count else { return nil }
        let first = waiters[head]
        head += 1
        if head == waiters.count {
            waiters.removeAll(keepingCapacity: true)
            head = 0
        }
        return first
    }
    /// Removes the first waiter that `matches` (a cancelled one).
    mutating func remove(where matches: (Waiter) -> Bool) -> Waiter? {
        guard let index = waiters[head...].firstIndex(where: matches) else { return nil }
        return waiters.remove(at: index)
    }
}

/// The usual hand-written answer: an actor holding the count and a FIFO of continuations (no
/// cancellation support, which would make it slower).
actor ActorSemaphore {
    var value: Int
    var waiters = WaiterFIFO<CheckedContinuation<Void, Never>>()
    init(value: Int) { self.value = value }
    func wait() async {
        if value > 0 {
            value -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }
    func signal() {
        if let next = waiters.popFirst() { next.resume() } else { value += 1 }
    }
}

final class ActorSemaphoreContender: AsyncSemaphoreContender {
    static var contenderName: String { "actor semaphore" }
    let semaphore: ActorSemaphore
    init(value: Int) { semaphore = ActorSemaphore(value: value) }
    func wait() async throws { await semaphore.wait() }
    func signal() async { await semaphore.signal() }
}

/// What the popular async-semaphore packages do: the count and a FIFO of checked continuations
/// under a `Synchronization.Mutex` (cancellation left out, as in the actor).
final class MutexContinuationSemaphore: AsyncSemaphoreContender {
    static var contenderName: String { "Mutex + CheckedContinuation" }
    struct State {
        var value: Int
        var waiters = WaiterFIFO<CheckedContinuation<Void, Never>>()
    }
    let state: Mutex<State>
    init(value: Int) { state = Mutex(State(value: value)) }
    func wait() async throws {
        let took = state.withLock { state in
            if state.value > 0 {
                state.value -= 1
                return true
            }
            return false
        }
        if took { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.value > 0 {
                    state.value -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
    func signal() async {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let next = state.waiters.popFirst() { return next }
            state.value += 1
            return nil
        }
        next?.resume()
    }
}

/// The same with cancellation, as `wait() async throws` promises it (and as the popular
/// packages' cancellable waits do): waiters keyed by an id, so that a cancellation handler can
/// remove its own and resume it with `CancellationError`.
final class CancellableMutexContinuationSemaphore: AsyncSemaphoreContender {
    static var contenderName: String { "Mutex + CheckedContinuation, cancellable" }
    struct State {
        var value: Int
        var nextID = 0
        var waiters = WaiterFIFO<(id: Int, continuation: CheckedContinuation<Void, any Error>)>()
    }
    let state: Mutex<State>
    init(value: Int) { state = Mutex(State(value: value)) }
    func wait() async throws {
        let id: Int? = state.withLock { state in
            if state.value > 0 {
                state.value -= 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let resumeNow: Result<Void, any Error>? = state.withLock { state in
                    if state.value > 0 {
                        state.value -= 1
                        return .success(())
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
            }
        } onCancel: {
            let cancelled = state.withLock { state in state.waiters.remove { $0.id == id }?.continuation }
            cancelled?.resume(throwing: CancellationError())
        }
    }
    func signal() async {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if let next = state.waiters.popFirst() { return next.continuation }
            state.value += 1
            return nil
        }
        next?.resume()
    }
}

/// An async value computed once, as each contender spells it.
protocol AsyncLazyContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init(_ make: @escaping @Sendable () async throws -> Int)
    func get() async throws -> Int
}

final class InterlockAsyncLazy: AsyncLazyContender {
    static var contenderName: String { "Interlock AsyncLazy" }
    let lazy: AsyncLazy<Int>
    init(_ make: @escaping @Sendable () async throws -> Int) { lazy = AsyncLazy(make) }
    @inline(__always) func get() async throws -> Int { try await lazy.value }
}

/// The usual hand-written answer: the first caller stores a `Task` behind a mutex; everyone
/// awaits its value.
final class MutexTaskLazy: AsyncLazyContender {
    static var contenderName: String { "Task behind a Mutex" }
    let make: @Sendable () async throws -> Int
    let task = Mutex<Task<Int, any Error>?>(nil)
    init(_ make: @escaping @Sendable () async throws -> Int) { self.make = make }
    func get() async throws -> Int {
        let task = task.withLock { stored in
            if let stored { return stored }
            let made = Task { try await make() }
            stored = made
            return made
        }
        return try await task.value
    }
}
