// Shared machinery of the once-initialisation workloads (Once, Lazy, AtomicLazyReference):
// rounds in lockstep, each on a fresh object, since a run-once primitive does its work only once
// per object.
//
// Every worker takes part in every round. A worker that has made its calls of the round
// arrives at the barrier; the last to arrive checks the finished round and builds the next one
// (under the barrier's lock), then releases the others, which pick the new round up. The barrier
// is a Condition, so waiting workers sleep rather than take the cores the round's runner needs.
//
// The barrier orders nothing that the checks rely on for the primitive: a round's body runs
// after its runner left the barrier and is read by the other workers after they left it, with no
// barrier operation in between; only the primitive under test orders the body's writes before
// the readers' plain reads (ThreadSanitizer reports them otherwise). The barrier does order every
// worker's records of the round before the check at its end.

import Interlock

/// Rounds in lockstep over a fresh `Round` object each; see the file comment.
final class LockstepRounds<Round: AnyObject>: @unchecked Sendable {
    private let condition = Condition()
    private let parties: Int
    private let next: (_ finished: Round) -> Round?
    // Guarded by `condition`:
    private var arrived = 0
    private var generation = 0
    private var current: Round?
    private var completed = 0

    /// Lockstep rounds for `parties` workers, starting with `first`. At the end of each round,
    /// `next` runs on the last worker to arrive, with the barrier's lock held: it checks the
    /// finished round and returns the next one, or `nil` to end the run.
    init(parties: Int, first: Round, next: @escaping (_ finished: Round) -> Round?) {
        self.parties = parties
        self.next = next
        current = first
        condition.name = "once workloads' round barrier"
    }

    /// The first round, for a worker that has not taken part yet.
    func start() -> Round? {
        condition.withLock { current }
    }

    /// Ends the calling worker's part in the round: returns the next round once every worker has
    /// arrived, or `nil` when the run is over.
    func arrive() -> Round? {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        if arrived == parties {
            arrived = 0
            completed += 1
            current = next(current!)
            generation += 1
            condition.broadcast()
        } else {
            let mine = generation
            while generation == mine { condition.wait() }
        }
        return current
    }

    /// Drops the last round (after the workers have been joined) and returns how many rounds
    /// were completed.
    func finish() -> Int {
        condition.withLock {
            current = nil
            return completed
        }
    }
}

/// A class whose instances count their deinitialization, with a plain payload written by the
/// initializer: a reader without a happens-before edge from the initializer is a data race.
final class CountedCandidate: @unchecked Sendable {
    let tag: Int
    // Plain, written once in init.
    var payload: (Int, Int)
    private let deinits: AtomicInt

    init(tag: Int, deinits: AtomicInt) {
        self.tag = tag
        self.deinits = deinits
        payload = (tag, ~tag)
    }

    /// Whether the payload reads as the initializer wrote it.
    var isIntact: Bool { payload.0 == tag && payload.1 == ~tag }

    deinit { deinits.increment() }
}
