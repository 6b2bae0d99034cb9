// The contenders of the semaphore and group benchmarks: Interlock's types, Dispatch's, and
// glibc's POSIX semaphore (sem_t in its own allocation, called directly from Swift: the same
// call into glibc as from C). Shared by WaitingBenchmarks (package-benchmark) and Interleaved
// (interleaved rounds): package-visible, with every hot member inlinable so that a call from either
// target is as direct as one from inside this module.

import Dispatch
import Interlock

#if canImport(Glibc)
import Glibc
#endif

/// A counting semaphore, as each peer spells it.
package protocol SemaphoreContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init(value: Int)
    func wait()
    func signal()
    /// Takes a unit without waiting (teardown checks).
    func tryTake() -> Bool
}

/// A group of tasks, as each peer spells it.
package protocol GroupContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func enter(_ count: Int)
    func enter()
    func leave()
    func wait()
}

package final class InterlockSemaphore: SemaphoreContender, @unchecked Sendable {
    package static var contenderName: String { "Interlock Semaphore" }
    package let semaphore: Interlock.Semaphore
    package init(value: Int) { semaphore = Interlock.Semaphore(value: value) }
    @inlinable @inline(__always) package func wait() { semaphore.wait() }
    @inlinable @inline(__always) package func signal() { semaphore.signal() }
    package func tryTake() -> Bool { semaphore.tryWait() }
}

package final class DispatchSemaphoreContender: SemaphoreContender, @unchecked Sendable {
    package static var contenderName: String { "DispatchSemaphore" }
    package let semaphore: DispatchSemaphore
    package init(value: Int) { semaphore = DispatchSemaphore(value: value) }
    @inlinable @inline(__always) package func wait() { semaphore.wait() }
    @inlinable @inline(__always) package func signal() { semaphore.signal() }
    package func tryTake() -> Bool { semaphore.wait(timeout: .now()) == .success }
}

package final class POSIXSemaphore: SemaphoreContender, @unchecked Sendable {
    package static var contenderName: String { "POSIX sem_t" }
    package let semaphore: UnsafeMutablePointer<sem_t>
    package init(value: Int) {
        semaphore = .allocate(capacity: 1)
        precondition(sem_init(semaphore, 0, UInt32(value)) == 0, "sem_init failed: errno \(errno)")
    }
    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }
    @inlinable @inline(__always) package func wait() { while sem_wait(semaphore) != 0 {} }  // EINTR only
    @inlinable @inline(__always) package func signal() { sem_post(semaphore) }
    package func tryTake() -> Bool { sem_trywait(semaphore) == 0 }
}

package final class InterlockWaitGroup: GroupContender, @unchecked Sendable {
    package static var contenderName: String { "Interlock WaitGroup" }
    package let group = WaitGroup()
    package init() {}
    @inlinable @inline(__always) package func enter(_ count: Int) { group.enter(count) }
    @inlinable @inline(__always) package func enter() { group.enter() }
    @inlinable @inline(__always) package func leave() { group.leave() }
    @inlinable @inline(__always) package func wait() { group.wait() }
}

package final class DispatchGroupContender: GroupContender, @unchecked Sendable {
    package static var contenderName: String { "DispatchGroup" }
    package let group = DispatchGroup()
    package init() {}
    @inlinable @inline(__always) package func enter(_ count: Int) { for _ in 0..<count { group.enter() } }
    @inlinable @inline(__always) package func enter() { group.enter() }
    @inlinable @inline(__always) package func leave() { group.leave() }
    @inlinable @inline(__always) package func wait() { group.wait() }
}

/// A generation counter that releases the fork-join's tasks: the same code for every contender.
package final class Generation: @unchecked Sendable {
    package let word = AtomicInt(0)
    package init() {}
    @inlinable package func advance() { _ = word.increment(ordering: .release) }
    /// Waits (yielding) until the generation moves past `seen`; returns the one seen.
    @inlinable package func await(after seen: Int) -> Int {
        while true {
            let now = word.load(ordering: .acquire)
            if now != seen { return seen + 1 }
            sched_yield()
        }
    }
}

/// The work a pool holder does: a few hundred cycles the optimizer cannot remove.
@inline(never) package func holderWork(_ seed: Int) -> Int {
    var x = seed
    for _ in 0..<32 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    return x
}

/// The fork-join of "WaitGroup fork-join / 4 threads", shared by every runner: thread 0 enters 3
/// tasks, releases threads 1-3 through `generation`, and waits; each of them leaves.
package final class ForkJoin<G: GroupContender>: @unchecked Sendable {
    package let group = G()
    package let generation = Generation()
    // Each task's last seen generation, kept across rounds: read afresh at the start of a round,
    // a task could miss an advance thread 0 had already made and wait forever.
    package let seenByTask = (0..<4).map { _ in AtomicInt(0) }

    package init() {}

    /// Thread `index`'s share of `operations` fork-joins.
    @inlinable package func run(_ index: Int, operations: Int) {
        if index == 0 {
            for _ in 0..<operations {
                group.enter(3)
                generation.advance()
                group.wait()
            }
        } else {
            // Relaxed: only this task's thread reads and writes its slot (rounds are ordered by
            // the team's start and join).
            var seen = seenByTask[index].load(ordering: .relaxed)
            for _ in 0..<operations {
                seen = generation.await(after: seen)
                group.leave()
            }
            seenByTask[index].store(seen, ordering: .relaxed)
        }
    }
}
