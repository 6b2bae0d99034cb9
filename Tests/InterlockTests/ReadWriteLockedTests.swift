// Tests of ReadWriteLocked<Value>: readers overlap, a writer excludes everyone, writers are not
// starved by a stream of readers, typed errors release the lock, the timed forms, and the
// conditional Sendable conformance.

import CInterlock
import Testing

@testable import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Compile-time check: `Sendable` without `@unchecked` when the value is.
private final class RouteTable: Sendable {
    let routes = ReadWriteLocked<[String: String]>([:])
}

private enum RouteError: Error, Equatable {
    case missing(String)
}

@Suite("ReadWriteLocked")
struct ReadWriteLockedTests {
    @Test("two readers are inside at the same time")
    func readersOverlap() {
        let locked = ReadWriteLocked(7)
        let inside = AtomicInt(0)
        let bothInside = AtomicBool(false)
        runConcurrently(threadCount: 2) { _ in
            locked.withReadLock { value in
                #expect(value == 7)
                _ = inside.add(1)
                // Each reader stays until it has seen the other inside: only overlapping
                // readers get out (bounded, so a failure is an expectation, not a hang).
                if lockEventually({ inside.load() == 2 }) { bothInside.store(true) }
            }
        }
        #expect(bothInside.load(), "the second reader could not enter while the first was inside")
    }

    @Test("a writer excludes readers and writers: a two-field invariant is never seen torn")
    func writerExcludes() {
        struct Pair { var a = 0, b = 0 }
        let locked = ReadWriteLocked(Pair())
        let rounds = TestScale.count(20_000, small: 500)
        let torn = AtomicInt(0)
        runConcurrently(threadCount: 4) { index in
            for _ in 0..<rounds {
                if index < 2 {
                    locked.withWriteLock { pair in
                        if pair.a != pair.b { _ = torn.add(1) }
                        pair.a += 1
                        pair.b += 1
                    }
                } else {
                    locked.withReadLock { pair in if pair.a != pair.b { _ = torn.add(1) } }
                }
            }
        }
        #expect(torn.load() == 0)
        #expect(locked.withReadLock { $0.a } == 2 * rounds)
    }

    @Test("while a writer waits, new readers wait behind it: a timed read times out, the writer gets in")
    func writersNotStarved() {
        let locked = ReadWriteLocked(0)
        let readerInside = AtomicBool(false)
        let releaseReader = AtomicBool(false)
        let reader = TestThread {
            locked.withReadLock { _ in
                readerInside.store(true)
                spinUntil { releaseReader.load() }
            }
        }
        spinUntil { readerInside.load() }
        let writerDone = AtomicBool(false)
        let writer = TestThread {
            locked.withWriteLock { $0 = 1 }
            writerDone.store(true)
        }
        // Once the writer has claimed the lock (it waits for the reader), a new reader is refused.
        #expect(
            lockEventually { locked.withReadLock(before: .now - .seconds(1)) { _ in true } == nil },
            "new readers kept getting in while a writer waited")
        expectTimedOut(
            timedAttempt(after: .milliseconds(20)) { deadline in
                locked.withReadLock(before: deadline) { _ in true } != nil
            })
        #expect(!writerDone.load())
        releaseReader.store(true)
        reader.join()
        writer.join()
        #expect(locked.withReadLock { $0 } == 1)
    }

    @Test("withWriteLock(before:) on a read-locked value returns nil no earlier than its deadline")
    func timedWriteTimesOut() {
        let locked = ReadWriteLocked("a")
        let inside = AtomicBool(false)
        let release = AtomicBool(false)
        let reader = TestThread {
            locked.withReadLock { _ in
                inside.store(true)
                spinUntil { release.load() }
            }
        }
        spinUntil { inside.load() }
        expectTimedOut(
            timedAttempt(after: .milliseconds(20)) { deadline in
                locked.withWriteLock(before: deadline) { $0 = "b" } != nil
            })
        release.store(true)
        reader.join()
        #expect(
            locked.withWriteLock(before: .now + lockStallLimit) { value -> Int in
                value = "c"
                return 1
            } == 1)
        #expect(locked.withReadLock(before: .now - .seconds(1)) { $0 } == "c")
    }

    @Test("a typed error from either side propagates with its type, and the lock is released")
    func typedErrors() {
        let table = RouteTable()
        table.routes.withWriteLock { $0["/"] = "index" }
        do {
            _ = try table.routes.withReadLock { (routes: borrowing [String: String]) throws(RouteError) -> String in
                guard let target = routes["/missing"] else { throw .missing("/missing") }
                return target
            }
            Issue.record("the read should have thrown")
        } catch {
            #expect(error == .missing("/missing"))
        }
        do {
            try table.routes.withWriteLock { (routes: inout [String: String]) throws(RouteError) in
                routes["/half"] = "written"
                throw .missing("/other")
            }
            Issue.record("the write should have thrown")
        } catch {
            #expect(error == .missing("/other"))
        }
        // Released both times: a write with a past deadline (a try) succeeds at once, and the
        // change made before the throw stayed (the body owns what it did).
        #expect(table.routes.withWriteLock(before: .now - .seconds(1)) { $0.count } == 2)
    }

    @Test("the value sits after the lock's words in the same allocation")
    func oneAllocation() {
        let locked = ReadWriteLocked(UInt64(0xbeef))
        let object = UnsafeMutableRawPointer(Unmanaged.passUnretained(locked).toOpaque())
        let state = UnsafeMutableRawPointer(locked._statePointer)
        #expect(state == object + 16)
        let valueOffset = MemoryLayout<ilk_rwlock_words>.size
        #expect(state.load(fromByteOffset: valueOffset, as: UInt64.self) == 0xbeef)
    }
}
