// Stress workloads of InterlockCompat's intrusive queues: a fixed pool of caller-owned elements
// circulates between a free list and a work queue of the same kind, so that every element is
// recycled thousands of times a second: the pattern that breaks a LIFO without an ABA guard.
//
// Every thread, in a loop, either produces (takes an element from the free list, writes a value
// `producer << 40 | sequence` into it, enqueues it on the work queue) or consumes (dequeues
// from the work queue, checks and tallies the value, poisons it, puts the element back on the
// free list), at random. The pool has 16 elements per thread, so the lists run short and empty
// dequeues are common too. The link sits at a nonzero offset inside the element.
//
// `compat-osqueue-recycling` (OSQueueHead, OSAtomicEnqueue/Dequeue). Invariants:
//   - conservation: count and checksum of values produced == consumed + drained;
//   - every value decodes to a real producer, and no element comes off the work queue poisoned
//     (it would have been handed out twice);
//   - afterwards, draining both lists yields every element of the pool exactly once: none lost,
//     none duplicated, no cycle, nothing from outside the pool.
// `compat-fifo-queue-recycling` (OSFifoQueueHead, OSAtomicFifoEnqueue/Dequeue): the same, and
// FIFO per producer: every consumer, and the final drain, sees each producer's sequence numbers
// strictly increase.

import InterlockCompat

/// A caller's element: the link in the middle, as a C struct with a `next` field would have it.
private struct CompatQueueElement {
    var value: UInt64
    var link: UnsafeMutableRawPointer?
    var index: Int
}

/// The value a consumed element carries until it is produced into again.
private let compatPoison: UInt64 = 0xDEAD_BEEF_DEAD_BEEF

/// The pool and the two lists (free and work) of one run, at stable addresses.
private final class CompatQueuePool<Head>: @unchecked Sendable {
    let elements: UnsafeMutablePointer<CompatQueueElement>
    let count: Int
    let free: UnsafeMutablePointer<Head>
    let work: UnsafeMutablePointer<Head>
    let offset = MemoryLayout<CompatQueueElement>.offset(of: \.link)!

    init(count: Int, empty: Head, enqueue: (UnsafeMutablePointer<Head>, UnsafeMutableRawPointer, Int) -> Void) {
        self.count = count
        elements = .allocate(capacity: count)
        // Each head on its own allocation (heads are 16-byte aligned by their C declaration).
        free = .allocate(capacity: 1)
        work = .allocate(capacity: 1)
        free.initialize(to: empty)
        work.initialize(to: empty)
        for index in 0..<count {
            (elements + index).initialize(to: CompatQueueElement(value: compatPoison, link: nil, index: index))
            enqueue(free, UnsafeMutableRawPointer(elements + index), offset)
        }
    }

    /// The element at `raw`, or nil when `raw` is not the address of an element of the pool.
    func element(at raw: UnsafeMutableRawPointer) -> UnsafeMutablePointer<CompatQueueElement>? {
        let distance = raw - UnsafeMutableRawPointer(elements)
        let stride = MemoryLayout<CompatQueueElement>.stride
        guard distance >= 0, distance % stride == 0, distance / stride < count else { return nil }
        return elements + distance / stride
    }

    deinit {
        elements.deallocate()
        free.deallocate()
        work.deallocate()
    }
}

/// Runs one recycling workload over the queue functions given (see the file comment).
private func runCompatRecycling<Head>(
    _ context: WorkloadContext,
    name: String,
    empty: Head,
    fifo: Bool,
    enqueue: @escaping @Sendable (UnsafeMutablePointer<Head>, UnsafeMutableRawPointer, Int) -> Void,
    dequeue: @escaping @Sendable (UnsafeMutablePointer<Head>, Int) -> UnsafeMutableRawPointer?
) {
    let threads = context.threadCount
    let pool = CompatQueuePool(count: 16 * threads, empty: empty, enqueue: enqueue)
    let tallies = context.runThreads { worker -> LockFreeTally in
        var tally = LockFreeTally()
        var order = LockFreeOrderCheck(producers: threads)
        var reported = false
        let me = worker.index
        var sequence: UInt64 = 0
        while worker.keepRunning {
            var problem: String? = nil
            if worker.random.next() & 1 == 0 {
                guard let raw = worker.operation({ dequeue(pool.free, pool.offset) }) else { continue }
                guard let element = pool.element(at: raw) else {
                    context.fail("\(name), thread \(me): the free list returned \(raw), not an element of the pool")
                    break
                }
                sequence += 1
                let value = lockFreeValue(producer: me, sequence: sequence)
                element.pointee.value = value
                worker.operation { enqueue(pool.work, raw, pool.offset) }
                tally.put(value)
            } else {
                guard let raw = worker.operation({ dequeue(pool.work, pool.offset) }) else { continue }
                guard let element = pool.element(at: raw) else {
                    context.fail("\(name), thread \(me): the work queue returned \(raw), not an element of the pool")
                    break
                }
                let value = element.pointee.value
                if value == compatPoison {
                    problem = "element \(element.pointee.index) came off the work queue twice"
                } else {
                    tally.took(value)
                    let from = lockFreeProducer(of: value)
                    if from >= threads || lockFreeSequence(of: value) == 0 {
                        problem = "a value no producer made: \(value)"
                    } else if fifo, let violation = order.see(value) {
                        problem = violation
                    }
                }
                element.pointee.value = compatPoison
                worker.operation { enqueue(pool.free, raw, pool.offset) }
            }
            if let problem, !reported {
                reported = true
                context.fail("\(name), thread \(me): \(problem)")
            }
        }
        return tally
    }
    var total = LockFreeTally.total(tallies)
    var seen = [Bool](repeating: false, count: pool.count)
    var drainOrder = LockFreeOrderCheck(producers: threads)
    var elements = 0
    for (list, isWork) in [(pool.work, true), (pool.free, false)] {
        while let raw = dequeue(list, pool.offset) {
            elements += 1
            guard let element = pool.element(at: raw) else {
                context.fail("\(name): draining found \(raw), not an element of the pool")
                return
            }
            let index = element.pointee.index
            if seen[index] {
                context.fail("\(name): element \(index) is on the lists twice (a duplicate or a cycle)")
                return
            }
            seen[index] = true
            if isWork {
                total.took(element.pointee.value)
                if fifo, let violation = drainOrder.see(element.pointee.value) {
                    context.fail("\(name), drain: \(violation)")
                }
            }
        }
    }
    context.check(
        elements == pool.count, "\(name): \(elements) of the pool's \(pool.count) elements on the lists: lost")
    checkLockFreeConservation(context, total, what: name)
}

extension Workload {
    /// `compat-osqueue-recycling`; see the file comment.
    static let compatOSQueueRecycling = Workload(
        name: "compat-osqueue-recycling",
        summary: "OSAtomicEnqueue/Dequeue, a small pool recycled between two lists; conservation, no ABA, pool intact"
    ) { context in
        runCompatRecycling(
            context, name: "compat-osqueue-recycling", empty: OS_ATOMIC_QUEUE_INIT, fifo: false,
            enqueue: { OSAtomicEnqueue($0, $1, $2) }, dequeue: { OSAtomicDequeue($0, $1) })
    }

    /// `compat-fifo-queue-recycling`; see the file comment.
    static let compatFifoQueueRecycling = Workload(
        name: "compat-fifo-queue-recycling",
        summary: "OSAtomicFifoEnqueue/Dequeue, a small pool recycled between two lists; conservation, FIFO per producer"
    ) { context in
        runCompatRecycling(
            context, name: "compat-fifo-queue-recycling", empty: OS_ATOMIC_FIFO_QUEUE_INIT, fifo: true,
            enqueue: { OSAtomicFifoEnqueue($0, $1, $2) }, dequeue: { OSAtomicFifoDequeue($0, $1) })
    }
}
