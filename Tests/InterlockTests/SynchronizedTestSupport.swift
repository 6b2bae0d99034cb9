// Helpers of the synchronized(_:_:) tests: objects to lock, objects whose addresses fall in the
// same bucket of the table, and a contender thread whose progress a test can observe (started,
// asleep in the kernel, inside the body, done) without sleeping for it.

import CInterlock
import Testing

@_spi(Diagnostics) @testable import Interlock

/// A class instance to lock; it has no state of its own.
final class SyncToken: Sendable {}

/// A class instance carrying a plain counter that only `synchronized(self)` keeps consistent.
final class SyncCounter: @unchecked Sendable {
    var value = 0
}

/// The table bucket of `object` (the internal hash).
func syncBucket(of object: AnyObject) -> UInt32 {
    _SynchronizedTable.bucketIndex(of: UInt(bitPattern: ObjectIdentifier(object)))
}

/// `count` distinct objects that all fall in one bucket other than those of `avoiding`, plus
/// every object made on the way (which the caller keeps alive, so that no address is reused
/// by a later allocation while the test runs).
func syncCollidingObjects(_ count: Int, avoiding: [AnyObject] = []) -> (objects: [SyncToken], made: [SyncToken]) {
    let excluded = Set(avoiding.map(syncBucket(of:)))
    var made: [SyncToken] = []
    var byBucket: [UInt32: [SyncToken]] = [:]
    while true {
        let token = SyncToken()
        made.append(token)
        let bucket = syncBucket(of: token)
        if excluded.contains(bucket) { continue }
        byBucket[bucket, default: []].append(token)
        if byBucket[bucket]!.count == count { return (byBucket[bucket]!, made) }
    }
}

/// A thread that enters `synchronized(object)` once, recording its progress in atomics.
final class SyncContender: Sendable {
    let tid = AtomicInt32(0)
    let entered = AtomicBool(false)
    let done = AtomicBool(false)
    private let thread: TestThread

    init(_ object: AnyObject & Sendable) {
        let (tid, entered, done) = (self.tid, self.entered, self.done)
        thread = TestThread {
            tid.store(Int32(bitPattern: ilk_current_thread_id()))
            synchronized(object) { entered.store(true) }
            done.store(true)
        }
    }

    /// Whether the contender is asleep in the kernel (in its futex wait), within the bound.
    func sleepsEventually() -> Bool {
        lockEventually { tid.load() != 0 && threadState(tid.load()) == "S" && !entered.load() }
    }

    /// Whether the contender got through, within the bound; joins it when it did.
    func finishesEventually() -> Bool {
        guard lockEventually({ done.load() }) else { return false }  // leaked: it hangs
        thread.join()
        return true
    }

    /// Joins the contender once it has got through.
    func join() { thread.join() }
}

/// Whether every contender got through within one bound; joins them when they all did (the
/// others hang, and are left).
func syncAllFinishEventually(_ contenders: [SyncContender]) -> Bool {
    guard lockEventually({ contenders.allSatisfy { $0.done.load() } }) else { return false }
    for contender in contenders { contender.join() }
    return true
}

/// Locks `count` fresh objects one after the other, each through a window of recently made
/// objects kept alive (so that their addresses vary over thousands of values instead of the
/// allocator handing back the last one freed), incrementing each object's counter inside.
/// - Returns: how many bodies ran, and the addresses that were locked.
func syncChurnFreshObjects(_ count: Int, window: Int = 2_048) -> (entered: Int, addresses: Set<UInt>) {
    var recent = [SyncCounter?](repeating: nil, count: window)
    var addresses = Set<UInt>()
    var entered = 0
    for i in 0..<count {
        let fresh = SyncCounter()
        recent[(i &* 7919) % window] = fresh  // replaces an older one, which dies
        addresses.insert(UInt(bitPattern: ObjectIdentifier(fresh)))
        synchronized(fresh) { fresh.value += 1 }
        entered += fresh.value
    }
    return (entered, addresses)
}
