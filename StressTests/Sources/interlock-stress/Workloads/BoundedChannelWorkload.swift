// Stress workloads of BoundedChannel: `bounded-channel` (capacity 4) and
// `bounded-channel-rendezvous` (capacity 0).
//
// Producers (the even worker threads, at least one) send their own numbered elements
// (producer << 40 | sequence): a blocking send, a send with a deadline 50 us ahead (1 in 4; it
// may not send), or a task's `try await send` that the thread cancels at random and waits for
// (1 in 4; it may not send). Consumers (the odd worker threads, plus one task iterating the
// channel as an AsyncSequence) receive with a blocking `receive()`, a `receive(before:)` 50 us
// ahead, or a task's `try await receive()` that they cancel at random. When the deadline comes,
// the last producer to stop starts 4 late senders (tasks) and closes the channel at once, so the
// close races senders that are waiting or about to send; the consumers drain until `nil`.
// Invariants:
//   - conservation: the elements received are exactly those whose sends returned normally
//     (counts and wrapping sums, over every producer), so no cancelled, timed-out or refused
//     send delivered its element and no cancelled or timed-out receive lost one;
//   - each consumer sees each producer's elements in increasing order (FIFO per producer);
//   - every late send either returned (its element was then received exactly once) or threw
//     ChannelClosedError (its element was never received);
//   - every consumer ends with `nil` after the close: no waiter is left asleep (a lost wake-up
//     would hang the run, which the harness reports).

import CStressSupport
import Interlock

extension Workload {
    /// `bounded-channel`; see the file comment.
    static let boundedChannel = Workload(
        name: "bounded-channel",
        summary: "BoundedChannel(capacity: 4), threads and tasks, cancellation and close; exact conservation, FIFO",
        latencySampleInterval: 1
    ) { context in
        runBoundedChannelWorkload(context, capacity: 4)
    }

    /// `bounded-channel-rendezvous`; see the file comment.
    static let boundedChannelRendezvous = Workload(
        name: "bounded-channel-rendezvous",
        summary: "BoundedChannel(capacity: 0), threads and tasks, cancellation and close; exact conservation",
        latencySampleInterval: 1
    ) { context in
        runBoundedChannelWorkload(context, capacity: 0)
    }
}

/// One thread's or consumer task's counts.
private struct ChannelTally: Sendable {
    var sent = 0
    var sentSum: UInt64 = 0
    var received = 0
    var receivedSum: UInt64 = 0
    var sendsGivenUp = 0
    var receivesGivenUp = 0
    var lateReceived: [UInt64] = []
}

/// The producer id of the late senders' elements (above every worker index).
private let lateProducer: UInt64 = 0xFFFF

private func runBoundedChannelWorkload(_ context: WorkloadContext, capacity: Int) {
    let channel = BoundedChannel<UInt64>(capacity: capacity)
    let producers = Swift.max(1, (context.threadCount + 1) / 2)
    let producersLeft = AtomicInt(producers)
    let lateSent = Locked<[UInt64]>([])
    let lateRefused = AtomicInt(0)
    let outOfOrder = AtomicInt(0)
    let closeDone = WaitGroup()
    closeDone.enter()

    /// Checks one received element against the consumer's last seen sequence of its producer.
    @Sendable func accept(_ value: UInt64, _ tally: inout ChannelTally, _ lastSeen: inout [UInt64]) {
        let producer = value >> 40
        if producer == lateProducer {
            tally.lateReceived.append(value)
        } else if Int(producer) < lastSeen.count {
            let sequence = value & 0xFF_FFFF_FFFF
            if sequence <= lastSeen[Int(producer)] { _ = outOfOrder.increment() }
            lastSeen[Int(producer)] = sequence
        } else {
            _ = outOfOrder.increment()
        }
        tally.received += 1
        tally.receivedSum &+= value
    }

    /// The last producer out: late senders racing the close, then the close.
    @Sendable func closeWithLateSenders() {
        let late = WaitGroup()
        late.enter(4)
        for index in 0..<4 {
            let value = lateProducer << 40 | UInt64(index + 1)
            Task {
                defer { late.leave() }
                do {
                    try await channel.send(value)
                    lateSent.withLock { $0.append(value) }
                } catch {
                    _ = lateRefused.increment()
                }
            }
        }
        ilk_stress_thread_yield()
        channel.close()
        late.wait()
        closeDone.leave()
    }

    // One consumer task iterating the channel, so that there is a consumer with one thread too.
    let taskConsumerDone = WaitGroup()
    taskConsumerDone.enter()
    let taskTally = Locked(ChannelTally())
    Task {
        var tally = ChannelTally()
        var lastSeen = [UInt64](repeating: 0, count: context.threadCount)
        do {
            for try await value in channel { accept(value, &tally, &lastSeen) }
        } catch {
            context.fail("the consumer task's iteration threw \(error)")
        }
        taskTally.withLock { $0 = tally }
        taskConsumerDone.leave()
    }

    let tallies = context.runThreads { worker -> ChannelTally in
        var tally = ChannelTally()
        if worker.index % 2 == 0 {
            // A producer.
            let producer = UInt64(worker.index)
            var sequence: UInt64 = 0
            while worker.keepRunning {
                sequence += 1
                let value = producer << 40 | sequence
                let mode = worker.random.next() & 7
                let sent: Bool = worker.operation {
                    switch mode {
                    case 0, 1:
                        let deadline = ContinuousClock.now + .microseconds(50)
                        return (try? channel.send(value, before: deadline)) ?? false
                    case 2, 3:
                        let done = WaitGroup()
                        done.enter()
                        let outcome = AtomicBool(false)
                        let task = Task {
                            defer { done.leave() }
                            do {
                                try await channel.send(value)
                                outcome.store(true)
                            } catch {}
                        }
                        if worker.random.next() & 1 == 0 {
                            for _ in 0..<(worker.random.next() & 7) { ilk_stress_thread_yield() }
                            task.cancel()
                        }
                        done.wait()
                        return outcome.load()
                    default:
                        do {
                            try channel.send(value)
                            return true
                        } catch {
                            context.fail("producer \(producer): a send threw \(error) before the close")
                            return false
                        }
                    }
                }
                if sent {
                    tally.sent += 1
                    tally.sentSum &+= value
                } else {
                    tally.sendsGivenUp += 1
                }
            }
            if producersLeft.decrement() == 0 { closeWithLateSenders() }
        } else {
            // A consumer: until the channel is closed and drained.
            var lastSeen = [UInt64](repeating: 0, count: context.threadCount)
            var open = true
            while open {
                let mode = worker.random.next() & 7
                worker.operation {
                    switch mode {
                    case 0, 1:
                        switch channel.receive(before: .now + .microseconds(50)) {
                        case .element(let value): accept(value, &tally, &lastSeen)
                        case .timedOut: tally.receivesGivenUp += 1
                        case .closed: open = false
                        }
                    case 2, 3:
                        let done = WaitGroup()
                        done.enter()
                        let got = Locked<UInt64??>(nil)
                        let task = Task {
                            defer { done.leave() }
                            do {
                                let value = try await channel.receive()
                                got.withLock { $0 = .some(value) }
                            } catch {}
                        }
                        if worker.random.next() & 1 == 0 {
                            for _ in 0..<(worker.random.next() & 7) { ilk_stress_thread_yield() }
                            task.cancel()
                        }
                        done.wait()
                        switch got.withLock({ $0 }) {
                        case .some(.some(let value)): accept(value, &tally, &lastSeen)
                        case .some(.none): open = false
                        case .none: tally.receivesGivenUp += 1
                        }
                    default:
                        if let value = channel.receive() { accept(value, &tally, &lastSeen) } else { open = false }
                    }
                }
            }
        }
        return tally
    }
    closeDone.wait()
    taskConsumerDone.wait()

    let all = tallies + [taskTally.withLock { $0 }]
    let sent = all.reduce(0) { $0 + $1.sent }
    let sentSum = all.reduce(UInt64(0)) { $0 &+ $1.sentSum }
    let late = lateSent.withLock { $0 }
    let lateReceived = all.flatMap(\.lateReceived)
    let received = all.reduce(0) { $0 + $1.received }
    let receivedSum = all.reduce(UInt64(0)) { $0 &+ $1.receivedSum }
    let expectedCount = sent + late.count
    let expectedSum = late.reduce(sentSum) { $0 &+ $1 }
    context.check(
        received == expectedCount && receivedSum == expectedSum,
        "received \(received) elements (sum \(receivedSum)), sent \(expectedCount) (sum \(expectedSum)): lost, duplicated or leaked"
    )
    context.check(
        late.sorted() == lateReceived.sorted(), "late sends \(late.sorted()) but received \(lateReceived.sorted())")
    context.check(late.count + lateRefused.load() == 4, "a late sender neither sent nor was refused")
    context.check(outOfOrder.load() == 0, "\(outOfOrder.load()) elements out of their producer's order")
    context.check(channel.isClosed && channel.count == 0, "the channel ended open or with elements left")
    context.check(sent > 0, "no send completed")
    context.note("sends given up", all.reduce(0) { $0 + $1.sendsGivenUp })
    context.note("receives given up", all.reduce(0) { $0 + $1.receivesGivenUp })
    context.note("late sends refused", lateRefused.load())
}
