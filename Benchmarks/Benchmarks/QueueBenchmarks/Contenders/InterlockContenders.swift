// Interlock's LockFreeQueue and LockFreeStack as contenders: direct calls to the library's
// inlinable operations, specialized for `UInt`.

import Interlock

extension LockFreeQueue: QueueContender where Element == UInt {
    static var contenderName: String { "Interlock LockFreeQueue" }
    static var discipline: QueueDiscipline { .fifo }
    @inline(__always) func put(_ value: UInt) { enqueue(value) }
    @inline(__always) func take() -> UInt? { dequeue() }
}

extension LockFreeStack: QueueContender where Element == UInt {
    static var contenderName: String { "Interlock LockFreeStack" }
    static var discipline: QueueDiscipline { .lifo }
    @inline(__always) func put(_ value: UInt) { push(value) }
    @inline(__always) func take() -> UInt? { pop() }
}
