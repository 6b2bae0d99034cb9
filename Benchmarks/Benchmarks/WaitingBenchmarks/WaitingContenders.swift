// The contenders of the semaphore and group benchmarks: Interlock's types, Dispatch's, and
// glibc's POSIX semaphore (sem_t in its own allocation, called directly from Swift: the same
// call into glibc as from C).

import Dispatch
import Interlock

#if canImport(Glibc)
import Glibc
#endif

/// A counting semaphore, as each peer spells it.
protocol SemaphoreContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init(value: Int)
    func wait()
    func signal()
    /// Takes a unit without waiting (teardown checks).
    func tryTake() -> Bool
}

/// A group of tasks, as each peer spells it.
protocol GroupContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func enter(_ count: Int)
    func enter()
    func leave()
    func wait()
}

final class InterlockSemaphore: SemaphoreContender, @unchecked Sendable {
    static var contenderName: String { "Interlock Semaphore" }
    let semaphore: Interlock.Semaphore
    init(value: Int) { semaphore = Interlock.Semaphore(value: value) }
    @inline(__always) func wait() { semaphore.wait() }
    @inline(__always) func signal() { semaphore.signal() }
    func tryTake() -> Bool { semaphore.tryWait() }
}

final class DispatchSemaphoreContender: SemaphoreContender, @unchecked Sendable {
    static var contenderName: String { "DispatchSemaphore" }
    let semaphore: DispatchSemaphore
    init(value: Int) { semaphore = DispatchSemaphore(value: value) }
    @inline(__always) func wait() { semaphore.wait() }
    @inline(__always) func signal() { semaphore.signal() }
    func tryTake() -> Bool { semaphore.wait(timeout: .now()) == .success }
}

final class POSIXSemaphore: SemaphoreContender, @unchecked Sendable {
    static var contenderName: String { "POSIX sem_t" }
    let semaphore: UnsafeMutablePointer<sem_t>
    init(value: Int) {
        semaphore = .allocate(capacity: 1)
        precondition(sem_init(semaphore, 0, UInt32(value)) == 0, "sem_init failed: errno \(errno)")
    }
    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }
    @inline(__always) func wait() { while sem_wait(semaphore) != 0 {} }  // EINTR only
    @inline(__always) func signal() { sem_post(semaphore) }
    func tryTake() -> Bool { sem_trywait(semaphore) == 0 }
}

final class InterlockWaitGroup: GroupContender, @unchecked Sendable {
    static var contenderName: String { "Interlock WaitGroup" }
    let group = WaitGroup()
    @inline(__always) func enter(_ count: Int) { group.enter(count) }
    @inline(__always) func enter() { group.enter() }
    @inline(__always) func leave() { group.leave() }
    @inline(__always) func wait() { group.wait() }
}

final class DispatchGroupContender: GroupContender, @unchecked Sendable {
    static var contenderName: String { "DispatchGroup" }
    let group = DispatchGroup()
    @inline(__always) func enter(_ count: Int) { for _ in 0..<count { group.enter() } }
    @inline(__always) func enter() { group.enter() }
    @inline(__always) func leave() { group.leave() }
    @inline(__always) func wait() { group.wait() }
}

/// A generation counter that releases the fork-join's tasks: the same code for every contender.
final class Generation: @unchecked Sendable {
    let word = AtomicInt(0)
    func advance() { _ = word.increment(ordering: .release) }
    /// Waits (yielding) until the generation moves past `seen`; returns the one seen.
    func await(after seen: Int) -> Int {
        while true {
            let now = word.load(ordering: .acquire)
            if now != seen { return seen + 1 }
            sched_yield()
        }
    }
}

/// The work a pool holder does: a few hundred cycles the optimizer cannot remove.
@inline(never) func holderWork(_ seed: Int) -> Int {
    var x = seed
    for _ in 0..<32 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    return x
}
