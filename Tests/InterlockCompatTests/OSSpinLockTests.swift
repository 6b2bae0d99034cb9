// OSSpinLock: mutual exclusion from 4 threads on a plain counter, OSSpinLockTry, the
// initializer's value, and the trap on unlocking a lock that is not held.

import InterlockCompat
import Testing

@Suite("OSSpinLock")
struct OSSpinLockTests {
    @Test("OS_SPINLOCK_INIT is an unlocked OSSpinLock (0)")
    func initValue() {
        let value: OSSpinLock = OS_SPINLOCK_INIT
        #expect(value == 0)
    }

    @Test("OSSpinLockTry takes a free lock and fails on a held one")
    func tryLock() {
        var lock = OS_SPINLOCK_INIT
        #expect(OSSpinLockTry(&lock))
        #expect(!OSSpinLockTry(&lock))
        OSSpinLockUnlock(&lock)
        #expect(lock == 0)
        OSSpinLockLock(&lock)
        #expect(!OSSpinLockTry(&lock))
        OSSpinLockUnlock(&lock)
        #expect(OSSpinLockTry(&lock))
        OSSpinLockUnlock(&lock)
    }

    @Test("4 threads incrementing a plain counter under the lock lose no update")
    func exclusion() {
        let lock = UnsafeMutablePointer<OSSpinLock>.allocate(capacity: 1)
        lock.initialize(to: OS_SPINLOCK_INIT)
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        defer {
            lock.deallocate()
            counter.deallocate()
        }
        nonisolated(unsafe) let (l, c) = (lock, counter)
        compatRunThreads(4) { index in
            for i in 0..<100_000 {
                if (i + index) % 7 == 0 {
                    while !OSSpinLockTry(l) {}
                } else {
                    OSSpinLockLock(l)
                }
                c.pointee += 1  // a plain read-modify-write: torn without exclusion
                OSSpinLockUnlock(l)
            }
        }
        #expect(counter.pointee == 400_000)
        #expect(lock.pointee == 0)
    }

    @Test("OSSpinLockUnlock of a lock that is not held traps")
    func unlockUnlockedTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var lock = OS_SPINLOCK_INIT
            OSSpinLockUnlock(&lock)
        }
        compatExpectStderr(result, contains: "OSSpinLockUnlock: unlock of a lock that is not locked")
    }
}
