// A history: completed operations, each with the times of its invocation and response.
//
// Times are ticks of one shared clock (ConcurrentHistoryRecorder uses a sequentially
// consistent atomic counter, incremented just before each call and just after it returns).
// All that matters is their order: operation A precedes B in real time exactly when
// A.responded < B.invoked. Ticks are unique in recorded histories; in hand-written ones a tie
// between a response and an invocation counts as overlap (the lenient reading).

/// One completed call on a concurrent object.
struct HistoryOperation<Specification: SequentialSpecification>: Sendable, CustomStringConvertible {
    /// Which thread made the call (for messages only).
    var thread: Int
    /// Clock tick taken before the call started.
    var invoked: UInt64
    /// Clock tick taken after the call returned; greater than `invoked`.
    var responded: UInt64
    /// The call.
    var operation: Specification.Operation
    /// What it returned.
    var result: Specification.Result

    var description: String {
        "T\(thread) [\(invoked), \(responded)] \(operation) -> \(result)"
    }
}

/// A complete history of one object: every call made on it, all of them returned.
struct History<Specification: SequentialSpecification>: Sendable, CustomStringConvertible {
    /// The calls, in any order.
    var operations: [HistoryOperation<Specification>]

    init(_ operations: [HistoryOperation<Specification>]) {
        for operation in operations {
            precondition(
                operation.invoked <= operation.responded,
                "History: \(operation) responds before it is invoked")
        }
        self.operations = operations
    }

    /// One line per call, by invocation time: what a failing test prints.
    var description: String {
        let lines = operations.sorted { $0.invoked < $1.invoked }.map { "  \($0)" }
        return "\(Specification.name) history of \(operations.count) operations:\n"
            + lines.joined(separator: "\n")
    }
}
