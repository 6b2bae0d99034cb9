// CoreState: time every single-thread iteration in the same state of the CPU it runs on.
//
// Why: on the 2-vCPU development VM, the cost of a locked read-modify-write on a line in the
// thread's own cache switches between two states, as the host's load on the physical core
// under a vCPU comes and goes: 3.4 ns per `lock add` + `lock sub` pair on an owned line
// ("quick") or 4.2-4.6 ns ("slow"), in episodes of a fraction of a second to several seconds
// (a probe of 500 pairs before each of 40 rounds, 20 ms apart, in eight processes in a row:
// three quick throughout, four slow throughout, one switching after its ninth round). Every
// uncontended lock+unlock is two such operations, so one benchmark process ran 30-45 % slower
// than the next: Interlock's ReadWriteLock read lock+unlock read 3.35 ns in five of eight runs
// of the same binary and 4.64-4.97 ns in the three others, Concurrency Kit's 3.37 ns in six of
// eight and 3.58-4.59 in two; whichever contender drew the slow state lost its group.
//
// What: before each timed round of a one-thread team, `awaitSteadyState()` probes the CPU
// (`coreProbe()`: the best of three passes of 500 pairs on a word of the harness's own) and,
// while it is not in the state asked for, sleeps 2 ms and probes again, for at most 2 s; the
// measurement starts afterwards, so neither probe nor wait is timed. Like the interconnect
// gate (Interconnect.swift) a probe that admitted the state stands for 10 ms, a team's gates
// wait at most 15 s in all, and every contender goes through the same gate. Teams of two
// threads or more pass the interconnect gate instead.
//
// The state is chosen with the environment variable ILK_BENCH_CORE:
//   quick (default)  time rounds only while a pair costs under 3.9 ns
//   slow             only while it costs 3.9 ns or more
//   any              no probe at all (the behaviour before this gate)

import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The CPU state in which single-thread rounds are timed (see the file comment).
public enum CoreState: String, Sendable, CaseIterable {
    /// A `lock add` + `lock sub` pair on an owned line costs under ``threshold``.
    case quick
    /// It costs ``threshold`` or more.
    case slow
    /// Whatever the state: no probe.
    case any

    /// The pair cost that separates `quick` from `slow`: 3.9 ns, between the two states
    /// measured on the development VM (3.4 ns and 4.2-4.6 ns).
    public static let threshold = Duration.nanoseconds(39) / 10

    /// The state asked for by `ILK_BENCH_CORE` (`quick` when unset).
    /// - Warning: Any other value traps, naming the variable.
    public static let requested = environmentChoice("ILK_BENCH_CORE", default: CoreState.quick)

    /// Whether a probe's cost per pair `pairCost` is in this state.
    public func admits(_ pairCost: Duration) -> Bool {
        switch self {
        case .quick: pairCost < Self.threshold
        case .slow: pairCost >= Self.threshold
        case .any: true
        }
    }
}

/// The word the core probe adds to and subtracts from. No benchmark touches it, and only
/// single-thread teams probe (while no other thread of theirs runs), so after the first pass
/// its line stays in the probing CPU's cache: the probe times the instructions, not a transfer.
final class CoreProbeWord: Sendable {
    let value = Atomic<Int>(0)
    static let shared = CoreProbeWord()
}

/// The cost of one `lock add` + `lock sub` pair on the calling CPU now: the best of three passes
/// of 500 pairs (about 2 us each), so that an interrupt in one pass does not decide.
@inline(never)
public func coreProbe() -> Duration {
    let word = CoreProbeWord.shared
    var best = Duration.seconds(1)
    for _ in 0..<3 {
        let start = ContinuousClock.now
        for _ in 0..<500 {
            // Sequentially consistent, as the locks' own read-modify-writes: `lock add`, `lock sub`.
            word.value.wrappingAdd(1, ordering: .sequentiallyConsistent)
            word.value.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        }
        best = min(best, ContinuousClock.now - start)
    }
    return best / 500
}

extension ThreadTeam {
    /// Returns once this team's threads are in the machine state asked for: the interconnect
    /// state (``awaitInterconnect(_:patience:naming:)``) for a team of two threads or more, the
    /// core state (``awaitCore(_:patience:naming:)``) for a team of one. Call it from the
    /// benchmark closure, then start the measurement, then `round()`.
    public func awaitSteadyState(naming name: String? = nil) {
        if threadCount > 1 {
            awaitInterconnect(naming: name)
        } else {
            awaitCore(naming: name)
        }
    }

    /// Returns once a probe of the calling CPU finds it in `state`, or after about `patience`
    /// of probing and sleeping in vain (counted; see ``roundsOutsideState``). Returns at once
    /// for `.any`. For a team of one thread, whose caller is the thread that runs the round.
    public func awaitCore(
        _ state: CoreState = .requested, patience: Duration = .seconds(2), naming name: String? = nil
    ) {
        gateName = "core state \(state.rawValue)"
        guard state != .any else { return }
        if let name, label != name { label = name }
        if let admitted = lastCoreAdmitted, admitted.state == state,
            ContinuousClock.now - admitted.at < .milliseconds(10)
        {
            return
        }
        let found = waitForState(patience: patience) {
            let pairCost = coreProbe()
            fastestProbe = min(fastestProbe ?? pairCost, pairCost)
            return state.admits(pairCost)
        }
        if found { lastCoreAdmitted = (state, ContinuousClock.now) }
    }
}
