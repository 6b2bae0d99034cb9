// ThreadTeam: N threads that run one round of a benchmark's work together, again and again.
//
// What it is for: a multi-threaded benchmark iteration ("2 threads hammering the same word")
// must not pay for creating threads, and its threads must start together, or the first one
// runs uncontended while the other is still being scheduled. The team creates its helper
// threads once (`start()`, from a benchmark's setup hook), parks them between rounds, and
// each `round()` releases them, waits until every helper has begun, runs the calling thread's
// share, and returns when every helper has finished. The caller is thread 0; helpers are
// 1..<threadCount. A team of one thread runs `work(0)` on the caller and creates no thread.
//
// Protocol (three counters and a flag, all in this object):
//   generation  bumped by round() (release) to start a round; helpers wait for it to change
//               (acquire), so the resets of `started`/`finished` made before the bump are seen.
//   started     each helper adds 1 (release) before its work; the caller waits (acquire) until
//               it equals the number of helpers, then runs its own share: all threads are
//               running when the caller begins.
//   finished    each helper adds 1 (release) after its work; the caller waits (acquire) until it
//               equals the number of helpers, so the round's effects are visible when round()
//               returns.
//   stopping    set (release) by stop() before a final generation bump; a helper that sees the
//               new generation reads it (acquire) and exits; stop() then joins every helper.
//
// Waiting spins on the counter and yields the processor after a short while, so parked helpers
// do not starve the threads that do the work on a small, oversubscribed machine. The spin and
// yield happen only between rounds and at their edges, never inside the measured work.
//
// Not for the library: this is harness code (it may use Glibc and Synchronization freely).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A fixed group of threads that run a benchmark's work together, one round per benchmark
/// iteration, all started before the measured work begins.
///
/// Create it when registering a benchmark (no thread exists yet), call ``start()`` from the
/// benchmark's setup hook, ``round()`` from its closure and ``stop()`` from its teardown hook.
/// - Warning: `round()` and `stop()` must be called from one thread at a time.
public final class ThreadTeam: @unchecked Sendable {
    /// The number of threads that run each round, the caller included.
    public let threadCount: Int

    private let work: @Sendable (_ threadIndex: Int) -> Void
    private let generation = Atomic<Int>(0)
    private let startedCount = Atomic<Int>(0)
    private let finishedCount = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    // Touched only by the controlling thread (start/stop).
    private var helpers: [pthread_t] = []

    /// The number of rounds that have completed since the team was created, so that a
    /// benchmark can check afterwards that every operation it timed really happened.
    public private(set) var completedRounds = 0

    /// Creates a team of `threads` threads (the caller of ``round()`` is one of them) that run
    /// `work(threadIndex)` once per round, with `threadIndex` in `0..<threads`.
    /// - Warning: `threads` below 1 traps.
    public init(threads: Int, work: @escaping @Sendable (_ threadIndex: Int) -> Void) {
        precondition(threads >= 1, "ThreadTeam: a team needs at least one thread, got \(threads)")
        self.threadCount = threads
        self.work = work
    }

    deinit {
        precondition(helpers.isEmpty, "ThreadTeam: deinitialized while its helper threads run; call stop() first")
    }

    /// Creates the helper threads and parks them until the first round.
    /// - Warning: Starting a started team traps; a failure of `pthread_create` traps with its error.
    public func start() {
        precondition(helpers.isEmpty, "ThreadTeam: start() called on a team that is already started")
        stopping.store(false, ordering: .relaxed)  // published by the thread creation below
        // Read here, not by the helper: a round() that runs before a new helper is scheduled
        // must still be seen by it as a new generation.
        let firstGeneration = generation.load(ordering: .relaxed)  // only this thread writes it
        for index in 1..<threadCount {
            let context = Unmanaged.passRetained(
                HelperContext(team: self, index: index, generation: firstGeneration)
            ).toOpaque()
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { raw in
                let context = Unmanaged<HelperContext>.fromOpaque(raw!).takeRetainedValue()
                context.team.helperLoop(index: context.index, seenGeneration: context.generation)
                return nil
            }, context)
            precondition(result == 0, "ThreadTeam: pthread_create failed: \(String(cString: strerror(result)))")
            helpers.append(thread)
        }
    }

    /// Runs one round: every helper and the caller run their share of the work, all started
    /// before the caller begins its own; returns when all of them have finished.
    public func round() {
        let helperCount = threadCount - 1
        if helperCount == 0 {
            work(0)
            completedRounds += 1
            return
        }
        precondition(helpers.count == helperCount, "ThreadTeam: round() called before start() or after stop()")
        // Relaxed: published to the helpers by the release increment of `generation` below.
        startedCount.store(0, ordering: .relaxed)
        finishedCount.store(0, ordering: .relaxed)
        // Release: pairs with the helpers' acquire load of `generation`.
        generation.wrappingAdd(1, ordering: .releasing)
        // Acquire: pairs with each helper's release increment of `startedCount`.
        Self.wait { startedCount.load(ordering: .acquiring) == helperCount }
        work(0)
        // Acquire: pairs with each helper's release increment of `finishedCount`, so the
        // helpers' work happens before round() returns.
        Self.wait { finishedCount.load(ordering: .acquiring) == helperCount }
        completedRounds += 1
    }

    /// Stops and joins the helper threads. The team can be started again afterwards.
    public func stop() {
        guard !helpers.isEmpty else { return }
        // Release: the helpers read `stopping` after an acquire load of the new generation.
        stopping.store(true, ordering: .releasing)
        generation.wrappingAdd(1, ordering: .releasing)
        for thread in helpers {
            let result = pthread_join(thread, nil)
            precondition(result == 0, "ThreadTeam: pthread_join failed: \(String(cString: strerror(result)))")
        }
        helpers.removeAll()
    }

    private func helperLoop(index: Int, seenGeneration: Int) {
        var seenGeneration = seenGeneration
        while true {
            var current = seenGeneration
            Self.wait {
                // Acquire: pairs with the release increment in round() and stop().
                current = generation.load(ordering: .acquiring)
                return current != seenGeneration
            }
            seenGeneration = current
            // Acquire: pairs with the release store in stop().
            if stopping.load(ordering: .acquiring) { return }
            startedCount.wrappingAdd(1, ordering: .releasing)  // Release: pairs with round()'s acquire wait.
            work(index)
            finishedCount.wrappingAdd(1, ordering: .releasing)  // Release: pairs with round()'s acquire wait.
        }
    }

    /// Spins on `condition`, yielding the processor once the spin has lasted a while.
    @inline(__always)
    private static func wait(until condition: () -> Bool) {
        var spins = 0
        while !condition() {
            spins &+= 1
            if spins > 2_000 { sched_yield() }
        }
    }
}

/// What a helper thread receives from pthread_create.
private final class HelperContext {
    let team: ThreadTeam
    let index: Int
    let generation: Int

    init(team: ThreadTeam, index: Int, generation: Int) {
        self.team = team
        self.index = index
        self.generation = generation
    }
}
