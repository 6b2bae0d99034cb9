// Interlock's LockFreeQueue and LockFreeStack as contenders: direct calls to the library's
// inlinable operations, specialized for `UInt`.

import Interlock

extension LockFreeQueue: QueueContender where Element == UInt {
    package static var contenderName: String { "Interlock LockFreeQueue" }
    package static var discipline: QueueDiscipline { .fifo }
    @inlinable @inline(__always) package func put(_ value: UInt) { enqueue(value) }
    @inlinable @inline(__always) package func take() -> UInt? { dequeue() }
}

extension LockFreeStack: QueueContender where Element == UInt {
    package static var contenderName: String { "Interlock LockFreeStack" }
    package static var discipline: QueueDiscipline { .lifo }
    @inlinable @inline(__always) package func put(_ value: UInt) { push(value) }
    @inlinable @inline(__always) package func take() -> UInt? { pop() }
}
