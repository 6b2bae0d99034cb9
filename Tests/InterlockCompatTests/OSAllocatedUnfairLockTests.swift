// OSAllocatedUnfairLock: a typical cache protected by it and filled from 4 threads, copies
// sharing one lock and state, the Void-state lock's lock()/unlock()/lockIfAvailable() and
// closure forms, withLockIfAvailable returning nil while another thread holds the lock, the
// ownership preconditions that hold, and those that fail trapping in a child process.

import InterlockCompat
import Testing

/// A typical client: a memoizing cache whose dictionary only the lock's closures touch.
private final class SquareCache: Sendable {
    private let entries = OSAllocatedUnfairLock(initialState: [Int: Int]())
    private let computations = OSAllocatedUnfairLock(initialState: 0)

    func square(of key: Int) -> Int {
        if let cached = entries.withLock({ $0[key] }) { return cached }
        computations.withLock { $0 += 1 }
        let value = key * key  // computed outside the lock, as such caches do
        return entries.withLock { entries in
            if let raced = entries[key] { return raced }
            entries[key] = value
            return value
        }
    }

    var count: Int { entries.withLock { $0.count } }
    var computed: Int { computations.withLock { $0 } }
}

@Suite("OSAllocatedUnfairLock")
struct OSAllocatedUnfairLockTests {
    @Test("a cache protected by the lock, filled from 4 threads, holds one entry per key")
    func cache() {
        let cache = SquareCache()
        compatRunThreads(4) { index in
            for round in 0..<2_000 {
                let key = (round * 7 + index) % 500
                guard cache.square(of: key) == key * key else { fatalError("wrong value for \(key)") }
            }
        }
        #expect(cache.count == 500)
        #expect(cache.computed >= 500)
    }

    @Test("withLock passes the state inout and returns the body's result; copies share it")
    func withLockAndCopies() throws {
        let lock = OSAllocatedUnfairLock(initialState: 1)
        let copy = lock
        #expect(
            lock.withLock { state -> Int in
                state += 41
                return state
            } == 42)
        #expect(copy.withLock { $0 } == 42)
        #expect(copy.withLockUnchecked { $0 * 2 } == 84)
        struct Boom: Error {}
        #expect(throws: Boom.self) { try lock.withLock { _ in throw Boom() } }
        #expect(lock.withLockIfAvailable { $0 } == 42, "the throwing body released the lock")
    }

    @Test("init(uncheckedState:) takes a non-Sendable state")
    func uncheckedState() {
        final class Box { var value = 0 }
        let lock = OSAllocatedUnfairLock(uncheckedState: Box())
        lock.withLockUnchecked { $0.value += 3 }
        #expect(lock.withLockUnchecked { $0.value } == 3)
        #expect(lock.withLockIfAvailableUnchecked { $0.value } == 3)
    }

    @Test("the Void-state lock: lock(), unlock(), lockIfAvailable() and the closure forms")
    func voidState() {
        let lock = OSAllocatedUnfairLock()
        lock.lock()
        lock.precondition(.owner)
        #expect(!lock.lockIfAvailable())
        #expect(lock.withLockIfAvailable { 1 } == nil)
        lock.unlock()
        lock.precondition(.notOwner)
        #expect(lock.lockIfAvailable())
        lock.unlock()
        #expect(lock.withLock { 2 } == 2)
        #expect(lock.withLockUnchecked { 3 } == 3)
        #expect(lock.withLockIfAvailable { 4 } == 4)
        #expect(lock.withLockIfAvailableUnchecked { 5 } == 5)
    }

    @Test("the flags forms (macOS 15, iOS 18) take the lock as the plain forms do")
    func flagsForms() {
        let counter = OSAllocatedUnfairLock(initialState: 0)
        #expect(
            counter.withLock(flags: .adaptiveSpin) {
                $0 += 1; return $0
            } == 1)
        #expect(
            counter.withLockUnchecked(flags: []) {
                $0 += 1; return $0
            } == 2)
        let lock = OSAllocatedUnfairLock()
        lock.lock(flags: .adaptiveSpin)
        lock.precondition(.owner)
        lock.unlock()
        #expect(lock.withLock(flags: .adaptiveSpin) { 3 } == 3)
        #expect(lock.withLockUnchecked(flags: .adaptiveSpin) { 4 } == 4)
    }

    @Test("withLockIfAvailable returns nil without waiting while another thread holds the lock")
    func ifAvailableWhileHeld() {
        let lock = OSAllocatedUnfairLock(initialState: 7)
        let held = CompatFlag()
        let release = CompatFlag()
        let holder = CompatTestThread {
            lock.withLock { _ in
                held.raise()
                release.wait(seconds: 60)
            }
        }
        #expect(held.wait(seconds: 60))
        #expect(lock.withLockIfAvailable { $0 } == nil)
        #expect(lock.withLockIfAvailableUnchecked { $0 } == nil)
        lock.precondition(.notOwner)
        release.raise()
        holder.join()
        #expect(lock.withLockIfAvailable { $0 } == 7)
    }

    @Test("precondition(.owner) and (.notOwner) hold inside and outside the lock")
    func preconditionsHold() {
        let lock = OSAllocatedUnfairLock(initialState: 0)
        lock.precondition(.notOwner)
        lock.withLock { _ in lock.precondition(.owner) }
        lock.precondition(.notOwner)
    }

    @Test("precondition(.owner) traps when the calling thread does not hold the lock")
    func preconditionOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = OSAllocatedUnfairLock(initialState: 0)
            lock.precondition(.owner)
        }
        compatExpectStderr(result, contains: "OSAllocatedUnfairLock: precondition(.owner) failed")
    }

    @Test("precondition(.notOwner) traps inside the lock")
    func preconditionNotOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = OSAllocatedUnfairLock(initialState: 0)
            lock.withLock { _ in lock.precondition(.notOwner) }
        }
        compatExpectStderr(result, contains: "OSAllocatedUnfairLock: precondition(.notOwner) failed")
    }
}
