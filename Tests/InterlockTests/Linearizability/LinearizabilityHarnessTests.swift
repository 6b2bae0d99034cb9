// The recorder and the checker together, on containers whose verdict is known: mutex-guarded
// ones must pass every round, broken ones must be caught. The same `checkRounds` runs the
// lock-free types (LockFreeLinearizabilityTests.swift).

import Testing

/// What checking a batch of recorded rounds found.
struct RoundsReport<Specification: SequentialSpecification> {
    /// Rounds recorded and checked.
    var rounds: Int
    /// Rounds in which two threads' operations overlapped in time.
    var overlappingRounds: Int
    /// Rounds the checker rejected.
    var rejectedRounds: Int
    /// The first rejected history, to print.
    var firstRejected: History<Specification>?
}

/// Records concurrent histories of `Container` in batches of `rounds` rounds and checks each
/// against `Specification`.
///
/// On a loaded machine the threads of a round rarely hold two cores at once, and most rounds
/// come out sequential. So after the first batch, more batches are recorded (up to
/// `maximumBatches` in all) until at least `minimumOverlapping` rounds had operations of two
/// threads overlapping in time: the concurrency a passing verdict must rest on.
func checkRounds<Container: ContainerUnderTest, Specification: SequentialSpecification>(
    _ container: Container.Type, against specification: Specification.Type,
    rounds: Int, minimumOverlapping: Int = 0, maximumBatches: Int = 10,
    threadCount: Int = 4, operationsPerThread: Int = 3
) -> RoundsReport<Specification>
where Specification.Operation == ContainerOperation, Specification.Result == ContainerResult {
    var report = RoundsReport<Specification>(rounds: 0, overlappingRounds: 0, rejectedRounds: 0)
    var batch: UInt64 = 0
    repeat {
        let histories = ConcurrentHistoryRecorder.record(
            container, as: specification, rounds: rounds,
            threadCount: threadCount, operationsPerThread: operationsPerThread,
            seed: 0x1BAD_B002 &+ batch &* 0x1_0000)
        batch += 1
        report.rounds += rounds
        for history in histories {
            if ConcurrentHistoryRecorder.hasOverlap(history) { report.overlappingRounds += 1 }
            if !LinearizabilityChecker<Specification>.check(history).isLinearizable {
                report.rejectedRounds += 1
                if report.firstRejected == nil { report.firstRejected = history }
            }
        }
    } while report.overlappingRounds < minimumOverlapping && batch < maximumBatches
    return report
}

/// Rounds per batch: thousands natively, a couple of hundred under ThreadSanitizer.
let linearizabilityRounds = TestScale.count(2_000, small: 200)

/// Overlapping rounds a correct container must pass before its test may end.
let linearizabilityMinimumOverlapping = TestScale.count(100, small: 10)

/// Rounds for the broken containers, which yield inside their race windows (slower rounds).
let brokenContainerRounds = TestScale.count(1_000, small: 200)

@Suite("Linearizability harness on reference and broken containers", .serialized)
struct LinearizabilityHarnessTests {
    @Test func mutexQueueIsLinearizableAsFIFO() {
        let report = checkRounds(
            MutexQueue.self, against: QueueSpecification.self, rounds: linearizabilityRounds,
            minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        // The rounds must really be concurrent, or passing proves nothing.
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
    }

    @Test func mutexStackIsLinearizableAsLIFO() {
        let report = checkRounds(
            MutexStack.self, against: StackSpecification.self, rounds: linearizabilityRounds,
            minimumOverlapping: linearizabilityMinimumOverlapping)
        #expect(report.rejectedRounds == 0, "first rejected: \(String(describing: report.firstRejected))")
        #expect(report.overlappingRounds > 0, "no round of \(report.rounds) was concurrent")
    }

    @Test func aStackPosingAsAQueueIsCaught() {
        let report = checkRounds(MutexStack.self, against: QueueSpecification.self, rounds: brokenContainerRounds)
        #expect(report.rejectedRounds > 0)
    }

    @Test func aQueueWithRacyIndicesIsCaught() {
        let report = checkRounds(RacyArrayQueue.self, against: QueueSpecification.self, rounds: brokenContainerRounds)
        #expect(report.rejectedRounds > 0, "\(report.overlappingRounds) of \(report.rounds) rounds overlapped")
    }

    @Test func aStackWithRacyIndicesIsCaught() {
        let report = checkRounds(RacyArrayStack.self, against: StackSpecification.self, rounds: brokenContainerRounds)
        #expect(report.rejectedRounds > 0, "\(report.overlappingRounds) of \(report.rounds) rounds overlapped")
    }
}
