// Interconnect: time every multi-threaded iteration in the same machine state.
//
// Why: on the 2-vCPU development VM, the latency of a cache line passed between the two vCPUs
// switches between two states as the host moves the vCPU threads: about 50-83 ns per round
// trip ("near") and about 320-390 ns ("far"), in episodes of 0.2-2.5 s, far about a quarter of
// the time (150 probes 0.2 s apart: 35 far). A benchmark of a few seconds lands in either, so
// one contender of a group could be timed near and the next far: a 3-5x swing on anything that
// moves lines between threads, which no design change can compensate and which made single-run
// ratios a draw of the host's scheduler (a queue measured 24-34 ns per element near, 80-115 far,
// in consecutive runs of the same binary).
//
// What: before each timed round, `awaitInterconnect()` probes the team's own threads (thread 0
// and helper 1; `ThreadTeam.probeRoundTrip()`) and, while the state is not the one asked for,
// sleeps 2 ms and probes again, for at most 2 s; the benchmark then starts its measurement, so
// neither the probe nor the wait is timed. A probe that found the state asked for stands for
// 10 ms (a few hundred rounds; the states last far longer), so rounds follow each other as
// before and a benchmark's sample count hardly drops. Every contender goes through the same
// gate.
//
// The state is chosen with the environment variable ILK_BENCH_INTERCONNECT:
//   near (default)  time rounds only while a round trip is below 160 ns
//   far             only while it is at or above 160 ns (to see the ratios of the other state)
//   any             no probe at all (the behaviour before this gate)
// A gate that waited 2 s in vain lets the round be timed anyway and counts it; after three such
// waits in a row (6 s without the state: longer than any far episode seen) the team stops
// probing for the rest of its life, and every later round counts as outside the state; the
// team's gates also stop once they have waited 15 s in all. (Before the three-in-a-row rule a
// team caught by the defect below kept waiting 2 s at every round, and since
// package-benchmark's 1 s of rounds counts the gates' waits it ended with one timed round:
// ConditionLock's 4-thread hand-off in one run, 1 sample. Giving up after one vain wait instead
// let ordinary far episodes of over 2 s switch gating off for whole benchmarks.)
// stop() of the team prints the count, with the benchmark's name, if any.
//
// The probe: the other helpers sleep (20 us naps) while thread 0 and helper 1 pass the line, so
// that on an oversubscribed machine the two probing threads get a core each. Known defect: some
// 4-thread teams read about 245 ns on every probe for a whole benchmark (neither near nor far),
// and their gates spend their 15 s; pinning the two probing threads to different CPUs for the
// probe did not cure it (it made such teams more frequent: 10 against 5 in five full runs).

import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The machine state in which multi-threaded rounds are timed (see the file comment).
public enum InterconnectState: String, Sendable, CaseIterable {
    /// A line passes between the two threads and back in under ``threshold``.
    case near
    /// It takes ``threshold`` or more.
    case far
    /// Whatever the state: no probe.
    case any

    /// The round trip that separates `near` from `far`: 160 ns, between the two states measured
    /// on the development VM (50-83 ns and 320-390 ns).
    public static let threshold = Duration.nanoseconds(160)

    /// The state asked for by `ILK_BENCH_INTERCONNECT` (`near` when unset).
    /// - Warning: Any other value traps, naming the variable.
    public static let requested = environmentChoice("ILK_BENCH_INTERCONNECT", default: InterconnectState.near)

    /// Whether a probe's round trip `roundTrip` is in this state.
    public func admits(_ roundTrip: Duration) -> Bool {
        switch self {
        case .near: roundTrip < Self.threshold
        case .far: roundTrip >= Self.threshold
        case .any: true
        }
    }
}

extension ThreadTeam {
    /// Returns once a probe of this team's threads finds the interconnect in `state`, or after
    /// about `patience` of probing and sleeping in vain (counted; see ``roundsOutsideState``).
    /// Returns at once for a team of one thread (nothing crosses between cores) or for `.any`.
    /// Call it from the benchmark closure, then start the measurement, then `round()`.
    /// `naming` names the team in its report (the benchmark's name).
    public func awaitInterconnect(
        _ state: InterconnectState = .requested, patience: Duration = .seconds(2), naming name: String? = nil
    ) {
        guard state != .any, threadCount > 1 else { return }
        if let name, label != name { label = name }
        if let admitted = lastAdmitted, admitted.state == state, ContinuousClock.now - admitted.at < .milliseconds(10) {
            return
        }
        let found = waitForState(patience: patience) {
            guard let roundTrip = probeRoundTrip() else { return false }
            fastestProbe = min(fastestProbe ?? roundTrip, roundTrip)
            return state.admits(roundTrip)
        }
        if found { lastAdmitted = (state, ContinuousClock.now) }
    }

    /// The wait both gates share (this one and `awaitCore`, CoreState.swift): `admits()` probes
    /// until it finds the state, sleeping 2 ms between probes, for at most `patience` and within
    /// what is left of the team's budget; a round whose state was not found is counted.
    /// - Returns: whether the state was found.
    func waitForState(patience: Duration, probe admits: () -> Bool) -> Bool {
        if gaveUp || gateWaitSpent >= Self.gateWaitBudget {
            noteRoundOutsideState()
            return false
        }
        let now = ContinuousClock.now
        let deadline = now + patience
        defer { gateWaitSpent += ContinuousClock.now - now }
        while true {
            if admits() {
                vainWaitsInARow = 0
                return true
            }
            if ContinuousClock.now >= deadline || gateWaitSpent + (ContinuousClock.now - now) >= Self.gateWaitBudget {
                noteRoundOutsideState()
                // Three whole patiences in vain in a row: the state is gone for this team, for
                // longer than a benchmark (the known defect above; far episodes last 0.2-2.5 s).
                // package-benchmark's 1 s counts the gates' waits, so each further vain wait
                // would end the benchmark after one more round: stop probing, and let the rest
                // of the rounds run, counted as outside.
                vainWaitsInARow += 1
                if vainWaitsInARow >= Self.vainWaitsBeforeGivingUp { gaveUp = true }
                return false
            }
            usleep(2_000)
        }
    }

    /// Vain waits in a row after which a team's gates stop probing.
    public static var vainWaitsBeforeGivingUp: Int { 3 }

    /// The most time one team's gates may spend waiting, over all its rounds (warm-up
    /// included, which package-benchmark does not bound by time): past it the team stops
    /// probing, and its later rounds count as outside the state.
    public static var gateWaitBudget: Duration { .seconds(15) }
}
