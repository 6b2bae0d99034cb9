// The shape the recording harness drives: a concurrent container of `Int`s that threads may
// share. LockFreeStack<Int> and LockFreeQueue<Int> conform (LockFreeLinearizabilityTests.swift),
// and so do the reference and the deliberately broken containers of this folder.

/// A concurrent container of `Int` whose history the harness records.
protocol ContainerUnderTest: AnyObject, Sendable {
    /// An empty container.
    init()
    /// push / enqueue.
    func insert(_ value: Int)
    /// pop / dequeue: an element, or `nil` when empty.
    func remove() -> Int?
    /// A snapshot: whether the container holds no element.
    var isEmpty: Bool { get }
}

extension ContainerUnderTest {
    /// Runs one `ContainerOperation` and returns its `ContainerResult`.
    @inline(__always)
    func perform(_ operation: ContainerOperation) -> ContainerResult {
        switch operation {
        case .insert(let value):
            insert(value)
            return .inserted
        case .remove:
            return .removed(remove())
        case .isEmpty:
            return .empty(isEmpty)
        }
    }
}
