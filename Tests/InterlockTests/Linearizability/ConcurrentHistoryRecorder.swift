// ConcurrentHistoryRecorder: runs many short rounds of concurrent operations on fresh
// containers and records one history per round, for LinearizabilityChecker.
//
// Threads: `threadCount` OS threads live for the whole run (creating threads per round would
// cost more than the rounds). Between rounds they meet at `RoundBarrier`; the last to arrive
// creates the next round's empty container and then releases the others, so all threads start
// a round together and their few operations overlap.
//
// Clock: one shared counter, incremented with sequential consistency just before each call
// (invocation tick) and just after it returns (response tick). Ticks are unique and totally
// ordered, and cheaper than clock_gettime. Soundness: if A's response tick is below B's
// invocation tick, A's call returned (program order) before A's response increment, which
// precedes B's invocation increment in the counter's modification order, which precedes B's
// call (program order): A really completed before B began. Overlapping ticks may hide a real
// order, which only makes the check more lenient, never wrong.
//
// Operations: each thread runs `operationsPerThread` operations drawn from a seeded generator
// (about half inserts, 40% removes, 10% isEmpty); inserted values are unique within a
// history (thread * operationsPerThread + index + 1), so every removed value names its insert.
//
// Memory: each thread appends only to its own record buffer; the main thread reads the
// buffers after joining the threads (pthread_join synchronizes). The container reference is
// published by the barrier's release/acquire on its generation word.

import CInterlock
import Interlock

/// Records concurrent histories of containers.
enum ConcurrentHistoryRecorder {
    /// Runs `rounds` rounds, each on a new `Container`, from `threadCount` threads doing
    /// `operationsPerThread` operations each, and returns one history per round.
    static func record<Container: ContainerUnderTest, Specification: SequentialSpecification>(
        _ container: Container.Type,
        as specification: Specification.Type,
        rounds: Int,
        threadCount: Int = 4,
        operationsPerThread: Int = 3,
        seed: UInt64 = 0x1BAD_B002
    ) -> [History<Specification>]
    where Specification.Operation == ContainerOperation, Specification.Result == ContainerResult {
        precondition(
            threadCount * operationsPerThread <= LinearizabilityChecker<Specification>.maximumOperations,
            "ConcurrentHistoryRecorder: rounds of \(threadCount * operationsPerThread) operations are too long to check"
        )
        let clock = AtomicUInt64(0)
        let barrier = RoundBarrier(participants: threadCount)
        let current = SharedContainer<Container>()
        let buffers = (0..<threadCount).map { _ in ThreadRecords<Specification>() }

        let threads = (0..<threadCount).map { thread in
            TestThread {
                let records = buffers[thread]
                records.operations.reserveCapacity(rounds * operationsPerThread)
                var random = SplitMix64(seed: seed &+ UInt64(thread) &* 0x9E37_79B9_7F4A_7C15)
                for round in 0..<rounds {
                    barrier.arriveAndWait { current.container = Container() }
                    // Written by the last arriver before the barrier's release store, read
                    // after this thread's acquire load of it (RoundBarrier).
                    let container = current.container!
                    barrier.startTogether(round: round)
                    for index in 0..<operationsPerThread {
                        let operation: ContainerOperation
                        switch random.next() % 10 {
                        case 0..<5: operation = .insert(thread * operationsPerThread + index + 1)
                        case 5..<9: operation = .remove
                        default: operation = .isEmpty
                        }
                        // A few random pauses shift this thread against the others, so that
                        // rounds interleave differently.
                        for _ in 0..<(random.next() % 32) { ilk_spin_pause() }
                        // seq_cst: the ticks must form one total order consistent with each
                        // thread's program order (see the file comment).
                        let invoked = clock.increment(ordering: .sequentiallyConsistent)
                        let result = container.perform(operation)
                        let responded = clock.increment(ordering: .sequentiallyConsistent)
                        records.operations.append(
                            HistoryOperation(
                                thread: thread, invoked: invoked, responded: responded,
                                operation: operation, result: result))
                    }
                }
            }
        }
        for thread in threads { thread.join() }

        return (0..<rounds).map { round in
            let slice = round * operationsPerThread..<(round + 1) * operationsPerThread
            return History(buffers.flatMap { $0.operations[slice] })
        }
    }

    /// Whether any two operations of different threads overlap in `history`: evidence that
    /// the recorder produced real concurrency rather than a sequential run.
    static func hasOverlap<Specification>(_ history: History<Specification>) -> Bool {
        let operations = history.operations
        for a in operations.indices {
            for b in operations.indices where operations[a].thread < operations[b].thread {
                if operations[a].invoked < operations[b].responded && operations[b].invoked < operations[a].responded {
                    return true
                }
            }
        }
        return false
    }
}

/// The container of the current round: written by the barrier's last arriver only.
private final class SharedContainer<Container>: @unchecked Sendable {
    var container: Container?
}

/// One thread's records, appended to by that thread only and read after it was joined.
private final class ThreadRecords<Specification: SequentialSpecification>: @unchecked Sendable {
    var operations: [HistoryOperation<Specification>] = []
}

/// A reusable barrier for a fixed number of threads, whose last arriver runs a closure
/// before releasing the others, and a start line that lines up the threads on a core.
///
/// State: `arrived` counts threads at the barrier in the current generation; `generation`
/// counts completed barriers. The last arriver resets `arrived`, runs the closure and then
/// bumps `generation` with release; waiters leave when they acquire the new generation, so
/// the closure's writes happen-before everything they do next. A waiter cannot re-enter and
/// increment `arrived` before the reset, because it leaves only after the bump, which follows
/// the reset in the last arriver's program order (release orders both).
private final class RoundBarrier: @unchecked Sendable {
    private let participants: Int
    private let arrived = AtomicInt(0)
    private let generation = AtomicInt(0)
    private let started = AtomicInt(0)

    init(participants: Int) { self.participants = participants }

    func arriveAndWait(lastArriver body: () -> Void) {
        // acquire: pairs with the release bump of the previous barrier (already seen by this
        // thread's own exit from it, so the value read is the current generation).
        let entered = generation.load(ordering: .acquire)
        // acquireRelease: the last arriver acquires every other thread's prior work through
        // the release sequence of increments on `arrived`, and releases its own.
        if arrived.increment(ordering: .acquireRelease) == participants {
            arrived.store(0, ordering: .relaxed)  // relaxed: published by the release below
            body()
            generation.store(entered + 1, ordering: .release)  // pairs with the waiters' acquire
            return
        }
        var spins = 0
        while generation.load(ordering: .acquire) == entered {  // pairs with the release bump
            spins += 1
            if spins < Self.spinsBeforeYield { ilk_spin_pause() } else { ilk_thread_yield() }
        }
    }

    /// The start line of round `round` (counted from 0): waits, spinning without yielding,
    /// until every participant has reached it or a short spin budget runs out.
    ///
    /// The barrier alone releases its last arriver at once, while the others notice the new
    /// generation only a little later: enough for three short operations to finish before
    /// anyone else starts, and rounds came out sequential. Here the threads that are on a
    /// core leave within a cache-line transfer of each other. The budget keeps a thread from
    /// spinning long for a participant that has no core; the round then simply overlaps less.
    func startTogether(round: Int) {
        let everyone = (round + 1) * participants
        // relaxed: this only aligns timing; the container was published by the barrier.
        var count = started.increment(ordering: .relaxed)
        var spins = 0
        while count < everyone && spins < Self.startLineSpins {
            ilk_spin_pause()
            spins += 1
            count = started.load(ordering: .relaxed)  // relaxed: timing only, as above
        }
    }

    /// About 10–50 µs of spinning.
    private static let startLineSpins = 1_024

    /// Brief: with more threads than cores (and other processes), spinning longer only
    /// delays the participant that still has to arrive. Tried 4096: rounds got 5x slower
    /// and overlapped no more often.
    private static let spinsBeforeYield = 64
}

/// A small, fast, seeded generator (Steele, Lea and Flood's SplitMix64), so that every run
/// draws the same operation plans.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
