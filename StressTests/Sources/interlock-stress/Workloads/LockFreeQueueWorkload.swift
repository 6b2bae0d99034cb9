// Stress workloads of LockFreeQueue.
//
// `lockfree-queue-transfer`: even threads enqueue, odd threads dequeue (one thread does both
// in turn); producers stay at most `lockFreeBacklogLimit` elements ahead. Afterwards the queue
// is drained. Invariants: exact conservation (count and checksum of enqueued == dequeued +
// drained); FIFO per producer: every consumer (and the drain) sees each producer's sequence
// numbers strictly increase; every value decodes to a real producer.
//
// `lockfree-queue-alternating`: every thread enqueues a class element then dequeues one, so
// the queue is never empty when a thread dequeues: a nil is a violation. Invariants:
// conservation by count and checksum; FIFO per producer as above; the instance count returns
// to zero once the queue is drained and deinitialized (no leak, no double release).

import Interlock

/// Per-consumer check that each producer's values arrive in increasing order.
struct LockFreeOrderCheck {
    private var lastSeen: [UInt64]

    init(producers: Int) { lastSeen = Array(repeating: 0, count: producers) }

    /// Records `value`; returns a violation message, or nil.
    mutating func see(_ value: UInt64) -> String? {
        let from = lockFreeProducer(of: value), sequence = lockFreeSequence(of: value)
        guard from < lastSeen.count, sequence != 0 else { return "a value no producer made: \(value)" }
        defer { lastSeen[from] = sequence }
        if sequence <= lastSeen[from] {
            return "producer \(from)'s element \(sequence) came after its element \(lastSeen[from])"
        }
        return nil
    }
}

extension Workload {
    /// `lockfree-queue-transfer`; see the file comment.
    static let lockFreeQueueTransfer = Workload(
        name: "lockfree-queue-transfer",
        summary: "LockFreeQueue producers/consumers; exact count and checksum, FIFO per producer"
    ) { context in
        let queue = LockFreeQueue<UInt64>()
        let backlog = AtomicInt(0)
        let threads = context.threadCount
        let tallies = context.runThreads { worker -> LockFreeTally in
            var tally = LockFreeTally()
            var order = LockFreeOrderCheck(producers: threads)
            let me = worker.index
            let producer = threads == 1 || me % 2 == 0
            let consumer = threads == 1 || me % 2 == 1
            var sequence: UInt64 = 0
            while worker.keepRunning {
                // Relaxed: the backlog only paces producers; it carries no data.
                if producer && backlog.load(ordering: .relaxed) < lockFreeBacklogLimit {
                    sequence += 1
                    let value = lockFreeValue(producer: me, sequence: sequence)
                    worker.operation { queue.enqueue(value) }
                    backlog.increment(ordering: .relaxed)
                    tally.put(value)
                }
                if consumer, let value = worker.operation({ queue.dequeue() }) {
                    backlog.decrement(ordering: .relaxed)
                    tally.took(value)
                    if let violation = order.see(value) { context.fail("consumer \(me): \(violation)") }
                }
            }
            return tally
        }
        var total = LockFreeTally.total(tallies)
        var drainOrder = LockFreeOrderCheck(producers: threads)
        while let value = queue.dequeue() {
            total.took(value)
            if let violation = drainOrder.see(value) { context.fail("drain: \(violation)") }
        }
        context.check(queue.isEmpty, "lockfree-queue-transfer: not empty after draining")
        checkLockFreeConservation(context, total, what: "lockfree-queue-transfer")
    }

    /// `lockfree-queue-alternating`; see the file comment.
    static let lockFreeQueueAlternating = Workload(
        name: "lockfree-queue-alternating",
        summary:
            "LockFreeQueue enqueue-then-dequeue on every thread, class elements; no nil, FIFO per producer, no leak"
    ) { context in
        let live = AtomicInt(0)
        var total = LockFreeTally()
        let threads = context.threadCount
        do {
            let queue = LockFreeQueue<LockFreeStressElement>()
            let tallies = context.runThreads { worker -> LockFreeTally in
                var tally = LockFreeTally()
                var order = LockFreeOrderCheck(producers: threads)
                var sequence: UInt64 = 0
                while worker.keepRunning {
                    sequence += 1
                    let value = lockFreeValue(producer: worker.index, sequence: sequence)
                    worker.operation { queue.enqueue(LockFreeStressElement(value, live: live)) }
                    tally.put(value)
                    guard let element = worker.operation({ queue.dequeue() }) else {
                        context.fail("thread \(worker.index): dequeue after its own enqueue found the queue empty")
                        break
                    }
                    tally.took(element.value)
                    if let violation = order.see(element.value) {
                        context.fail("thread \(worker.index): \(violation)")
                    }
                }
                return tally
            }
            total = LockFreeTally.total(tallies)
            var drainOrder = LockFreeOrderCheck(producers: threads)
            while let element = queue.dequeue() {
                total.took(element.value)
                if let violation = drainOrder.see(element.value) { context.fail("drain: \(violation)") }
            }
        }
        checkLockFreeConservation(context, total, what: "lockfree-queue-alternating")
        context.check(
            live.load() == 0,
            "lockfree-queue-alternating: \(live.load()) elements still alive after the queue was drained and deinitialized"
        )
    }
}
