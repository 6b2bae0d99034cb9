// ThreadTeam's contract: every thread runs its share exactly once per round, all shares of a
// round run at the same time, a helper's writes are visible when round() returns, and a team
// can be stopped and started again. Sizes shrink under ThreadSanitizer.

import Synchronization
import Testing

@testable import BenchmarkSupport

#if canImport(Glibc)
import Glibc
#endif

/// Whether ThreadSanitizer's runtime is linked in (it defines `__tsan_init`).
private let underThreadSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

/// Fewer rounds under ThreadSanitizer, which slows every atomic access by an order of magnitude.
private let rounds = underThreadSanitizer ? 200 : 2_000

/// Per-thread plain (non-atomic) slots: each thread writes only its own, the test reads them
/// after round() returns, so ThreadSanitizer checks the team's happens-before edges.
private final class Slots: @unchecked Sendable {
    let values: UnsafeMutableBufferPointer<Int>

    init(count: Int) {
        values = .allocate(capacity: count)
        values.initialize(repeating: 0)
    }

    deinit { values.deallocate() }
}

@Suite("ThreadTeam")
struct ThreadTeamTests {
    @Test("a team of one runs the work on the caller, once per round, without threads")
    func singleThread() {
        let caller = pthread_self()
        let slots = Slots(count: 1)
        let ranOnCaller = Atomic<Bool>(true)
        let team = ThreadTeam(threads: 1) { index in
            if pthread_equal(pthread_self(), caller) == 0 { ranOnCaller.store(false, ordering: .relaxed) }
            slots.values[index] += 1
        }
        team.start()
        for _ in 0..<10 { team.round() }
        team.stop()
        let alwaysOnCaller = ranOnCaller.load(ordering: .relaxed)
        #expect(slots.values[0] == 10)
        #expect(alwaysOnCaller)
    }

    @Test("every thread runs its share exactly once per round, visible when round() returns", arguments: [2, 3])
    func everyShareOncePerRound(threads: Int) {
        let slots = Slots(count: threads)
        let team = ThreadTeam(threads: threads) { index in
            // Helpers finish after the caller, so a round() that returned before its helpers
            // finished would be seen (and reported by ThreadSanitizer as a race).
            if index != 0 {
                for _ in 0..<5 { sched_yield() }
            }
            slots.values[index] += 1
        }
        team.start()
        for round in 1...rounds {
            team.round()
            let counts = Array(slots.values)
            #expect(counts == Array(repeating: round, count: threads), "after round \(round)")
            if counts != Array(repeating: round, count: threads) { break }
        }
        team.stop()
    }

    @Test("with idle naps, a caller that waits long enough to nap returns only when every helper has finished")
    func idleNapsWaitForEveryShare() {
        // The helpers' shares outlast the caller's spin and 64 yields (2 ms), so the caller's
        // wait for them reaches its naps; between rounds the helpers nap for the next one.
        let threads = 3
        let slots = Slots(count: threads)
        let team = ThreadTeam(threads: threads, idleNaps: true) { index in
            if index != 0 { usleep(2_000) }
            slots.values[index] += 1
        }
        #expect(team.idleNaps)
        team.start()
        for round in 1...10 {
            team.round()
            let counts = Array(slots.values)
            #expect(counts == Array(repeating: round, count: threads), "after round \(round)")
            if counts != Array(repeating: round, count: threads) { break }
            usleep(3_000)  // the helpers, idle, reach their naps before the next round
        }
        team.stop()
        #expect(team.completedRounds == 10)
    }

    @Test("the shares of a round run at the same time")
    func sharesRunConcurrently() {
        // Each share waits (with a deadline) until every share of the round has arrived: this
        // completes only if the team runs them concurrently rather than one after another.
        let threads = 3
        let arrived = Atomic<Int>(0)
        let timedOut = Atomic<Int>(0)
        let team = ThreadTeam(threads: threads) { _ in
            let target = arrived.add(1, ordering: .relaxed).newValue
            let roundTarget = ((target - 1) / threads + 1) * threads
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while arrived.load(ordering: .relaxed) < roundTarget {
                if ContinuousClock.now > deadline {
                    timedOut.add(1, ordering: .relaxed)
                    return
                }
                sched_yield()
            }
        }
        team.start()
        for _ in 0..<20 { team.round() }
        team.stop()
        let timeouts = timedOut.load(ordering: .relaxed)
        let arrivals = arrived.load(ordering: .relaxed)
        #expect(timeouts == 0)
        #expect(arrivals == 20 * threads)
    }

    @Test("a stopped team can be started again, and counts every completed round")
    func restart() {
        let slots = Slots(count: 2)
        let team = ThreadTeam(threads: 2) { index in slots.values[index] += 1 }
        for _ in 0..<3 {
            team.start()
            team.round()
            team.stop()
        }
        team.stop()  // stopping a stopped team does nothing
        #expect(Array(slots.values) == [3, 3])
        #expect(team.completedRounds == 3)
    }

    @Test("a probe runs no work, counts no round, and measures a positive round trip", arguments: [2, 4])
    func probe(threads: Int) {
        let slots = Slots(count: threads)
        let team = ThreadTeam(threads: threads) { index in slots.values[index] += 1 }
        team.start()
        defer { team.stop() }
        for _ in 0..<3 {
            // A probe gives up (nil) when the pair was not running together, which other tests
            // running in parallel can cause: a few tries.
            let roundTrip = (0..<100).lazy.compactMap { _ in team.probeRoundTrip() }.first
            #expect(roundTrip.map { $0 > .zero && $0 < .seconds(1) } == true)
        }
        #expect(Array(slots.values) == Array(repeating: 0, count: threads))
        #expect(team.completedRounds == 0)
        // Probes and rounds interleave: the next probe starts from a fresh line.
        team.round()
        #expect((0..<100).contains { _ in team.probeRoundTrip() != nil })
        team.round()
        #expect(Array(slots.values) == Array(repeating: 2, count: threads))
        #expect(team.completedRounds == 2)
    }

    @Test("a probe whose two threads cannot run at once gives up with nil, and the team works on")
    func probeWithoutPartner() throws {
        let saved = try #require(currentThreadAffinity())
        // One CPU for the caller, and so for the helper it starts (threads inherit the mask).
        let cpu = try #require(allowedCPUs().first)
        try #require(pinCurrentThread(to: cpu) == 0)
        defer { _ = setCurrentThreadAffinity(saved) }
        let slots = Slots(count: 2)
        let team = ThreadTeam(threads: 2) { index in slots.values[index] += 1 }
        team.start()
        defer { team.stop() }
        #expect(team.pinnedCPUs.isEmpty)
        // Each round trip needs the other thread to run, so a batch outlasts the probe's
        // patience whatever the scheduler does; before the bound, each probe spun its 128
        // round trips a time slice at a time.
        for _ in 0..<3 { #expect(team.probeRoundTrip() == nil) }
        team.round()
        #expect(Array(slots.values) == [1, 1])
    }

    @Test("a team of one has nothing to probe; the gate returns at once")
    func probeSingleThread() {
        let team = ThreadTeam(threads: 1) { _ in }
        #expect(team.probeRoundTrip() == nil)
        team.awaitInterconnect(.far, patience: .seconds(60))  // would wait a minute if it probed
        #expect(team.roundsOutsideState == 0)
    }

    @Test("the gate waits at most its patience, then counts the round as outside the state")
    func gatePatience() {
        let team = ThreadTeam(threads: 2) { _ in }
        team.start()
        defer { team.stop() }
        // No round trip is both near and far: asking for each in turn with no patience, at
        // least one of the two gives up and counts; neither waits long.
        let start = ContinuousClock.now
        team.awaitInterconnect(.near, patience: .zero)
        team.awaitInterconnect(.far, patience: .zero)
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(team.roundsOutsideState >= 1 && team.roundsOutsideState <= 2)
        team.awaitInterconnect(.any, patience: .zero)
        #expect(team.roundsOutsideState <= 2)
    }

    @Test("the states split round trips at the threshold")
    func states() {
        #expect(InterconnectState.near.admits(.nanoseconds(60)))
        #expect(!InterconnectState.near.admits(InterconnectState.threshold))
        #expect(InterconnectState.far.admits(.nanoseconds(350)))
        #expect(!InterconnectState.far.admits(.nanoseconds(60)))
        #expect(InterconnectState.any.admits(.nanoseconds(60)) && InterconnectState.any.admits(.seconds(1)))
    }

    @Test("after three whole patiences in vain in a row, the gates stop probing: later rounds count at once")
    func gateGivesUp() {
        let team = ThreadTeam(threads: 1) { _ in }
        // A pair cost is either quick or slow: asking for quick, then slow, at least one of the
        // two waits in vain (a zero patience); three such pairs make at least three vain waits,
        // and the streak survives an admission only if vain waits still follow it: asking for
        // each state with a zero patience until three vain waits come in a row gives up.
        var calls = 0
        while !team.gaveUp && calls < 1_000 {
            team.awaitCore(calls % 2 == 0 ? .quick : .slow, patience: .zero)
            calls += 1
        }
        #expect(team.gaveUp)
        let counted = team.roundsOutsideState
        #expect(counted >= ThreadTeam.vainWaitsBeforeGivingUp)
        let start = ContinuousClock.now
        team.awaitCore(.quick, patience: .seconds(60))  // would probe, and could wait, if it had not given up
        team.awaitCore(.slow, patience: .seconds(60))
        #expect(ContinuousClock.now - start < .seconds(10))
        // The state that was admitted may still stand (a probe is trusted 10 ms); the other
        // returns at once, counted.
        #expect(team.roundsOutsideState >= counted + 1)
    }

    @Test("the core probe measures a positive pair cost, well under a microsecond")
    func coreProbeCost() {
        let cost = coreProbe()
        #expect(cost > .zero)
        #expect(cost < .microseconds(1))  // 500 pairs of a few ns each; a millisecond would be a broken probe
    }

    @Test("the core gate waits at most its patience, then counts the round as outside the state")
    func coreGatePatience() {
        let team = ThreadTeam(threads: 1) { _ in }
        // No pair cost is both quick and slow: asking for each in turn with no patience, at
        // least one of the two gives up and counts; neither waits long.
        let start = ContinuousClock.now
        team.awaitCore(.quick, patience: .zero)
        team.awaitCore(.slow, patience: .zero)
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(team.roundsOutsideState >= 1 && team.roundsOutsideState <= 2)
        team.awaitCore(.any, patience: .zero)
        #expect(team.roundsOutsideState <= 2)
    }

    @Test("awaitSteadyState gates a team of one on the core, a larger team on the interconnect")
    func steadyStateDispatch() {
        // Asked for through the environment's defaults (quick, near); a gate that gives up
        // counts the round, so only the kind of gate is observable: its report names it.
        let solo = ThreadTeam(threads: 1) { _ in }
        solo.awaitSteadyState()
        #expect(solo.gateName.hasPrefix("core state"))
        let pair = ThreadTeam(threads: 2) { _ in }
        pair.start()
        defer { pair.stop() }
        pair.awaitSteadyState()
        #expect(pair.gateName.hasPrefix("interconnect state"))
    }

    @Test("the core states split pair costs at the threshold")
    func coreStates() {
        #expect(CoreState.quick.admits(.nanoseconds(3)))
        #expect(!CoreState.quick.admits(CoreState.threshold))
        #expect(CoreState.slow.admits(.nanoseconds(5)))
        #expect(!CoreState.slow.admits(.nanoseconds(3)))
        #expect(CoreState.any.admits(.nanoseconds(3)) && CoreState.any.admits(.seconds(1)))
    }

    #if os(Linux)
    /// Placement.swift: thread i of a spread team runs on the i-th allowed CPU (modulo their
    /// number), and the caller gets its own affinity back at stop(); a free team pins nothing.
    /// The pinning needs two allowed CPUs.
    @Test(
        "a spread team pins thread i to the i-th allowed CPU and gives the caller its mask back; a free one pins nothing",
        arguments: [(2, ThreadPlacement.spread), (4, .spread), (4, .free)])
    func placement(threads: Int, placement: ThreadPlacement) {
        let before = currentThreadAffinity()
        #expect(before != nil)
        let slots = Slots(count: threads)
        let team = ThreadTeam(threads: threads, placement: placement) { index in slots.values[index] = Int(currentCPU())
        }
        team.start()
        for _ in 0..<10 { team.round() }
        team.stop()
        let cpus = allowedCPUs()
        if placement == .spread && cpus.count > 1 {
            let expected = (0..<threads).map { cpus[$0 % cpus.count] }
            #expect(team.pinnedCPUs == expected)
            #expect(Array(slots.values).map(Int32.init) == expected, "each thread ran on its CPU")
        } else {
            #expect(team.pinnedCPUs.isEmpty)
        }
        var after = currentThreadAffinity()
        var saved = before
        let same = withUnsafeBytes(of: &saved) { b in withUnsafeBytes(of: &after) { a in b.elementsEqual(a) } }
        #expect(same, "the caller's affinity mask is given back at stop()")
    }
    #endif

    @Test("round() before start() traps with a message naming ThreadTeam and the misuse")
    func roundBeforeStartMessage() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let team = ThreadTeam(threads: 2) { _ in }
            team.round()
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("ThreadTeam: round() called before start() or after stop()"))
    }
}
