// Interlock's lock-free containers through the linearizability harness: every recorded
// history of LockFreeStack must be explainable as a LIFO stack, every history of
// LockFreeQueue as a FIFO queue, including the `isEmpty` snapshots. The same harness rejects
// the broken containers (LinearizabilityHarnessTests.swift), so a pass means something.
//
// A round (4 threads x 3 operations on a fresh queue) never fills a 1024-slot segment, so the
// queue's code also runs with two-slot segments (SegmentedQueue, LockFreeQueueGeometryTests.swift):
// there a round links segments, moves head and tail across them and retires the old ones,
// concurrently with the other operations, at the same checking cost.

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
        let report = checkRounds(
            LockFreeStack<Int>.self, against: StackSpecification.self,
            rounds: linearizabilityRounds,
            minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
    }

    @Test func lockFreeQueueIsLinearizableAsFIFO() {
        let report = checkRounds(
            LockFreeQueue<Int>.self, against: QueueSpecification.self,
            rounds: linearizabilityRounds,
            minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
    }

    @Test func lockFreeQueueFailsTheStackSpecification() {
        // The harness distinguishes the two real types: a FIFO is not a LIFO.
        let report = checkRounds(
            LockFreeQueue<Int>.self, against: StackSpecification.self,
            rounds: brokenContainerRounds)
        #expect(report.rejectedRounds > 0)
    }

    @Test func lockFreeQueueWithTwoSlotSegmentsIsLinearizableAsFIFO() {
        let report = checkRounds(
            SegmentedQueue<TwoSlotSegments>.self, against: QueueSpecification.self,
            rounds: linearizabilityRounds,
            minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
        // That the rounds crossed segments: a round whose removes returned three elements moved
        // head at least once (two-slot segments hold two elements, and a dequeue takes only
        // from head's segment), and retired the segment it left.
        let histories = ConcurrentHistoryRecorder.record(
            SegmentedQueue<TwoSlotSegments>.self, as: QueueSpecification.self, rounds: linearizabilityRounds)
        let crossing = histories.filter { history in
            history.operations.filter { if case .removed(.some) = $0.result { true } else { false } }.count >= 3
        }
        #expect(crossing.count > 0, "no round of \(histories.count) took three elements")
        #expect(crossing.allSatisfy { LinearizabilityChecker<QueueSpecification>.check($0).isLinearizable })
    }
}
