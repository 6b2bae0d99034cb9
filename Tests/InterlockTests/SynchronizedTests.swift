// Tests of synchronized(_:_:): exclusion per object, re-entry (within and beyond the per-thread
// held stack), release when the body throws, no waiting between distinct objects (even when
// their addresses share a bucket of the table), no deadlock when distinct objects are nested in
// opposite orders, and memory that follows the objects locked at once, not the objects ever
// locked. Every wait that a defect could turn into a hang is bounded (`lockStallLimit`).
//
// The suite runs serialized: the memory tests count the table's records, which only this
// suite's tests create.

import CInterlock
import Testing

@_spi(Diagnostics) @testable import Interlock

@Suite("synchronized", .serialized)
struct SynchronizedTests {
    @Test("a plain counter incremented inside synchronized(x) by several threads ends exact")
    func exclusion() {
        let counter = SyncCounter()
        let violations = LockGuarded(0)  // written only inside synchronized(counter)
        let (threads, rounds) = (4, TestScale.count(20_000, small: 500))
        runConcurrently(threadCount: threads) { _ in
            for _ in 0..<rounds {
                synchronized(counter) {
                    let entry = counter.value
                    for _ in 0..<10 { counter.value += 1 }
                    if counter.value != entry + 10 { violations.value += 1 }
                    counter.value -= 9
                }
            }
        }
        #expect(violations.value == 0)
        #expect(counter.value == threads * rounds)
    }

    @Test("objects sharing a bucket each keep their own exclusion")
    func exclusionPerObjectInOneBucket() {
        let (objects, made) = syncCollidingObjects(3)
        let counters = objects.map { _ in SyncCounter() }  // counters[i] guarded by objects[i]
        let (threads, rounds) = (4, TestScale.count(20_000, small: 500))
        runConcurrently(threadCount: threads) { index in
            for round in 0..<rounds {
                let i = (index + round) % objects.count
                synchronized(objects[i]) {
                    let entry = counters[i].value
                    for _ in 0..<5 { counters[i].value += 1 }
                    if counters[i].value == entry + 5 { counters[i].value -= 4 } else { counters[i].value = -1_000_000 }
                }
            }
        }
        #expect(counters.map(\.value).reduce(0, +) == threads * rounds)
        #expect(counters.allSatisfy { $0.value > 0 })
        withExtendedLifetime(made) {}
    }

    @Test("returns the body's value and rethrows its error")
    func valueAndError() {
        let token = SyncToken()
        #expect(synchronized(token) { 42 } == 42)
        #expect(throws: LockTestError.self) { try synchronized(token) { throw LockTestError() } }
        #expect(ilk_sync_held_count() == 0)
    }

    @Test("re-entrant 3 deep on one thread; others wait until the outermost call returns")
    func reentrantThreeDeep() {
        let token = SyncToken()
        let depthReached = LockGuarded(0)
        let contender = LockGuarded<SyncContender?>(nil)
        let innerChecks = LockGuarded<[Bool]>([])
        let nester = AtomicBool(false)
        let worker = TestThread {
            synchronized(token) {
                synchronized(token) {
                    synchronized(token) {
                        depthReached.value = 3
                        contender.value = SyncContender(token)
                        innerChecks.value.append(contender.value!.sleepsEventually())
                    }
                    innerChecks.value.append(contender.value!.sleepsEventually())  // still held at depth 2
                }
                innerChecks.value.append(contender.value!.sleepsEventually())  // and at depth 1
            }
            nester.store(true)
        }
        #expect(lockEventually { nester.load() }, "the nested calls did not finish: re-entry deadlocked")
        guard nester.load() else { return }  // the worker hangs: leave it
        worker.join()
        #expect(depthReached.value == 3)
        #expect(innerChecks.value == [true, true, true], "another thread got in while the nest held the object")
        #expect(contender.value!.finishesEventually(), "the contender never got in after the nest returned")
    }

    @Test("re-entry deeper than the held stack stores: the table's owner check and depth")
    func reentrantBeyondHeldStack() {
        let count = Int(ILK_SYNC_HELD_SLOTS) + 4
        let objects = (0..<count).map { _ in SyncToken() }
        let deep = objects[count - 2]  // entered beyond the stored slots
        let checks = LockGuarded<[Bool]>([])
        let contenders = LockGuarded<[SyncContender]>([])
        let finished = AtomicBool(false)
        let heldAfter = LockGuarded<UInt32>(99)
        let worker = TestThread {
            func nest(_ level: Int) {
                if level == count {
                    synchronized(objects[0]) { synchronized(deep) { synchronized(deep) {} } }
                    // Both re-entries have returned: both objects must still be held.
                    contenders.value = [SyncContender(objects[0]), SyncContender(deep)]
                    checks.value = contenders.value.map { $0.sleepsEventually() }
                    return
                }
                synchronized(objects[level]) { nest(level + 1) }
            }
            nest(0)
            heldAfter.value = ilk_sync_held_count()
            finished.store(true)
        }
        #expect(lockEventually { finished.load() }, "re-entry beyond the held stack deadlocked")
        guard finished.load() else { return }  // the worker hangs: leave it
        worker.join()
        #expect(checks.value == [true, true], "an inner return released an object still held outside")
        #expect(heldAfter.value == 0)
        #expect(syncAllFinishEventually(contenders.value), "an object stayed locked after its outermost call")
    }

    @Test("the lock is released when the body throws, at any depth")
    func releasedOnThrow() {
        let shallow = SyncToken(), nested = SyncToken()
        let deepObjects = (0..<(Int(ILK_SYNC_HELD_SLOTS) + 2)).map { _ in SyncToken() }
        #expect(throws: LockTestError.self) { try synchronized(shallow) { throw LockTestError() } }
        #expect(throws: LockTestError.self) {
            try synchronized(nested) { try synchronized(nested) { try synchronized(nested) { throw LockTestError() } } }
        }
        #expect(throws: LockTestError.self) {
            func nest(_ level: Int) throws {
                if level == deepObjects.count {
                    try synchronized(deepObjects[level - 1]) { throw LockTestError() }  // owner path
                }
                try synchronized(deepObjects[level]) { try nest(level + 1) }
            }
            try nest(0)
        }
        #expect(ilk_sync_held_count() == 0)
        let contenders = ([shallow, nested] + deepObjects).map(SyncContender.init)
        #expect(syncAllFinishEventually(contenders), "an object stayed locked after a throw")
    }

    @Test("a thread holding x does not stop another from entering y, y in x's bucket")
    func distinctObjectsDoNotBlock() {
        let (pair, made) = syncCollidingObjects(2)
        let (x, y) = (pair[0], pair[1])
        let aHolds = AtomicBool(false), bDone = AtomicBool(false), aSawB = AtomicBool(false)
        let a = TestThread {
            synchronized(x) {
                aHolds.store(true)
                aSawB.store(lockEventually { bDone.load() })
            }
        }
        let b = TestThread {
            spinUntil { aHolds.load() }
            synchronized(y) {}
            bDone.store(true)
        }
        a.join()  // bounded by A's own wait
        #expect(aSawB.load(), "synchronized(y) waited for synchronized(x)")
        if lockEventually({ bDone.load() }) { b.join() }
        withExtendedLifetime(made) {}
    }

    @Test("distinct objects nested in opposite orders, bucket-mates pairwise, do not deadlock")
    func oppositeNestingOnCollidingObjects() {
        var keep: [SyncToken] = []
        for _ in 0..<TestScale.count(8, small: 3) {
            let (xs, madeX) = syncCollidingObjects(2)
            let (ys, madeY) = syncCollidingObjects(2, avoiding: [xs[0]])
            keep += madeX + madeY
            let (x1, x2, y1, y2) = (xs[0], xs[1], ys[0], ys[1])
            let oneHolds = AtomicBool(false), twoHolds = AtomicBool(false)
            let oneDone = AtomicBool(false), twoDone = AtomicBool(false)
            // Each thread holds its outer object until the other holds its own, then nests:
            // a table striped by bucket would make each wait for the other's bucket.
            let one = TestThread {
                synchronized(x1) {
                    oneHolds.store(true)
                    _ = lockEventually { twoHolds.load() }
                    synchronized(y1) {}
                }
                oneDone.store(true)
            }
            let two = TestThread {
                synchronized(y2) {
                    twoHolds.store(true)
                    _ = lockEventually { oneHolds.load() }
                    synchronized(x2) {}
                }
                twoDone.store(true)
            }
            let finished = lockEventually { oneDone.load() && twoDone.load() }
            #expect(finished, "threads nesting distinct objects in opposite orders deadlocked")
            guard finished else { return }  // the threads hang: leave them
            one.join()
            two.join()
        }
        withExtendedLifetime(keep) {}
    }

    @Test("locking a million fresh objects from several threads leaves a small table")
    func memoryStaysFlat() {
        let before = SynchronizedCensus.take()
        let (threads, perThread) = (4, TestScale.count(300_000, small: 5_000))
        let entered = LockGuarded([Int](repeating: 0, count: threads))
        let addresses = LockGuarded(Set<UInt>())
        runConcurrently(threadCount: threads) { index in
            let (count, seen) = syncChurnFreshObjects(perThread)
            synchronized(entered) {
                entered.value[index] = count
                addresses.value.formUnion(seen)
            }
        }
        #expect(entered.value == [Int](repeating: perThread, count: threads))
        let after = SynchronizedCensus.take()
        let bound = 2 * SynchronizedCensus.bucketCount + 4 * threads
        // The objects had many more addresses than the bound: a table keeping a record per
        // address ever locked would exceed it.
        #expect(addresses.value.count > 4 * bound, "only \(addresses.value.count) addresses were locked")
        #expect(after.inUse == 0)
        #expect(after.linked <= bound, "\(after.linked) records for \(threads * perThread) objects")
        #expect(after.linked == after.allocated - after.freed, "records lost or double counted: \(after)")
        // Recycling: allocations are rare (only when more records of one bucket are in use at
        // once than it has), nothing like one per object.
        #expect(
            after.allocated - before.allocated <= threads * perThread / 20,
            "\(after.allocated - before.allocated) records allocated for \(threads * perThread) objects")
    }

    @Test("one thread locking fresh objects reuses records: at most one allocation per bucket")
    func recordsAreRecycled() {
        let before = SynchronizedCensus.take()
        let (count, addresses) = syncChurnFreshObjects(TestScale.count(200_000, small: 5_000))
        let after = SynchronizedCensus.take()
        #expect(count == TestScale.count(200_000, small: 5_000))
        #expect(addresses.count > 8 * SynchronizedCensus.bucketCount)
        #expect(after.allocated - before.allocated <= SynchronizedCensus.bucketCount)
        #expect(after.inUse == 0)
        #expect(after.linked <= 2 * SynchronizedCensus.bucketCount)
        // A record left by an object is reused by another object of its bucket at once.
        let (pair, made) = syncCollidingObjects(2)
        synchronized(pair[0]) {}
        let reused = SynchronizedCensus.take()
        synchronized(pair[1]) {}
        #expect(SynchronizedCensus.take().allocated == reused.allocated)
        withExtendedLifetime(made) {}
    }

    @Test("the records of a burst of objects held at once are freed again as the table is used")
    func burstIsTrimmed() {
        let burst = 1_000
        let objects = (0..<burst).map { _ in SyncToken() }
        let peak = LockGuarded(SynchronizedCensus())
        let done = AtomicBool(false)
        // Nested on a thread of its own: 1,000 levels want more stack than a test task has.
        let worker = TestThread {
            func nest(_ level: Int) {
                if level == burst { peak.value = SynchronizedCensus.take(); return }
                synchronized(objects[level]) { nest(level + 1) }
            }
            nest(0)
            done.store(true)
        }
        #expect(lockEventually { done.load() })
        guard done.load() else { return }
        worker.join()
        #expect(peak.value.inUse == burst)
        #expect(SynchronizedCensus.take().linked >= burst)  // spares now, until claims pass by
        // Claims that find no record for their object trim each bucket they visit to one spare
        // besides the record they take.
        let (count, addresses) = syncChurnFreshObjects(TestScale.count(50_000, small: 5_000))
        #expect(count == TestScale.count(50_000, small: 5_000))
        #expect(addresses.count > 8 * SynchronizedCensus.bucketCount)
        let after = SynchronizedCensus.take()
        #expect(after.linked <= 2 * SynchronizedCensus.bucketCount, "\(after.linked) records left after the burst")
        #expect(after.linked == after.allocated - after.freed)
        withExtendedLifetime(objects) {}
    }

    @Test("a record in use is counted; it is a spare once the call returns")
    func censusInUse() {
        let token = SyncToken()
        let inside = synchronized(token) { synchronized(token) { SynchronizedCensus.take() } }
        #expect(inside.inUse == 1)
        #expect(SynchronizedCensus.take().inUse == 0)
    }

    @Test("a release by a thread that does not hold the record traps as an internal error")
    func releaseByNonOwnerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let token = SyncToken()
            let key = UInt(bitPattern: ObjectIdentifier(token))
            nonisolated(unsafe) let record = _SynchronizedTable.acquire(key)
            TestThread { _SynchronizedTable.release(record) }.join()
        }
        expectTrapMessage(result, contains: "synchronized(_:_:): internal error", "which does not hold it")
    }
}
