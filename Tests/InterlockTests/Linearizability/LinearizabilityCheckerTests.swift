// The checker on hand-written histories: it must accept the linearizable ones (including
// those that need reordering of overlapping operations) and reject each classic violation.
// Times are small integers; [a, b] is an operation invoked at a and returning at b.

import Testing

/// Builds a history operation tersely: `op(thread, invoked, responded, operation, result)`.
private func op<Specification: SequentialSpecification>(
    _ thread: Int, _ invoked: UInt64, _ responded: UInt64,
    _ operation: ContainerOperation, _ result: ContainerResult,
    _: Specification.Type = Specification.self
) -> HistoryOperation<Specification>
where Specification.Operation == ContainerOperation, Specification.Result == ContainerResult {
    HistoryOperation(thread: thread, invoked: invoked, responded: responded, operation: operation, result: result)
}

private func queue(_ operations: [HistoryOperation<QueueSpecification>]) -> LinearizabilityVerdict {
    LinearizabilityChecker<QueueSpecification>.check(History(operations))
}

private func stack(_ operations: [HistoryOperation<StackSpecification>]) -> LinearizabilityVerdict {
    LinearizabilityChecker<StackSpecification>.check(History(operations))
}

@Suite("Linearizability checker on hand-written histories")
struct LinearizabilityCheckerTests {
    @Test func emptyHistoryIsLinearizable() {
        #expect(queue([]).isLinearizable)
    }

    @Test func sequentialFIFOHistoryIsAcceptedAndItsOrderReturned() throws {
        let verdict = queue([
            op(0, 0, 1, .insert(1), .inserted),
            op(0, 2, 3, .insert(2), .inserted),
            op(1, 4, 5, .remove, .removed(1)),
            op(1, 6, 7, .remove, .removed(2)),
            op(1, 8, 9, .remove, .removed(nil)),
            op(0, 10, 11, .isEmpty, .empty(true)),
        ])
        #expect(verdict.isLinearizable)
        #expect(verdict.linearization == [0, 1, 2, 3, 4, 5])
    }

    @Test func overlappingInsertsMayLinearizeInEitherOrder() {
        // The two enqueues overlap, so the dequeues may see them in either order.
        let inserts = [
            op(0, 0, 5, .insert(1), .inserted, QueueSpecification.self),
            op(1, 1, 4, .insert(2), .inserted, QueueSpecification.self),
        ]
        #expect(queue(inserts + [op(2, 6, 7, .remove, .removed(2)), op(2, 8, 9, .remove, .removed(1))]).isLinearizable)
        #expect(queue(inserts + [op(2, 6, 7, .remove, .removed(1)), op(2, 8, 9, .remove, .removed(2))]).isLinearizable)
    }

    @Test func removeOverlappingItsInsertIsAccepted() throws {
        // The dequeue starts before the enqueue returns: the enqueue may take effect first.
        let history: [HistoryOperation<QueueSpecification>] = [
            op(0, 0, 10, .insert(7), .inserted),
            op(1, 1, 2, .remove, .removed(7)),
        ]
        let verdict = queue(history)
        #expect(verdict.isLinearizable)
        #expect(verdict.linearization == [0, 1])
    }

    @Test func witnessNeedsBacktrackingPastAGreedyChoice() {
        // The search first commits insert(1) then insert(2) (list order); the remove of 2
        // refutes that, so it must backtrack to insert(2), insert(1).
        let verdict = queue([
            op(0, 0, 10, .insert(1), .inserted),
            op(1, 1, 3, .insert(2), .inserted),
            op(2, 4, 5, .remove, .removed(2)),
            op(2, 11, 12, .remove, .removed(1)),
        ])
        #expect(verdict.isLinearizable)
        #expect(verdict.linearization == [1, 0, 2, 3])
    }

    @Test func rejectsRemoveOfValueInsertedAfterTheRemoveReturned() {
        #expect(
            !queue([
                op(0, 0, 1, .remove, .removed(5)),
                op(1, 2, 3, .insert(5), .inserted),
            ]).isLinearizable)
    }

    @Test func rejectsFIFOOutOfOrderButAcceptsItAsLIFO() {
        let history: [HistoryOperation<QueueSpecification>] = [
            op(0, 0, 1, .insert(1), .inserted),
            op(0, 2, 3, .insert(2), .inserted),
            op(1, 4, 5, .remove, .removed(2)),
            op(1, 6, 7, .remove, .removed(1)),
        ]
        #expect(!queue(history).isLinearizable)
        let asStack = history.map {
            op($0.thread, $0.invoked, $0.responded, $0.operation, $0.result, StackSpecification.self)
        }
        #expect(stack(asStack).isLinearizable)
    }

    @Test func rejectsLIFOOutOfOrder() {
        #expect(
            !stack([
                op(0, 0, 1, .insert(1), .inserted),
                op(0, 2, 3, .insert(2), .inserted),
                op(1, 4, 5, .remove, .removed(1)),
            ]).isLinearizable)
    }

    @Test func rejectsAValueRemovedTwice() {
        // Even when the two pops overlap each other and the push.
        #expect(
            !stack([
                op(0, 0, 3, .insert(4), .inserted),
                op(1, 1, 5, .remove, .removed(4)),
                op(2, 2, 6, .remove, .removed(4)),
            ]).isLinearizable)
    }

    @Test func rejectsEmptyRemoveWhileAnElementIsCertainlyPresent() {
        #expect(
            !queue([
                op(0, 0, 1, .insert(1), .inserted),
                op(1, 2, 3, .remove, .removed(nil)),
                op(1, 4, 5, .remove, .removed(1)),
            ]).isLinearizable)
        // Overlapping the insert, the empty answer is fine.
        #expect(
            queue([
                op(0, 0, 3, .insert(1), .inserted),
                op(1, 1, 2, .remove, .removed(nil)),
                op(1, 4, 5, .remove, .removed(1)),
            ]).isLinearizable)
    }

    @Test func rejectsAValueNeverInserted() {
        #expect(!queue([op(0, 0, 1, .insert(1), .inserted), op(1, 0, 2, .remove, .removed(9))]).isLinearizable)
    }

    @Test func rejectsAWrongIsEmptySnapshot() {
        #expect(
            !stack([
                op(0, 0, 1, .insert(1), .inserted),
                op(1, 2, 3, .isEmpty, .empty(true)),
            ]).isLinearizable)
        #expect(!stack([op(0, 0, 1, .isEmpty, .empty(false))]).isLinearizable)
    }

    @Test func rejectsALostElement() {
        // Two inserts complete, then one remove empties the queue and the next finds nothing.
        #expect(
            !queue([
                op(0, 0, 2, .insert(1), .inserted),
                op(1, 1, 3, .insert(2), .inserted),
                op(2, 4, 5, .remove, .removed(2)),
                op(2, 6, 7, .remove, .removed(nil)),
            ]).isLinearizable)
    }

    @Test func fullyOverlappingOperationsAreCheckedQuickly() {
        // Six overlapping pushes and six overlapping pops returning them in some order:
        // without memoization the search would try a factorial number of orders.
        var history: [HistoryOperation<StackSpecification>] = []
        for value in 1...6 { history.append(op(value, 0, 100, .insert(value), .inserted)) }
        for (index, value) in [3, 1, 6, 2, 5, 4].enumerated() {
            history.append(op(10 + index, 1, 100, .remove, .removed(value)))
        }
        let verdict = stack(history)
        #expect(verdict.isLinearizable)
        #expect(verdict.linearization.count == 12)
        // Make two pops return the same value: no order explains it; the search must still
        // end, after exploring each (set, state) node at most once.
        history[6] = op(10, 1, 100, .remove, .removed(4))
        let rejected = stack(history)
        #expect(!rejected.isLinearizable)
        #expect(rejected.steps < 100_000)
    }

    @Test func everyWitnessIsAValidSequentialRun() {
        // Replay the returned order through the specification: same results, real time kept.
        let history = History<QueueSpecification>([
            op(0, 0, 6, .insert(1), .inserted),
            op(1, 1, 3, .insert(2), .inserted),
            op(2, 2, 8, .remove, .removed(1)),
            op(1, 4, 9, .remove, .removed(2)),
            op(0, 7, 10, .isEmpty, .empty(true)),
        ])
        let verdict = LinearizabilityChecker<QueueSpecification>.check(history)
        #expect(verdict.isLinearizable)
        var state = QueueSpecification.initialState
        for (position, index) in verdict.linearization.enumerated() {
            let operation = history.operations[index]
            let (after, result) = QueueSpecification.apply(operation.operation, to: state)
            #expect(result == operation.result)
            state = after
            for later in verdict.linearization[(position + 1)...] {
                #expect(
                    !(history.operations[later].responded < operation.invoked),
                    "\(history.operations[later]) precedes \(operation) in real time")
            }
        }
    }
}
