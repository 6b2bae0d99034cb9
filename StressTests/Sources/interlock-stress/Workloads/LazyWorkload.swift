// Stress workload `lazy-single-computation`: every thread reads `value` of a fresh Lazy<[Int]>
// each round (lockstep rounds, OnceWorkloadSupport.swift), one to three times, so that the race
// for the first read, the sleep of the readers that overlap the computation and the inline path
// run many thousands of times. In half of the rounds the computation yields the processor once,
// so that the other readers find it running and sleep.
//
// Invariants checked at the end of each round:
//   - the closure ran exactly once;
//   - every read returned the round's array, and every thread's first read the same buffer
//     (one computation, one storage; only Lazy orders the readers after the computation's
//     writes, and ThreadSanitizer reports it otherwise);
//   - the closure was released once the value existed: a token it captured (and nothing else
//     holds) is deinitialized by the end of the round, while the Lazy itself is still alive.
// And at the end: every thread took part in every round.

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Workload {
    /// `lazy-single-computation`; see the file comment.
    static let lazySingleComputation = Workload(
        name: "lazy-single-computation",
        summary:
            "Lazy<[Int]>: fresh object per lockstep round, 1-3 reads per thread; one computation, one buffer for all, closure released",
        latencySampleInterval: 1
    ) { context in
        let threads = context.threadCount
        let tokenDeinits = AtomicInt(0)
        let overlapping = AtomicInt(0)
        let lockstep = LockstepRounds(
            parties: threads,
            first: LazyRound(number: 0, threads: threads, tokenDeinits: tokenDeinits, overlapping: overlapping)
        ) { finished in
            finished.check(threads: threads, tokenDeinits: tokenDeinits, context)
            if context.isStopped { return nil }
            return LazyRound(
                number: finished.number + 1, threads: threads, tokenDeinits: tokenDeinits, overlapping: overlapping)
        }
        let perThread = context.runThreads { worker -> Int in
            var rounds = 0
            var round = lockstep.start()
            while let current = round {
                let reads = 1 + Int(worker.random.next() % 3)
                worker.operation { current.read(by: worker.index, times: reads) }
                rounds += 1
                round = lockstep.arrive()
            }
            return rounds
        }
        let completed = lockstep.finish()
        context.note("rounds", completed)
        context.note("reads that found the computation running", overlapping.load())
        context.check(
            perThread.allSatisfy { $0 == completed },
            "threads took part in \(perThread) rounds, not \(completed) each")
    }
}

/// One round: a fresh Lazy and what its readers record.
private final class LazyRound: @unchecked Sendable {
    static let length = 16
    let number: Int
    let lazy: Lazy<[Int]>
    let computations: AtomicInt
    /// [i]: the address of the buffer of thread i's first read (written by thread i only).
    let buffers: SharedBuffer<Int>
    let wrongReads = AtomicInt(0)
    /// Set while the closure runs, for the figure of reads that overlapped it. Relaxed on both
    /// sides, so that it orders nothing (in particular not the readers' reads of the value).
    let computing = AtomicBool(false)
    /// Reads made while the closure ran (they usually sleep), over the whole run.
    let overlapping: AtomicInt

    init(number: Int, threads: Int, tokenDeinits: AtomicInt, overlapping: AtomicInt) {
        self.number = number
        self.overlapping = overlapping
        let computations = AtomicInt(0)
        self.computations = computations
        buffers = SharedBuffer(count: threads, repeating: 0)
        // Held by the closure alone: released when Lazy drops the closure.
        let token = CountedCandidate(tag: number, deinits: tokenDeinits)
        let slow = number & 2 != 0
        let computing = computing
        lazy = Lazy {
            computing.store(true, ordering: .relaxed)
            defer { computing.store(false, ordering: .relaxed) }
            computations.increment()
            if slow { sched_yield() }
            return (0..<LazyRound.length).map { $0 &* token.tag }
        }
    }

    /// A reader's part: `times` reads, each checked; the first one's buffer recorded.
    func read(by index: Int, times: Int) {
        for i in 0..<times {
            if computing.load(ordering: .relaxed) { overlapping.increment() }
            let value = lazy.value
            if value.count != LazyRound.length || value[LazyRound.length - 1] != (LazyRound.length - 1) &* number {
                wrongReads.increment()
            }
            if i == 0 { buffers.base[index] = value.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } }
        }
    }

    /// The checks at the end of the round (every reader has arrived at the barrier).
    func check(threads: Int, tokenDeinits: AtomicInt, _ context: WorkloadContext) {
        context.check(computations.load() == 1, "round \(number): the value was computed \(computations.load()) times")
        context.check(wrongReads.load() == 0, "round \(number): \(wrongReads.load()) reads returned a wrong array")
        let distinct = Set(UnsafeBufferPointer(start: buffers.base, count: threads))
        context.check(distinct.count == 1, "round \(number): readers got \(distinct.count) different buffers")
        context.check(
            tokenDeinits.load() == number + 1,
            "round \(number): \(tokenDeinits.load()) closures released after \(number + 1) computations")
    }
}
