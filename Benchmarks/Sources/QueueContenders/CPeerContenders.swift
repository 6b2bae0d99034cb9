// The C and C++ peers as contenders: each wraps one handle of its C API
// (ilk_peer_queues.h, ilk_peer_boost.h), created at init and destroyed (with any element
// left) at deinit. Every operation is one direct C call.

import CBoostQueuePeers
import CQueuePeers

/// liburcu cds_lfq (FIFO).
package final class URCULockFreeQueue: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "liburcu cds_lfq" }
    package static var discipline: QueueDiscipline { .fifo }
    package init() { handle = ilk_peer_urcu_lfq_create()! }
    deinit { ilk_peer_urcu_lfq_destroy(handle) }
    package func drain() { ilk_peer_urcu_drain() }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_urcu_lfq_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_urcu_lfq_take(handle, &value) ? value : nil
    }
}

/// liburcu cds_wfcq (FIFO).
package final class URCUWaitFreeQueue: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "liburcu cds_wfcq" }
    package static var discipline: QueueDiscipline { .fifo }
    package init() { handle = ilk_peer_urcu_wfcq_create()! }
    deinit { ilk_peer_urcu_wfcq_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_urcu_wfcq_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_urcu_wfcq_take(handle, &value) ? value : nil
    }
}

/// CK ck_fifo_mpmc (FIFO).
package final class CKFifoMPMC: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "CK ck_fifo_mpmc" }
    package static var discipline: QueueDiscipline { .fifo }
    package init() { handle = ilk_peer_ck_fifo_create()! }
    deinit { ilk_peer_ck_fifo_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_ck_fifo_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_ck_fifo_take(handle, &value) ? value : nil
    }
}

/// pthread mutex + ring (FIFO).
package final class MutexRingQueue: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "pthread mutex + ring" }
    package static var discipline: QueueDiscipline { .fifo }
    package init() { handle = ilk_peer_mutex_ring_create()! }
    deinit { ilk_peer_mutex_ring_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_mutex_ring_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_mutex_ring_take(handle, &value) ? value : nil
    }
}

/// Boost.Lockfree queue (FIFO).
package final class BoostQueue: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "Boost.Lockfree queue" }
    package static var discipline: QueueDiscipline { .fifo }
    package init() { handle = ilk_peer_boost_queue_create()! }
    deinit { ilk_peer_boost_queue_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_boost_queue_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_boost_queue_take(handle, &value) ? value : nil
    }
}

/// liburcu cds_lfs (LIFO).
package final class URCULockFreeStack: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "liburcu cds_lfs" }
    package static var discipline: QueueDiscipline { .lifo }
    package init() { handle = ilk_peer_urcu_lfs_create()! }
    deinit { ilk_peer_urcu_lfs_destroy(handle) }
    package func drain() { ilk_peer_urcu_drain() }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_urcu_lfs_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_urcu_lfs_take(handle, &value) ? value : nil
    }
}

/// CK ck_stack (LIFO).
package final class CKStack: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "CK ck_stack" }
    package static var discipline: QueueDiscipline { .lifo }
    package init() { handle = ilk_peer_ck_stack_create()! }
    deinit { ilk_peer_ck_stack_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_ck_stack_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_ck_stack_take(handle, &value) ? value : nil
    }
}

/// pthread mutex + array (LIFO).
package final class MutexArrayStack: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "pthread mutex + array" }
    package static var discipline: QueueDiscipline { .lifo }
    package init() { handle = ilk_peer_mutex_stack_create()! }
    deinit { ilk_peer_mutex_stack_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_mutex_stack_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_mutex_stack_take(handle, &value) ? value : nil
    }
}

/// Boost.Lockfree stack (LIFO).
package final class BoostStack: QueueContender, @unchecked Sendable {
    // SAFETY: the handle is created in init, destroyed in deinit, and the C functions are
    // safe to call from any number of threads at once (see the header).
    @usableFromInline let handle: OpaquePointer
    package static var contenderName: String { "Boost.Lockfree stack" }
    package static var discipline: QueueDiscipline { .lifo }
    package init() { handle = ilk_peer_boost_stack_create()! }
    deinit { ilk_peer_boost_stack_destroy(handle) }
    @inlinable @inline(__always) package func put(_ value: UInt) { ilk_peer_boost_stack_put(handle, value) }
    @inlinable @inline(__always) package func take() -> UInt? {
        var value: UInt = 0
        return ilk_peer_boost_stack_take(handle, &value) ? value : nil
    }
}
