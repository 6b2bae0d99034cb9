// Interlock's lock-free containers through the linearizability harness: every recorded
// history of LockFreeStack must be explainable as a LIFO stack, every history of
// LockFreeQueue as a FIFO queue, including the `isEmpty` snapshots. The same harness rejects
// the broken containers (LinearizabilityHarnessTests.swift), so a pass means something.

import Interlock
import Testing

extension LockFreeStack: ContainerUnderTest where Element == Int {
    func insert(_ value: Int) { push(value) }
    func remove() -> Int? { pop() }
}

extension LockFreeQueue: ContainerUnderTest where Element == Int {
    func insert(_ value: Int) { enqueue(value) }
    func remove() -> Int? { dequeue() }
}

@Suite("Linearizability of LockFreeStack and LockFreeQueue", .serialized)
struct LockFreeLinearizabilityTests {
    @Test func lockFreeStackIsLinearizableAsLIFO() {
        let report = checkRounds(LockFreeStack<Int>.self, against: StackSpecification.self,
                                 rounds: linearizabilityRounds,
                                 minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
    }

    @Test func lockFreeQueueIsLinearizableAsFIFO() {
        let report = checkRounds(LockFreeQueue<Int>.self, against: QueueSpecification.self,
                                 rounds: linearizabilityRounds,
                                 minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
    }

    @Test func lockFreeQueueFailsTheStackSpecification() {
        // The harness distinguishes the two real types: a FIFO is not a LIFO.
        let report = checkRounds(LockFreeQueue<Int>.self, against: StackSpecification.self,
                                 rounds: brokenContainerRounds)
        #expect(report.rejectedRounds > 0)
    }
}
