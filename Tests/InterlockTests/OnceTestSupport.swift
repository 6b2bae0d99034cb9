// Helpers of the Once, Lazy and AtomicLazyReference tests: callers started while a body runs,
// whose sleep in the kernel and whose return the test can wait for (bounded, so that a lost
// wake-up fails the test instead of hanging it), and objects that count their deinits.

import CInterlock
import Interlock
import Testing

/// Threads that call into a Once or Lazy while its body runs. Each records its kernel thread
/// id, then makes its call; the test can wait until all of them sleep in the kernel (so that
/// only a wake-up lets them go on) and until all of them have returned.
final class OverlappingCallers: @unchecked Sendable {
    let count: Int
    private let threadIDs: [AtomicUInt32]
    private let returned = AtomicInt(0)
    // Written only in init, read only by `joinAll` on the creating thread.
    private var threads: [TestThread] = []

    /// Starts `count` threads, each running `call(index)` once.
    init(count: Int, _ call: @escaping @Sendable (_ index: Int) -> Void) {
        self.count = count
        let ids = (0..<count).map { _ in AtomicUInt32(0) }
        threadIDs = ids
        let returned = returned
        threads = (0..<count).map { index in
            TestThread {
                ids[index].store(ilk_current_thread_id())
                call(index)
                returned.increment()
            }
        }
    }

    /// Waits until every caller sleeps in the kernel (/proc state "S"); nothing but the call
    /// under test can put them to sleep after they record their ids.
    /// - Returns: whether they all did within `lockStallLimit`.
    func waitUntilAllAsleep() -> Bool {
        lockEventually {
            threadIDs.allSatisfy { id in
                let tid = id.load()
                return tid != 0 && threadState(Int32(tid)) == "S"
            }
        }
    }

    /// How many callers have returned from their call so far.
    var returnedCount: Int { returned.load() }

    /// Waits until every caller has returned, then joins them.
    /// - Returns: `false` when some did not return within `lockStallLimit` (they are left
    ///   running, so that a hang fails the test instead of blocking it forever).
    func joinAll() -> Bool {
        guard lockEventually({ returned.load() == count }) else { return false }
        for thread in threads { thread.join() }
        return true
    }
}

/// An object that counts its deinitialization in `counter`, and carries a plain field written
/// by its initializer (which a reader may only see through a happens-before edge).
final class CountedInstance: @unchecked Sendable {
    let counter: AtomicInt
    let tag: Int
    // Plain, written once in init: a reader without a happens-before edge from the initializer
    // is a data race ThreadSanitizer reports.
    var payload: [Int]

    init(tag: Int, counter: AtomicInt) {
        self.tag = tag
        self.counter = counter
        self.payload = [tag, tag &* 2, tag &* 3]
    }

    deinit { counter.increment() }
}

/// The error the tests' bodies throw, carrying the attempt that threw.
struct OnceTestError: Error, Equatable {
    let attempt: Int
}

/// `runConcurrently` with a hang bound: runs `body(index)` on `threadCount` new threads that
/// start together, and joins them once all have finished.
/// - Returns: `false` when some thread did not finish within `lockStallLimit`; the threads are
///   then left running, so that a lost wake-up fails the test instead of blocking the run.
func runConcurrentlyWithinStallLimit(threadCount: Int, _ body: @escaping @Sendable (_ index: Int) -> Void) -> Bool {
    let start = StartBarrier(count: threadCount)
    let finished = AtomicInt(0)
    let threads = (0..<threadCount).map { index in
        TestThread {
            start.wait()
            body(index)
            finished.increment()
        }
    }
    guard lockEventually({ finished.load() == threadCount }) else { return false }
    for thread in threads { thread.join() }
    return true
}
