// LinearizabilityChecker: decides whether a complete history of a concurrent object is
// linearizable with respect to a sequential specification.
//
// Definition (Herlihy and Wing, 1990): a history is linearizable when its operations can be
// put in one sequential order that (1) the specification accepts, each operation returning
// exactly what it returned in the history, and (2) respects real time: when A responded
// before B was invoked, A comes before B.
//
// Algorithm: Wing and Gong's depth-first search (1993) in the "just-in-time" form of Lowe
// ("Testing for linearizability", CCPE 2017), with Lowe's and Horn–Kroening's memoization.
//   * The 2n invocation and response events are sorted by time into a doubly linked list.
//   * Walking the list from the front: at an invocation, try to linearize that operation now
//     (it may: the walk has met no response, so every operation that responded before this
//     invocation is already linearized and unlinked). Apply it to the current specification
//     state; if the specification's result equals the recorded one and the pair
//     (linearized set ∪ {op}, new state) was never seen before, commit: unlink the operation's
//     two events (dancing links), push (operation, old state) and restart from the front.
//     Otherwise move on to the next event (a later invocation may go first).
//   * At a response: its operation is not linearized yet (linearized ones were unlinked) but
//     must take effect before it responds, and every invocation before this point has been
//     tried as the next operation, so this branch is dead: pop the last committed
//     operation, relink its events, restore the state and resume after its invocation. An
//     empty stack here means no order works: the history is not linearizable.
//   * An empty list means every operation was linearized: the stack holds the witness order.
// Invariants: the list holds exactly the events of operations not yet linearized, in time
// order; `state` is the specification state after applying the stack's operations in order;
// `linearized` is the set of operations on the stack.
// Memoization is sound because the future of the search depends only on (linearized set,
// state): the remaining events and their constraints are determined by the set. It turns the
// search from factorial into at most (subsets × reachable states) steps.
//
// Histories hold at most `LinearizabilityChecker.maximumOperations` operations (the set is a
// 128-bit mask); recorded histories have a dozen or so.

/// The answer of ``LinearizabilityChecker/check(_:)``.
struct LinearizabilityVerdict: Sendable {
    /// Whether some real-time-respecting sequential order explains the history.
    var isLinearizable: Bool
    /// When linearizable, indices into `History.operations` in a valid sequential order.
    var linearization: [Int]
    /// How many operations the search committed in total (a measure of its work).
    var steps: Int
}

/// Wing–Gong / Lowe linearizability checking against a sequential specification.
enum LinearizabilityChecker<Specification: SequentialSpecification> {
    /// The largest history `check` accepts.
    static var maximumOperations: Int { OperationSet.capacity }

    /// Decides whether `history` is linearizable with respect to `Specification`.
    static func check(_ history: History<Specification>) -> LinearizabilityVerdict {
        let operations = history.operations
        let count = operations.count
        precondition(
            count <= maximumOperations,
            "LinearizabilityChecker: a history of \(count) operations exceeds the \(maximumOperations) supported")
        if count == 0 { return LinearizabilityVerdict(isLinearizable: true, linearization: [], steps: 0) }

        // Events 2i (invocation of i) and 2i+1 (response of i), sorted by time; at equal
        // times invocations go first, so a tie counts as overlap.
        let events = (0..<(2 * count)).sorted { a, b in
            let timeA = a & 1 == 0 ? operations[a >> 1].invoked : operations[a >> 1].responded
            let timeB = b & 1 == 0 ? operations[b >> 1].invoked : operations[b >> 1].responded
            if timeA != timeB { return timeA < timeB }
            if a & 1 != b & 1 { return a & 1 == 0 }
            return a < b
        }

        // The doubly linked list over event ids; node `head` is a sentinel before the first.
        let head = 2 * count
        var next = [Int](repeating: -1, count: 2 * count + 1)
        var previous = [Int](repeating: -1, count: 2 * count + 1)
        var last = head
        for event in events {
            next[last] = event
            previous[event] = last
            last = event
        }

        func unlink(_ node: Int) {
            next[previous[node]] = next[node]
            if next[node] != -1 { previous[next[node]] = previous[node] }
        }
        // Relinks a node unlinked earlier; calls must undo `unlink`s in reverse order.
        func relink(_ node: Int) {
            next[previous[node]] = node
            if next[node] != -1 { previous[next[node]] = node }
        }

        var explored = Set<ExploredNode<Specification.State>>()
        var committed: [(operation: Int, stateBefore: Specification.State)] = []
        var state = Specification.initialState
        var linearized = OperationSet()
        var steps = 0
        var event = next[head]

        while next[head] != -1 {
            let operation = event >> 1
            if event & 1 == 0 {
                // An invocation: try to linearize its operation here.
                let (after, result) = Specification.apply(operations[operation].operation, to: state)
                if result == operations[operation].result {
                    var grown = linearized
                    grown.insert(operation)
                    if explored.insert(ExploredNode(linearized: grown, state: after)).inserted {
                        committed.append((operation, state))
                        state = after
                        linearized = grown
                        steps += 1
                        unlink(2 * operation)
                        unlink(2 * operation + 1)
                        event = next[head]
                        continue
                    }
                }
                event = next[event]
            } else {
                // A response of an operation not yet linearized: backtrack.
                guard let (undone, stateBefore) = committed.popLast() else {
                    return LinearizabilityVerdict(isLinearizable: false, linearization: [], steps: steps)
                }
                relink(2 * undone + 1)
                relink(2 * undone)
                state = stateBefore
                linearized.remove(undone)
                event = next[2 * undone]
            }
        }
        return LinearizabilityVerdict(isLinearizable: true, linearization: committed.map(\.operation), steps: steps)
    }
}

/// A search node already expanded: the operations linearized so far and the resulting state.
private struct ExploredNode<State: Hashable>: Hashable {
    var linearized: OperationSet
    var state: State
}

/// A set of operation indices below 128, as a bit mask: cheap to copy and hash.
struct OperationSet: Hashable, Sendable {
    static let capacity = 128
    private var low: UInt64 = 0
    private var high: UInt64 = 0

    mutating func insert(_ index: Int) {
        if index < 64 { low |= 1 << UInt64(index) } else { high |= 1 << UInt64(index - 64) }
    }

    mutating func remove(_ index: Int) {
        if index < 64 { low &= ~(1 << UInt64(index)) } else { high &= ~(1 << UInt64(index - 64)) }
    }
}
