// Stress workload `condition-bounded-buffer`: a bounded FIFO buffer shared by producers and
// consumers through one Condition (the classic NSCondition use), in plain memory.
//
// Threads: even indexes produce, odd indexes consume (with one thread, it does both in turn).
// Producers wait while the buffer is full, consumers while it is empty. The waker uses
// `signal()` when every registered waiter is of the kind it means to wake (so the one woken
// is sure to be useful) and `broadcast()` otherwise — which exercises both the single wake
// and the requeue broadcast, both while holding the lock and after unlocking it.
//
// Watchdog (a lost wake-up shows up as a stall, reported as FAIL, not a hang): every wait is
// `wait(until:)` with a deadline `stall` ahead. A wait that times out while its predicate
// holds — items were there (or space was) for that long and nobody woke the waiter — is a
// lost wake-up. Timed waits also guarantee that the run ends even when the condition is broken.
//
// Invariants checked:
//   - exact conservation: items produced == items consumed, and the wrapping sums of their
//     values agree (a lost, duplicated or torn item breaks them);
//   - FIFO per producer: each consumer sees each producer's sequence numbers increase;
//   - no lost wake-up (the watchdog above);
//   - the buffer's plain-memory indexes stay in range (a broken mutex corrupts them), and
//     ThreadSanitizer sees every plain access ordered by the Condition.

import Interlock

extension Workload {
    /// `condition-bounded-buffer`; see the file comment.
    static let conditionBoundedBuffer = Workload(
        name: "condition-bounded-buffer",
        summary: "Condition bounded buffer, producers/consumers; exact checksum, FIFO per producer, no lost signal",
        latencySampleInterval: 1
    ) { context in
        let capacity = 8
        let stall = Duration.seconds(5)
        let condition = Condition()
        condition.name = "condition-bounded-buffer"
        let slots = SharedBuffer<UInt64>(count: capacity, repeating: 0)
        // [0] head index, [1] item count, [2] producers still running,
        // [3] producers waiting, [4] consumers waiting.
        let header = SharedBuffer<Int>(count: 5, repeating: 0)
        let producerCount = context.threadCount == 1 ? 1 : (context.threadCount + 1) / 2
        header.base[2] = producerCount

        /// Wakes waiters of one kind: `signal` when only that kind waits, else `broadcast`.
        @Sendable func wake(kindWaiting: Int, otherWaiting: Int) {
            if kindWaiting == 0 { return }
            if otherWaiting == 0 { condition.signal() } else { condition.broadcast() }
        }

        /// Tallies of one thread: produced/consumed counts and wrapping sums.
        struct Tally: Sendable {
            var produced = 0, producedSum: UInt64 = 0
            var consumed = 0, consumedSum: UInt64 = 0
        }

        let tallies = context.runThreads { worker -> Tally in
            let head = header.base, count = header.base + 1, producersLeft = header.base + 2
            let waitingProducers = header.base + 3, waitingConsumers = header.base + 4
            let me = worker.index
            let producer = context.threadCount == 1 || me % 2 == 0
            let consumer = context.threadCount == 1 || me % 2 == 1
            var tally = Tally()
            var lastSeen = [UInt64](repeating: 0, count: context.threadCount)
            var sequence: UInt64 = 0
            var producing = producer

            /// Takes one item (the lock held, count > 0) and checks its order.
            func take() {
                let value = slots.base[head.pointee]
                head.pointee = (head.pointee + 1) % capacity
                count.pointee -= 1
                let from = Int(value >> 40), seq = value & 0xFF_FFFF_FFFF
                if from >= context.threadCount || seq <= lastSeen[from] {
                    context.fail(
                        "consumer \(me): item \(seq) of producer \(from) out of order or corrupt (last \(lastSeen[from]))"
                    )
                } else {
                    lastSeen[from] = seq
                }
                tally.consumed += 1
                tally.consumedSum &+= value
            }

            condition.lock()
            while true {
                if producing && !worker.keepRunning {
                    producing = false
                    producersLeft.pointee -= 1
                    // Consumers waiting on "empty" must see that production has ended.
                    if waitingConsumers.pointee + waitingProducers.pointee > 0 { condition.broadcast() }
                }
                if producing {
                    // Produce one item, waiting while the buffer is full.
                    var stalled = false
                    while count.pointee == capacity && !stalled {
                        if context.threadCount == 1 { break }
                        waitingProducers.pointee += 1
                        let woken = condition.wait(until: .now + stall)
                        waitingProducers.pointee -= 1
                        if !woken {
                            if count.pointee < capacity {
                                context.fail(
                                    "producer \(me): space was free for \(stall) and nobody woke it (lost wake-up)")
                            }
                            stalled = !worker.keepRunning || count.pointee == capacity
                        }
                    }
                    if count.pointee < capacity {
                        sequence += 1
                        let value = UInt64(me) << 40 | sequence
                        slots.base[(head.pointee + count.pointee) % capacity] = value
                        count.pointee += 1
                        tally.produced += 1
                        tally.producedSum &+= value
                        worker.count()
                        wake(kindWaiting: waitingConsumers.pointee, otherWaiting: waitingProducers.pointee)
                    }
                    if context.threadCount == 1 && count.pointee > 0 { take() }
                    if producer && !consumer {
                        // Let others in now and then: unlock and relock (also tests unlock paths).
                        if sequence % 4 == 0 { condition.unlock(); condition.lock() }
                        continue
                    }
                }
                if consumer && context.threadCount > 1 {
                    // Consume one item, waiting while the buffer is empty and production goes on.
                    while count.pointee == 0 && producersLeft.pointee > 0 {
                        waitingConsumers.pointee += 1
                        let woken = condition.wait(until: .now + stall)
                        waitingConsumers.pointee -= 1
                        if !woken && count.pointee > 0 {
                            context.fail("consumer \(me): an item waited \(stall) and nobody woke it (lost wake-up)")
                        }
                        if !woken && count.pointee == 0 && producersLeft.pointee > 0 && context.isStopped {
                            // Producers should have finished long ago: they are stuck too.
                            context.fail(
                                "consumer \(me): no item and no end of production for \(stall) after the deadline")
                            break
                        }
                    }
                    if count.pointee > 0 {
                        take()
                        worker.count()
                        // Unlock before waking half the time: both broadcast paths run.
                        if tally.consumed % 2 == 0 {
                            wake(kindWaiting: waitingProducers.pointee, otherWaiting: waitingConsumers.pointee)
                        } else {
                            let (p, c) = (waitingProducers.pointee, waitingConsumers.pointee)
                            condition.unlock()
                            wake(kindWaiting: p, otherWaiting: c)
                            condition.lock()
                        }
                    } else {
                        break  // empty and no producer left (or a reported stall)
                    }
                } else if !producing {
                    break
                }
            }
            if context.threadCount == 1 {
                while count.pointee > 0 { take() }
            }
            condition.unlock()
            return tally
        }
        let produced = tallies.reduce(0) { $0 + $1.produced }
        let consumed = tallies.reduce(0) { $0 + $1.consumed }
        let producedSum = tallies.reduce(UInt64(0)) { $0 &+ $1.producedSum }
        let consumedSum = tallies.reduce(UInt64(0)) { $0 &+ $1.consumedSum }
        context.check(header.base[1] == 0, "\(header.base[1]) items left in the buffer after every consumer finished")
        context.check(produced == consumed, "produced \(produced) items but consumed \(consumed)")
        context.check(producedSum == consumedSum, "checksum of produced items differs from consumed items")
        context.check(produced > 0, "no item was produced")
        context.note("items", produced)
        context.check(condition.tryLock(), "the condition is still locked after the run")
        condition.unlock()
    }
}
