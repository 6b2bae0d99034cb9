// Stress workload `once-exactly-once`: every thread calls `run` on a fresh Once each round
// (lockstep rounds, OnceWorkloadSupport.swift), so that the race for the first call, the sleep
// of the callers that overlap the body, the wake-up at its end and the inline path of callers
// that arrive after it all run many thousands of times.
//
// Rounds vary in two ways: the body throws on its first 0, 1 or 2 attempts (round number mod
// 3), so that a throwing runner's reset and wake-up hand the body to a waiting caller or a
// newcomer; and in half of the rounds the body yields the processor once, so that the other
// callers find it running and sleep. In one round in four per thread, the thread yields a few
// times before its call, so that it usually arrives after the body and takes the inline path.
// Each caller whose body threw calls `run` again until a call returns.
//
// Invariants checked at the end of each round:
//   - exactly one body completed, and the bodies ran exactly (failures + 1) times: a plain
//     attempt counter, touched only inside bodies, reads that (two bodies running at once race
//     on it, and ThreadSanitizer reports it);
//   - exactly `failures` errors reached callers, each its own body's;
//   - every caller saw the completed body's plain writes after its `run` returned (only Once
//     orders them, see OnceWorkloadSupport.swift);
//   - `isDone` is true.
// And at the end: every thread took part in every round.

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Workload {
    /// `once-exactly-once`; see the file comment.
    static let onceExactlyOnce = Workload(
        name: "once-exactly-once",
        summary:
            "Once: fresh object per lockstep round, bodies throwing 0-2 times first; one completion, exact attempts and errors, every caller sees the effects",
        latencySampleInterval: 1
    ) { context in
        let threads = context.threadCount
        let overlapping = AtomicInt(0)
        let lockstep = LockstepRounds(
            parties: threads, first: OnceRound(number: 0, overlapping: overlapping)
        ) { finished in
            finished.check(threads: threads, context)
            return context.isStopped ? nil : OnceRound(number: finished.number + 1, overlapping: overlapping)
        }
        let perThread = context.runThreads { worker -> Int in
            let me = worker.index
            var rounds = 0
            var round = lockstep.start()
            while let current = round {
                if (me + current.number) & 3 == 0 {
                    for _ in 0..<3 { sched_yield() }
                }
                worker.operation { current.call() }
                rounds += 1
                round = lockstep.arrive()
            }
            return rounds
        }
        let completed = lockstep.finish()
        context.note("rounds", completed)
        context.note("calls that found a body running", overlapping.load())
        context.check(
            perThread.allSatisfy { $0 == completed },
            "threads took part in \(perThread) rounds, not \(completed) each")
    }
}

/// The error a round's body throws on its planned failing attempts.
private struct PlannedFailure: Error {}

/// One round: a fresh Once and what its bodies and callers record.
private final class OnceRound: @unchecked Sendable {
    let number: Int
    let once = Once()
    /// How many attempts throw before one completes.
    let failures: Int
    /// Whether the body yields the processor, so that the other callers overlap it.
    let slowBody: Bool
    /// Plain memory touched only inside bodies: [0] attempts; [1], [2] the completed body's
    /// effect (the round number and its complement).
    let plain = SharedBuffer<Int>(count: 3, repeating: 0)
    let completions = AtomicInt(0)
    let errors = AtomicInt(0)
    let sawEffect = AtomicInt(0)
    /// Set while a body runs, for the figure of calls that overlapped one. Relaxed on both
    /// sides, so that it orders nothing (in particular not the effect's plain reads).
    let bodyRunning = AtomicBool(false)
    /// Calls made while a body ran (they usually sleep), over the whole run.
    let overlapping: AtomicInt

    init(number: Int, overlapping: AtomicInt) {
        self.number = number
        self.overlapping = overlapping
        failures = number % 3
        slowBody = number & 4 != 0
    }

    /// A caller's part: `run` until a call returns, then read the effect.
    func call() {
        let p = plain.base
        while true {
            if bodyRunning.load(ordering: .relaxed) { overlapping.increment() }
            do {
                try once.run {
                    bodyRunning.store(true, ordering: .relaxed)
                    defer { bodyRunning.store(false, ordering: .relaxed) }
                    p[0] += 1
                    if slowBody { sched_yield() }
                    if p[0] <= failures { throw PlannedFailure() }
                    p[1] = number
                    p[2] = ~number
                    completions.increment()
                }
                break
            } catch {
                errors.increment()
            }
        }
        if p[1] == number && p[2] == ~number { sawEffect.increment() }
    }

    /// The checks at the end of the round (every caller has arrived at the barrier).
    func check(threads: Int, _ context: WorkloadContext) {
        let attempts = plain.base[0]
        context.check(completions.load() == 1, "round \(number): \(completions.load()) bodies completed, not 1")
        context.check(
            attempts == failures + 1,
            "round \(number): bodies ran \(attempts) times, expected \(failures) failures and 1 completion")
        context.check(
            errors.load() == failures,
            "round \(number): \(errors.load()) errors reached callers, \(failures) bodies threw")
        context.check(
            sawEffect.load() == threads,
            "round \(number): \(threads - sawEffect.load()) of \(threads) callers missed the body's effects")
        context.check(once.isDone, "round \(number): isDone is false after the body completed")
    }
}
