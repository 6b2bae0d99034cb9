// Stress workload `atomic-lazy-reference-one-winner`: every thread builds its own instance and
// offers it to a fresh AtomicLazyReference each round (lockstep rounds, OnceWorkloadSupport.swift)
// with `storeIfNil`; half of the time it first calls `load()`. The instances count their
// deinitializations, so the reference counting of winners and losers is checked exactly.
//
// Invariants checked at the end of each round:
//   - exactly one caller got its own instance back, and every caller got the same instance
//     (also every `load()` that returned one), with its initializer's plain payload intact
//     (only the reference's release/acquire orders it; ThreadSanitizer reports it otherwise);
//   - `load()` now returns the winner;
//   - exactly threads - 1 instances (the losers) were deinitialized: the winner is alive, held
//     by the reference, and no loser leaked;
//   - the previous round's winner was deinitialized with its reference (its count reads threads).
// And at the end: the last round's winner goes with its reference; every thread took part in
// every round.

import Interlock

extension Workload {
    /// `atomic-lazy-reference-one-winner`; see the file comment.
    static let atomicLazyReferenceOneWinner = Workload(
        name: "atomic-lazy-reference-one-winner",
        summary:
            "AtomicLazyReference: fresh object per lockstep round, every thread offers its instance; one winner for all, exact loser and winner deinits",
        latencySampleInterval: 1
    ) { context in
        let threads = context.threadCount
        let last = ReferenceLastRound()
        // The first round is not held in a local: only the barrier (and the workers) may keep a
        // round alive, or its winner would outlive its round.
        let lockstep = LockstepRounds(
            parties: threads, first: ReferenceRound(number: 0, threads: threads, previousDeinits: nil)
        ) { finished in
            finished.check(threads: threads, context)
            if context.isStopped {
                last.deinits = finished.deinits
                return nil
            }
            return ReferenceRound(number: finished.number + 1, threads: threads, previousDeinits: finished.deinits)
        }
        let perThread = context.runThreads { worker -> Int in
            var rounds = 0
            var round = lockstep.start()
            while let current = round {
                let loadFirst = worker.random.next() & 1 == 0
                worker.operation { current.offer(by: worker.index, loadFirst: loadFirst) }
                rounds += 1
                round = lockstep.arrive()
            }
            return rounds
        }
        let completed = lockstep.finish()  // drops the last round, and with it its winner
        context.note("rounds", completed)
        context.check(
            perThread.allSatisfy { $0 == completed },
            "threads took part in \(perThread) rounds, not \(completed) each")
        if let deinits = last.deinits?.load() {
            context.check(
                deinits == threads,
                "last round: \(deinits) instances deinitialized after the reference went, not \(threads)")
        } else {
            context.fail("the last round was not recorded")
        }
    }
}

/// The deinit counter of the last round, recorded under the barrier's lock by the worker that
/// ends the run and read after the workers are joined.
private final class ReferenceLastRound: @unchecked Sendable {
    var deinits: AtomicInt?
}

/// One round: a fresh AtomicLazyReference and what its callers record.
private final class ReferenceRound: @unchecked Sendable {
    let number: Int
    let reference = AtomicLazyReference<CountedCandidate>()
    /// Deinitializations of this round's instances.
    let deinits = AtomicInt(0)
    /// The previous round's counter: it must read `threads` once that round was dropped.
    let previousDeinits: AtomicInt?
    /// [i]: the tag of the instance thread i got from storeIfNil; [threads + i]: the tag of the
    /// instance its early load() returned, or -1 (written by thread i only).
    let tags: SharedBuffer<Int>
    let winners = AtomicInt(0)
    let broken = AtomicInt(0)

    init(number: Int, threads: Int, previousDeinits: AtomicInt?) {
        self.number = number
        self.previousDeinits = previousDeinits
        tags = SharedBuffer(count: 2 * threads, repeating: -1)
    }

    /// A caller's part: maybe load(), then offer an instance of its own.
    func offer(by index: Int, loadFirst: Bool) {
        let threads = tags.count / 2
        if loadFirst, let seen = reference.load() {
            tags.base[threads + index] = seen.tag
            if !seen.isIntact { broken.increment() }
        }
        let mine = CountedCandidate(tag: index, deinits: deinits)
        let got = reference.storeIfNil(mine)
        if got === mine { winners.increment() }
        if !got.isIntact { broken.increment() }
        tags.base[index] = got.tag
    }

    /// The checks at the end of the round (every caller has arrived at the barrier, and has
    /// dropped its own instance).
    func check(threads: Int, _ context: WorkloadContext) {
        context.check(winners.load() == 1, "round \(number): \(winners.load()) callers got their own instance back")
        let got = Set(UnsafeBufferPointer(start: tags.base, count: threads))
        context.check(got.count == 1, "round \(number): callers got \(got.count) different instances")
        let winner = got.first ?? -1
        let loaded = Set(UnsafeBufferPointer(start: tags.base + threads, count: threads)).subtracting([-1])
        context.check(
            loaded.isSubset(of: [winner]), "round \(number): load() returned \(loaded), the winner is \(winner)")
        context.check(
            broken.load() == 0, "round \(number): \(broken.load()) instances seen with their payload not yet written")
        context.check(reference.load()?.tag == winner, "round \(number): load() does not return the winner")
        context.check(
            deinits.load() == threads - 1,
            "round \(number): \(deinits.load()) instances deinitialized, expected the \(threads - 1) losers")
        if let previous = previousDeinits?.load() {
            context.check(
                previous == threads,
                "round \(number - 1): \(previous) instances deinitialized after its reference went, not \(threads)")
        }
    }
}
