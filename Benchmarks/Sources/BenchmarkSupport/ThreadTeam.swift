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
//   command     what a generation asks for: a round of work, or a probe (probeRoundTrip(), in
//               which the caller and helper 1 pass a cache line back and forth and the other
//               helpers nap until `probeOver` is set). Stored (relaxed) before the release bump of `generation`,
//               read by the helpers after their acquire load of it.
//
// Placement: with ILK_BENCH_PLACEMENT=spread, a team of two or more threads pins thread i to the
// i-th allowed CPU (modulo their number) from start() to stop(); see Placement.swift.
//
// Waiting spins on the counter and yields the processor after a short while, so parked helpers
// do not starve the threads that do the work on a small, oversubscribed machine. The spin and
// yield happen only between rounds and at their edges, never inside the measured work.
//
// Not for the library: this is harness code (it may use Glibc and Synchronization freely).

import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A fixed group of threads that run a benchmark's work together, one round per benchmark
/// iteration, all started before the measured work begins.
///
/// Create it when registering a benchmark (no thread exists yet), call ``start()`` from the
/// benchmark's setup hook, ``round()`` from its closure and ``stop()`` from its teardown hook.
/// - Warning: `round()` and `stop()` must be called from one thread at a time.
public final class ThreadTeam: @unchecked Sendable {
    /// The number of threads that run each round, the caller included.
    public let threadCount: Int
    /// Whether idle threads nap (see ``init(threads:placement:idleNaps:work:)``).
    public let idleNaps: Bool

    /// How the team's threads are placed on the CPUs.
    public let placement: ThreadPlacement

    private let work: @Sendable (_ threadIndex: Int) -> Void
    private let generation = Atomic<Int>(0)
    private let startedCount = Atomic<Int>(0)
    private let finishedCount = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    private let command = Atomic<Int>(TeamCommand.work)
    private let probeOver = Atomic<Bool>(false)
    /// The line the probe passes between thread 0 and helper 1, apart from the counters above.
    private let probeLine = ProbeLine()
    // Touched only by the controlling thread (start/stop).
    private var helpers: [pthread_t] = []
    #if os(Linux)
    /// The caller's affinity mask before start() pinned it; given back by stop().
    private var callerAffinity: cpu_set_t?
    #endif

    /// The CPU each thread is pinned to, by thread index, from `start()` to `stop()`; empty when
    /// the team is not pinned (one thread, `ILK_BENCH_PLACEMENT=free`, a single allowed CPU, or a
    /// pinning that failed). See Placement.swift.
    public private(set) var pinnedCPUs: [Int32] = []

    /// The number of rounds that have completed since the team was created, so that a
    /// benchmark can check afterwards that every operation it timed really happened.
    public private(set) var completedRounds = 0

    /// Names the team in its messages (the benchmark's name, say).
    public var label = "ThreadTeam"

    /// The rounds timed after `awaitInterconnect` gave up waiting for the state asked for.
    public private(set) var roundsOutsideState = 0

    /// The last probe that admitted a state, and when (`awaitInterconnect` trusts it 10 ms).
    var lastAdmitted: (state: InterconnectState, at: ContinuousClock.Instant)?

    /// The fastest probe `awaitInterconnect` took for this team (reported with the rounds
    /// timed outside the state, to tell a far interconnect from a preempted probe).
    var fastestProbe: Duration?

    /// What `awaitInterconnect` has spent waiting for this team, all rounds together.
    var gateWaitSpent = Duration.zero

    /// The last core state `awaitCore` admitted, and when (it trusts the probe 10 ms).
    var lastCoreAdmitted: (state: CoreState, at: ContinuousClock.Instant)?

    /// The gate whose state the rounds outside it missed, named in the report of `stop()`.
    public internal(set) var gateName = "interconnect state \(InterconnectState.requested.rawValue)"

    /// Whether this team's gates waited their whole patience in vain too often in a row, after
    /// which they stop probing (Interconnect.swift).
    public internal(set) var gaveUp = false

    /// The gates' vain waits since the last probe that found the state asked for.
    var vainWaitsInARow = 0

    /// Counts a round that `awaitInterconnect` could not gate.
    func noteRoundOutsideState() { roundsOutsideState += 1 }

    /// Creates a team of `threads` threads (the caller of ``round()`` is one of them) that run
    /// `work(threadIndex)` once per round, with `threadIndex` in `0..<threads`.
    /// - Warning: `threads` below 1 traps.
    /// - Parameters:
    ///   - threads: how many threads, the caller included.
    ///   - placement: how to place the threads on the CPUs (Placement.swift); by default what
    ///     `ILK_BENCH_PLACEMENT` asks for.
    ///   - idleNaps: whether a thread with nothing to do (a helper between rounds or done with
    ///     its share, the caller waiting for the helpers) naps once its spin and 64 yields have
    ///     not ended the wait, instead of yielding on (see ``wait(naps:until:)``).
    ///   - work: the round's work, called with the thread's index.
    public init(
        threads: Int, placement: ThreadPlacement = .requested, idleNaps: Bool = false,
        work: @escaping @Sendable (_ threadIndex: Int) -> Void
    ) {
        precondition(threads >= 1, "ThreadTeam: a team needs at least one thread, got \(threads)")
        self.threadCount = threads
        self.placement = placement
        self.idleNaps = idleNaps
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
        pinCaller()
        for index in 1..<threadCount {
            let cpu: Int32? = pinnedCPUs.isEmpty ? nil : pinnedCPUs[index]
            let context = Unmanaged.passRetained(
                HelperContext(team: self, index: index, generation: firstGeneration, cpu: cpu)
            ).toOpaque()
            var thread = pthread_t()
            let result = pthread_create(
                &thread, nil,
                { raw in
                    let context = Unmanaged<HelperContext>.fromOpaque(raw!).takeRetainedValue()
                    #if os(Linux)
                    if let cpu = context.cpu {
                        let error = pinCurrentThread(to: cpu)
                        if error != 0 { reportPinningFailure(error) }
                    }
                    #endif
                    context.team.helperLoop(index: context.index, seenGeneration: context.generation)
                    return nil
                }, context)
            precondition(result == 0, "ThreadTeam: pthread_create failed: \(String(cString: strerror(result)))")
            helpers.append(thread)
        }
    }

    /// Pins the caller (thread 0) when the team is to be spread, and records the CPU map.
    private func pinCaller() {
        pinnedCPUs = []
        #if os(Linux)
        guard threadCount > 1, placement == .spread else { return }
        let cpus = allowedCPUs()
        guard cpus.count > 1 else { return }
        let saved = currentThreadAffinity()
        let error = pinCurrentThread(to: spreadCPU(forThread: 0, of: cpus))
        guard error == 0 else {
            reportPinningFailure(error)
            return
        }
        callerAffinity = saved
        pinnedCPUs = (0..<threadCount).map { spreadCPU(forThread: $0, of: cpus) }
        #endif
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
        runGeneration(TeamCommand.work) { work(0) }
        completedRounds += 1
    }

    /// Measures how long a cache line takes to go from the caller to helper 1 and back, with
    /// both running: the minimum, over up to 8 batches of 16 round trips, of a batch's mean (the
    /// minimum discards a batch in which a thread was preempted). Runs no work and counts no
    /// round. `nil` for a team of one thread, and when the two threads were not both running
    /// for a whole batch (see below).
    ///
    /// Bounded: a round trip that has waited `ProbeLine.patience` for the partner ends the
    /// probe (the partner is not running; what the probe measures does not exist then), and no
    /// batch starts after `ProbeLine.budget`. Quiet, the 8 batches take 13-50 us. Unbounded,
    /// beside a load, each of the 128 round trips waited whenever the partner was not running,
    /// and the two threads spun for up to tens of milliseconds per run: `perf` of an interleaved
    /// stack run beside the neighbour put 80 % of the process's samples in the probe's two
    /// sides, a load of the harness's own on the cores the measured runs share with the
    /// neighbour.
    /// - Warning: Like `round()`, only between `start()` and `stop()`.
    public func probeRoundTrip() -> Duration? {
        guard threadCount > 1 else { return nil }
        precondition(
            helpers.count == threadCount - 1, "ThreadTeam: probeRoundTrip() called before start() or after stop()")
        var best: Duration?
        probeOver.store(false, ordering: .relaxed)  // published by the generation's release bump
        runGeneration(TeamCommand.probe) {
            defer { probeOver.store(true, ordering: .releasing) }  // pairs with the helpers' acquire
            var value = 0
            let deadline = ContinuousClock.now + ProbeLine.budget
            probing: for _ in 0..<ProbeLine.batches {
                let start = ContinuousClock.now
                for _ in 0..<ProbeLine.roundTripsPerBatch {
                    // Relaxed: the line's value is the whole message; nothing else is published.
                    probeLine.word.store(value + 1, ordering: .relaxed)
                    var spins = 0
                    while probeLine.word.load(ordering: .relaxed) != value + 2 {
                        spins &+= 1
                        if spins & 255 == 0 && ContinuousClock.now - start > ProbeLine.patience { break probing }
                    }
                    value += 2
                }
                let end = ContinuousClock.now
                best = min(best ?? .seconds(1), (end - start) / ProbeLine.roundTripsPerBatch)
                if end > deadline { break }
            }
            // The end mark: the helper, waiting for the next odd value or about to answer the
            // last one (a compare-and-swap that then fails), stops. An exchange, so that it
            // replaces the helper's answer if that came first. Relaxed, as above.
            _ = probeLine.word.exchange(ProbeLine.over, ordering: .relaxed)
        }
        // The helper has seen the end mark and returned; start the next probe from 0. Relaxed: the
        // next generation's release bump publishes it.
        probeLine.word.store(0, ordering: .relaxed)
        return best
    }

    /// Starts a generation asking for `what`, runs `callerShare` once every helper has
    /// begun, and returns when every helper has finished.
    private func runGeneration(_ what: Int, _ callerShare: () -> Void) {
        let helperCount = threadCount - 1
        // Relaxed: published to the helpers by the release increment of `generation` below.
        startedCount.store(0, ordering: .relaxed)
        finishedCount.store(0, ordering: .relaxed)
        command.store(what, ordering: .relaxed)
        // Release: pairs with the helpers' acquire load of `generation`.
        generation.wrappingAdd(1, ordering: .releasing)
        // Acquire: pairs with each helper's release increment of `startedCount`.
        Self.wait(naps: idleNaps) { startedCount.load(ordering: .acquiring) == helperCount }
        callerShare()
        // Acquire: pairs with each helper's release increment of `finishedCount`, so the
        // helpers' work happens before this returns.
        Self.wait(naps: idleNaps) { finishedCount.load(ordering: .acquiring) == helperCount }
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
        #if os(Linux)
        if let saved = callerAffinity { setCurrentThreadAffinity(saved) }
        callerAffinity = nil
        #endif
        // The map is kept (a test reads it after stop()); the next start() sets it again.
        if roundsOutsideState > 0 {
            let line =
                "\(label): \(roundsOutsideState) of \(completedRounds) rounds were timed outside the \(gateName) (no such state within 2 s\(gaveUp ? " three times in a row, after which the gates stopped probing" : gateWaitSpent >= ThreadTeam.gateWaitBudget ? ", then the gates' 15 s were spent" : ""); fastest probe \(fastestProbe.map { "\($0)" } ?? "none")\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
        }
    }

    private func helperLoop(index: Int, seenGeneration: Int) {
        var seenGeneration = seenGeneration
        while true {
            var current = seenGeneration
            Self.wait(naps: idleNaps) {
                // Acquire: pairs with the release increment in round() and stop().
                current = generation.load(ordering: .acquiring)
                return current != seenGeneration
            }
            seenGeneration = current
            // Acquire: pairs with the release store in stop().
            if stopping.load(ordering: .acquiring) { return }
            startedCount.wrappingAdd(1, ordering: .releasing)  // Release: pairs with round()'s acquire wait.
            // Relaxed: stored before the release bump of `generation` this thread acquired.
            if command.load(ordering: .relaxed) == TeamCommand.work {
                work(index)
            } else if index == 1 {
                answerProbe()
            } else {
                // Off the processors until the probe is over, so that on an oversubscribed
                // machine the two probing threads each get a core of their own. Acquire:
                // pairs with the release store in probeRoundTrip(); orders nothing else.
                while !probeOver.load(ordering: .acquiring) { usleep(20) }
            }
            finishedCount.wrappingAdd(1, ordering: .releasing)  // Release: pairs with round()'s acquire wait.
        }
    }

    /// Helper 1's side of `probeRoundTrip()`: answers each odd value with the next one, until
    /// the caller's end mark. The answer is a compare-and-swap from the odd value, so that it
    /// never overwrites a mark the caller wrote while giving up on this round trip.
    private func answerProbe() {
        var value = 1
        while true {
            // Relaxed: see probeRoundTrip().
            var seen = probeLine.word.load(ordering: .relaxed)
            while seen != value && seen != ProbeLine.over { seen = probeLine.word.load(ordering: .relaxed) }
            if seen == ProbeLine.over { return }
            guard probeLine.word.compareExchange(expected: value, desired: value + 1, ordering: .relaxed).exchanged
            else { return }  // the end mark came first
            value += 2
        }
    }

    /// Spins on `condition`, yielding the processor once the spin has lasted a while; with
    /// `naps`, sleeping 50 us at a time once 64 yields have not ended the wait either.
    ///
    /// Why naps: beside busy loops at the same priority, a thread that yields on stays runnable
    /// and keeps its share of the processors, which it takes from the team's threads still at
    /// work. A 1-producer, 1-consumer queue whose producer finishes first then measures the
    /// producer's yield loop as much as the queue (`perf`: 25 % of the samples of the
    /// interleaved LIFO rows in the helpers' wait). Package-benchmark's rounds of a few
    /// microseconds keep the yield (a nap's wake-up would be most of such a round); the
    /// interleaved runner's rounds of tens of milliseconds nap.
    @inline(__always)
    private static func wait(naps: Bool, until condition: () -> Bool) {
        var spins = 0
        while !condition() {
            spins &+= 1
            if spins > 2_000 {
                if naps && spins > 2_064 { usleep(50) } else { sched_yield() }
            }
        }
    }
}

/// What a helper thread receives from pthread_create.
private final class HelperContext {
    let team: ThreadTeam
    let index: Int
    let generation: Int
    /// The CPU to pin the helper to, if the team is pinned.
    let cpu: Int32?

    init(team: ThreadTeam, index: Int, generation: Int, cpu: Int32?) {
        self.team = team
        self.index = index
        self.generation = generation
        self.cpu = cpu
    }
}

/// What a generation of the team asks the helpers for.
private enum TeamCommand {
    static let work = 0
    static let probe = 1
}

/// One atomic word alone on its (128-byte) line pair, for `probeRoundTrip()`.
private final class ProbeLine: @unchecked Sendable {
    static let batches = 8
    static let roundTripsPerBatch = 16
    /// The time after which no further batch starts (see `ThreadTeam.probeRoundTrip()`).
    static let budget = Duration.milliseconds(1)
    /// The longest a batch may wait for the partner before the probe gives up (a quiet batch
    /// takes 2-7 us).
    static let patience = Duration.microseconds(100)
    /// The value that ends helper 1's answers.
    static let over = -1
    private let before: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
    let word = Atomic<Int>(0)
    private let after: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
}
