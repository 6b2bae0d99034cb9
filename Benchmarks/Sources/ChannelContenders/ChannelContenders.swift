// The contenders of the channel benchmarks: Interlock's BoundedChannel; the bounded buffer people
// write by hand (a pthread mutex, a ring, two condition variables: ChannelPeers); Dispatch's
// two-semaphore bounded buffer (DispatchSemaphore for room and items, the ring behind a
// Synchronization.Mutex); and Concurrency Kit's ck_ring, which never waits (its callers spin:
// the non-blocking reference, not the same guarantees: no sleeping, no close, no fairness).
// Shared by ChannelBenchmarks (package-benchmark) and Interleaved (interleaved rounds):
// package-visible, every hot member inlinable.

import ChannelPeers
import Dispatch
import Interlock
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A bounded channel of Ints, as each peer spells it.
package protocol ChannelContender: AnyObject, Sendable {
    static var contenderName: String { get }
    /// Whether it offers capacity 0 (a rendezvous).
    static var offersRendezvous: Bool { get }
    init(capacity: Int)
    func send(_ value: Int)
    func receive() -> Int
}

package final class InterlockChannel: ChannelContender, @unchecked Sendable {
    package static var contenderName: String { "Interlock BoundedChannel" }
    package static var offersRendezvous: Bool { true }
    package let channel: BoundedChannel<Int>
    package init(capacity: Int) { channel = BoundedChannel(capacity: capacity) }
    @inlinable @inline(__always) package func send(_ value: Int) {
        do { try channel.send(value) } catch { preconditionFailure("ChannelBenchmarks: the channel closed") }
    }
    @inlinable @inline(__always) package func receive() -> Int { channel.receive()! }
}

package final class CondvarRingChannel: ChannelContender, @unchecked Sendable {
    package static var contenderName: String { "pthread mutex + ring + 2 condvars" }
    package static var offersRendezvous: Bool { true }
    package let peer: OpaquePointer
    package init(capacity: Int) { peer = ilk_peer_condvar_ring_create(capacity) }
    deinit { ilk_peer_condvar_ring_destroy(peer) }
    @inlinable @inline(__always) package func send(_ value: Int) {
        ilk_peer_condvar_ring_send(peer, UInt(bitPattern: value))
    }
    @inlinable @inline(__always) package func receive() -> Int { Int(bitPattern: ilk_peer_condvar_ring_receive(peer)) }
}

package final class DispatchSemaphoreChannel: ChannelContender, @unchecked Sendable {
    package static var contenderName: String { "DispatchSemaphore bounded buffer" }
    package static var offersRendezvous: Bool { true }
    package struct Ring {
        package var slots: [Int]
        package var head = 0
        package var count = 0
    }
    package let spaces: DispatchSemaphore
    package let items = DispatchSemaphore(value: 0)
    /// A rendezvous' acknowledgements (capacity 0 only).
    package let acks = DispatchSemaphore(value: 0)
    package let rendezvous: Bool
    package let ring: Mutex<Ring>
    package init(capacity: Int) {
        rendezvous = capacity == 0
        spaces = DispatchSemaphore(value: Swift.max(capacity, 1))
        ring = Mutex(Ring(slots: [Int](repeating: 0, count: Swift.max(capacity, 1))))
    }
    @inlinable @inline(__always) package func send(_ value: Int) {
        spaces.wait()
        ring.withLock { ring in
            ring.slots[(ring.head + ring.count) % ring.slots.count] = value
            ring.count += 1
        }
        items.signal()
        if rendezvous {
            acks.wait()
            spaces.signal()
        }
    }
    @inlinable @inline(__always) package func receive() -> Int {
        items.wait()
        let value = ring.withLock { ring in
            let value = ring.slots[ring.head]
            ring.head = (ring.head + 1) % ring.slots.count
            ring.count -= 1
            return value
        }
        if rendezvous { acks.signal() } else { spaces.signal() }
        return value
    }
}

package final class CKRingChannel: ChannelContender, @unchecked Sendable {
    package static var contenderName: String { "Concurrency Kit ck_ring (spins)" }
    package static var offersRendezvous: Bool { false }
    package let peer: OpaquePointer
    package init(capacity: Int) { peer = ilk_peer_ck_ring_create(capacity) }
    deinit { ilk_peer_ck_ring_destroy(peer) }
    @inlinable @inline(__always) package func send(_ value: Int) {
        var failures = 0
        while !ilk_peer_ck_ring_try_send(peer, UInt(bitPattern: value)) {
            failures += 1
            if failures & 63 == 0 { sched_yield() }
        }
    }
    @inlinable @inline(__always) package func receive() -> Int {
        var value: UInt = 0
        var failures = 0
        while !ilk_peer_ck_ring_try_receive(peer, &value) {
            failures += 1
            if failures & 63 == 0 { sched_yield() }
        }
        return Int(bitPattern: value)
    }
}
