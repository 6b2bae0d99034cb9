// The contenders of the condition benchmarks: one type per peer, each doing the benchmark's
// loop its natural way. Interlock's types are used directly; Foundation's NSCondition and
// NSConditionLock; glibc's pthread condvar and the hand-written pthread condition lock come
// from the ConditionPeers C target (the ping-pong loop of the pthread peer runs in C).
//
// Shared data (the ping-pong `turn`) is a plain Int in its own allocation, protected by the
// contender's lock, as in real code.

import ConditionPeers
import Foundation
import Interlock

// MARK: - Condition ping-pong

/// One side of the ping-pong: `rounds` times, lock; wait until `turn == me`; set `turn = other`;
/// signal; unlock.
protocol PingPongContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func run(me: Int, other: Int, rounds: Int)
}

/// A plain Int at a stable address, for the `turn` of the Swift contenders.
final class PlainInt: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Int>
    init(_ value: Int) {
        pointer = .allocate(capacity: 1)
        pointer.initialize(to: value)
    }
    deinit { pointer.deallocate() }
}

/// Interlock's `Condition`.
final class InterlockConditionPingPong: PingPongContender, @unchecked Sendable {
    static var contenderName: String { "Interlock Condition" }
    let condition = Condition()
    let turn = PlainInt(0)

    func run(me: Int, other: Int, rounds: Int) {
        let turn = turn.pointer
        for _ in 0..<rounds {
            condition.lock()
            while turn.pointee != me { condition.wait() }
            turn.pointee = other
            condition.signal()
            condition.unlock()
        }
    }
}

/// Foundation's `NSCondition` (swift-corelibs-foundation: a pthread mutex and condvar).
final class NSConditionPingPong: PingPongContender, @unchecked Sendable {
    static var contenderName: String { "NSCondition" }
    let condition = NSCondition()
    let turn = PlainInt(0)

    func run(me: Int, other: Int, rounds: Int) {
        let turn = turn.pointer
        for _ in 0..<rounds {
            condition.lock()
            while turn.pointee != me { condition.wait() }
            turn.pointee = other
            condition.signal()
            condition.unlock()
        }
    }
}

/// glibc's pthread condvar and default mutex, the loop in C.
final class PthreadPingPong: PingPongContender, @unchecked Sendable {
    static var contenderName: String { "pthread condvar" }
    let peer = ilk_peer_pingpong_create()!

    deinit { ilk_peer_pingpong_destroy(peer) }

    func run(me: Int, other: Int, rounds: Int) {
        ilk_peer_pingpong_run(peer, Int32(me), Int32(other), Int32(rounds))
    }
}

// MARK: - Condition-lock hand-off

/// A lock carrying an integer condition, NSConditionLock's shape.
protocol HandOffContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func lock(when condition: Int)
    func unlock(with condition: Int)
}

/// Interlock's `ConditionLock`.
final class InterlockConditionLockHandOff: HandOffContender, @unchecked Sendable {
    static var contenderName: String { "Interlock ConditionLock" }
    let lock = ConditionLock(condition: 0)
    @inline(__always) func lock(when condition: Int) { lock.lock(whenCondition: condition) }
    @inline(__always) func unlock(with condition: Int) { lock.unlock(withCondition: condition) }
}

/// Foundation's `NSConditionLock`.
///
/// Through `lock(whenCondition:before:)` with a far but finite deadline: on this toolchain's
/// swift-corelibs-foundation, `lock(whenCondition:)` passes `Date.distantFuture` down to
/// `NSCondition.wait(until:)`, which traps (illegal instruction: an overflow converting the
/// date) as soon as the caller must wait. `lock(whenCondition:)` is exactly that call with
/// that deadline, so the algorithm measured is the same.
final class NSConditionLockHandOff: HandOffContender, @unchecked Sendable {
    static var contenderName: String { "NSConditionLock" }
    let lock = NSConditionLock(condition: 0)
    @inline(__always) func lock(when condition: Int) {
        guard lock.lock(whenCondition: condition, before: Date(timeIntervalSinceNow: 3_600)) else {
            fatalError("NSConditionLockHandOff: no hand-off for an hour")
        }
    }
    @inline(__always) func unlock(with condition: Int) { lock.unlock(withCondition: condition) }
}

/// The hand-written C condition lock: pthread mutex + condvar + int, broadcast on unlock.
final class PthreadConditionLockHandOff: HandOffContender, @unchecked Sendable {
    static var contenderName: String { "pthread mutex+condvar+int" }
    let peer = ilk_peer_condlock_create(0)!
    deinit { ilk_peer_condlock_destroy(peer) }
    @inline(__always) func lock(when condition: Int) { ilk_peer_condlock_lock_when(peer, condition) }
    @inline(__always) func unlock(with condition: Int) { ilk_peer_condlock_unlock_with(peer, condition) }
}

/// The design alternative to ConditionLock's waiter list, measured to justify it: Interlock's
/// `Condition` plus an Int, broadcasting on every unlock (every waiter wakes and re-checks).
final class BroadcastConditionLockHandOff: HandOffContender, @unchecked Sendable {
    static var contenderName: String { "Interlock Condition+Int broadcast (design alternative)" }
    let condition = Condition()
    let value = PlainInt(0)

    @inline(__always) func lock(when wanted: Int) {
        condition.lock()
        while value.pointer.pointee != wanted { condition.wait() }
    }

    @inline(__always) func unlock(with new: Int) {
        value.pointer.pointee = new
        condition.broadcast()
        condition.unlock()
    }
}
