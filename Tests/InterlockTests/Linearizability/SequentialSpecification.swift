// Sequential specifications: what a container is allowed to do when operations run one at a
// time. The linearizability checker (LinearizabilityChecker.swift) is generic over this
// protocol; it asks whether a concurrent history can be explained by *some* sequential order
// of its operations, consistent with real time, that this specification accepts.
//
// A specification is deterministic: `apply` maps a state and an operation to exactly one new
// state and one result. The checker compares that result with the one the concurrent object
// really returned. States are `Hashable` because the checker memoizes (set of linearized
// operations, state) pairs it has already explored (Lowe, "Testing for linearizability",
// 2017; Horn and Kroening, "Faster linearizability checking via P-compositionality", 2015).
//
// Both container specifications below share one operation vocabulary (insert, remove,
// isEmpty), so one recording harness drives stacks and queues alike; they differ only in
// which end `remove` takes from.

/// The sequential behaviour a concurrent object must be indistinguishable from.
protocol SequentialSpecification: SendableMetatype {
    /// Everything the object remembers between operations.
    associatedtype State: Hashable
    /// One call, with its arguments.
    associatedtype Operation: Hashable & Sendable & CustomStringConvertible
    /// What a call returned.
    associatedtype Result: Hashable & Sendable & CustomStringConvertible

    /// The state of a newly created object.
    static var initialState: State { get }

    /// Runs `operation` alone on an object in `state`.
    /// - Returns: the state afterwards and the result the call must return.
    static func apply(_ operation: Operation, to state: State) -> (state: State, result: Result)

    /// A short name for messages ("FIFO queue").
    static var name: String { get }
}

/// An operation on a container of `Int`s; values are unique per operation in every history,
/// so a removed value names the insert it came from.
enum ContainerOperation: Hashable, Sendable, CustomStringConvertible {
    /// push / enqueue.
    case insert(Int)
    /// pop / dequeue.
    case remove
    /// the `isEmpty` snapshot.
    case isEmpty

    var description: String {
        switch self {
        case .insert(let value): "insert(\(value))"
        case .remove: "remove()"
        case .isEmpty: "isEmpty"
        }
    }
}

/// What a container operation returned.
enum ContainerResult: Hashable, Sendable, CustomStringConvertible {
    /// An insert returns nothing.
    case inserted
    /// A remove returns the element, or `nil` when the container was empty.
    case removed(Int?)
    /// The answer of `isEmpty`.
    case empty(Bool)

    var description: String {
        switch self {
        case .inserted: "()"
        case .removed(let value?): "\(value)"
        case .removed(nil): "nil"
        case .empty(let flag): "\(flag)"
        }
    }
}

/// A LIFO stack of `Int`: `remove` takes the most recently inserted element.
enum StackSpecification: SequentialSpecification {
    /// The elements, bottom first.
    typealias State = [Int]

    static var initialState: [Int] { [] }
    static var name: String { "LIFO stack" }

    static func apply(_ operation: ContainerOperation, to state: [Int]) -> (state: [Int], result: ContainerResult) {
        switch operation {
        case .insert(let value):
            return (state + [value], .inserted)
        case .remove:
            guard let top = state.last else { return (state, .removed(nil)) }
            return (Array(state.dropLast()), .removed(top))
        case .isEmpty:
            return (state, .empty(state.isEmpty))
        }
    }
}

/// A FIFO queue of `Int`: `remove` takes the least recently inserted element.
enum QueueSpecification: SequentialSpecification {
    /// The elements, oldest first.
    typealias State = [Int]

    static var initialState: [Int] { [] }
    static var name: String { "FIFO queue" }

    static func apply(_ operation: ContainerOperation, to state: [Int]) -> (state: [Int], result: ContainerResult) {
        switch operation {
        case .insert(let value):
            return (state + [value], .inserted)
        case .remove:
            guard let oldest = state.first else { return (state, .removed(nil)) }
            return (Array(state.dropFirst()), .removed(oldest))
        case .isEmpty:
            return (state, .empty(state.isEmpty))
        }
    }
}
