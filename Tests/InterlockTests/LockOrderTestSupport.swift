// Helpers of the lock-order checking tests (LockOrder*Tests.swift). Every case runs in a child
// process (a Swift Testing exit test) that first sets INTERLOCK_LOCK_ORDER, which the library
// reads once, at the first lock operation. Scenarios take locks on new threads that run one
// after the other (each joined before the next starts): the two orders of an inversion happen
// on different threads but never overlap, so nothing ever really deadlocks.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The start of every report the checker prints.
let lockOrderReportHeader = "Interlock lock-order violation"

/// The trap message of `INTERLOCK_LOCK_ORDER=trap`.
let lockOrderTrapMessage = "LockOrderChecking: lock-order violation"

/// In a child process: sets the mode. Call it before any lock is touched.
func setLockOrderMode(_ mode: String) {
    setenv("INTERLOCK_LOCK_ORDER", mode, 1)
}

/// An object for `synchronized`.
final class LockOrderToken: Sendable {}

/// One way of taking one lock: blocking (`hold`) and, where the type has them, without waiting
/// (`tryHold`) and with a deadline (`holdBefore`). Each runs `body` holding the lock, then
/// releases it; the last two return whether they took it (and ran `body`).
struct LockUse: Sendable {
    let hold: @Sendable (_ body: () -> Void) -> Void
    var tryHold: (@Sendable (_ body: () -> Void) -> Bool)? = nil
    var holdBefore: (@Sendable (_ deadline: ContinuousClock.Instant, _ body: () -> Void) -> Bool)? = nil

    /// The uses built from a type's primitives: `take` and `release` always, `tryTake` and
    /// `takeBefore` where the type has them.
    static func of(
        take: @escaping @Sendable () -> Void, release: @escaping @Sendable () -> Void,
        tryTake: (@Sendable () -> Bool)? = nil,
        takeBefore: (@Sendable (ContinuousClock.Instant) -> Bool)? = nil
    ) -> LockUse {
        LockUse(
            hold: { body in
                take()
                body()
                release()
            },
            tryHold: tryTake.map { tryTake in
                { @Sendable body in
                    guard tryTake() else { return false }
                    body()
                    release()
                    return true
                }
            },
            holdBefore: takeBefore.map { takeBefore in
                { @Sendable deadline, body in
                    guard takeBefore(deadline) else { return false }
                    body()
                    release()
                    return true
                }
            })
    }

    static func lock(_ lock: Lock) -> LockUse {
        of(take: lock.lock, release: lock.unlock, tryTake: lock.tryLock, takeBefore: { lock.lock(before: $0) })
    }

    static func spinLock(_ lock: SpinLock) -> LockUse {
        of(take: lock.lock, release: lock.unlock, tryTake: lock.tryLock)
    }

    static func recursiveLock(_ lock: RecursiveLock) -> LockUse {
        of(take: lock.lock, release: lock.unlock, tryTake: lock.tryLock, takeBefore: { lock.lock(before: $0) })
    }

    static func read(_ lock: ReadWriteLock) -> LockUse {
        of(
            take: lock.lockRead, release: lock.unlockRead, tryTake: lock.tryLockRead,
            takeBefore: { lock.lockRead(before: $0) })
    }

    static func write(_ lock: ReadWriteLock) -> LockUse {
        of(
            take: lock.lockWrite, release: lock.unlockWrite, tryTake: lock.tryLockWrite,
            takeBefore: { lock.lockWrite(before: $0) })
    }

    /// A `Locked` through its three closure forms.
    static func locked(_ locked: Locked<Int>) -> LockUse {
        LockUse(
            hold: { body in locked.withLock { _ in body() } },
            tryHold: { body in locked.withLockIfAvailable { _ in body() } != nil },
            holdBefore: { deadline, body in locked.withLock(before: deadline) { _ in body() } != nil })
    }

    /// A `ReadWriteLocked` read (`write` false) or written.
    static func readWriteLocked(_ locked: ReadWriteLocked<Int>, write: Bool) -> LockUse {
        LockUse(
            hold: { body in
                if write { locked.withWriteLock { _ in body() } } else { locked.withReadLock { _ in body() } }
            },
            holdBefore: { deadline, body in
                write
                    ? locked.withWriteLock(before: deadline) { _ in body() } != nil
                    : locked.withReadLock(before: deadline) { _ in body() } != nil
            })
    }

    static func condition(_ condition: Condition) -> LockUse {
        of(take: condition.lock, release: condition.unlock, tryTake: condition.tryLock)
    }

    /// A ConditionLock taken with `lock()`, `tryLock()` and `lock(before:)`.
    static func conditionLock(_ lock: ConditionLock) -> LockUse {
        of(take: lock.lock, release: lock.unlock, tryTake: lock.tryLock, takeBefore: { lock.lock(before: $0) })
    }

    /// A ConditionLock taken when its condition is `condition` (which must already hold: the
    /// scenarios never wait for it), and released keeping it.
    static func conditionLock(_ lock: ConditionLock, whenCondition condition: Int) -> LockUse {
        of(
            take: { lock.lock(whenCondition: condition) }, release: { lock.unlock(withCondition: condition) },
            tryTake: { lock.tryLock(whenCondition: condition) },
            takeBefore: { lock.lock(whenCondition: condition, before: $0) })
    }

    static func synchronized(_ object: LockOrderToken) -> LockUse {
        LockUse(hold: { body in Interlock.synchronized(object) { body() } })
    }
}

/// Runs `body` on a new thread and returns once it has finished.
func onNewThread(_ body: @escaping @Sendable () -> Void) {
    let thread = TestThread(body)
    thread.join()
}

/// Takes `uses` in order, each while holding the ones before it (blocking), runs `body`, and
/// releases them in reverse order.
func holding(_ uses: ArraySlice<LockUse>, _ body: () -> Void = {}) {
    guard let first = uses.first else { return body() }
    first.hold { holding(uses.dropFirst(), body) }
}

/// `holding(uses)` on a new thread, joined before returning.
func nestOnNewThread(_ uses: LockUse...) {
    onNewThread { holding(uses[...]) }
}

/// The cycle uses[0] -> uses[1] -> ... -> uses[n-1] -> uses[0]: one edge per new thread, each
/// thread joined before the next starts, so the last edge closes the cycle without a deadlock.
func closeCycle(_ uses: [LockUse]) {
    for index in uses.indices {
        nestOnNewThread(uses[index], uses[(index + 1) % uses.count])
    }
}

/// A Lock with a name.
func namedLock(_ name: String) -> Lock {
    let lock = Lock()
    lock.name = name
    return lock
}

/// How reports write an address: `0x` and lowercase hex digits.
func lockOrderHex(_ object: AnyObject) -> String {
    "0x" + String(UInt(bitPattern: ObjectIdentifier(object)), radix: 16)
}

/// Writes `text` and a newline on standard error (markers that the parent reads back).
func writeToStandardError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}

/// What follows `prefix` in `text` up to the end of its line: a marker that the child wrote
/// with `writeToStandardError`.
func childMarker(_ prefix: String, in text: String) -> String? {
    guard let start = text.range(of: prefix)?.upperBound else { return nil }
    return String(text[start...].prefix { $0 != "\n" })
}

/// In a child process: the resident set size in KiB, or exit 4 when it cannot be read.
func residentKiBOrExit() -> Int {
    guard let kib = try? residentSetKiB() else { exit(4) }
    return kib
}

/// In a child process: runs `hang` on a thread of its own (it must report a violation and then
/// block forever) with standard error going to a pipe, reads the pipe until it has carried
/// `expected`, forwards what it read to the real standard error and exits 0; exits 3 when
/// `expected` has not come within a bound that only a missing report reaches.
func exitOnceReported(_ expected: String, hang: @escaping @Sendable () -> Void) -> Never {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { exit(4) }
    let realStandardError = dup(STDERR_FILENO)
    guard realStandardError >= 0, dup2(ends[1], STDERR_FILENO) >= 0 else { exit(4) }
    _ = TestThread(hang)  // never joined: it stays blocked until the process exits
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    let deadline = ContinuousClock.now + .seconds(60)
    while !String(decoding: received, as: UTF8.self).contains(expected), ContinuousClock.now < deadline {
        var poller = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 1000) > 0 else { continue }
        let count = read(ends[0], &buffer, buffer.count)
        guard count > 0 else { break }
        received += buffer[..<count]
    }
    received.withUnsafeBytes { bytes in _ = write(realStandardError, bytes.baseAddress, bytes.count) }
    _exit(String(decoding: received, as: UTF8.self).contains(expected) ? 0 : 3)
}

/// The child's standard error as text (nil when the exit-status expectation already failed).
func lockOrderStandardError(_ result: ExitTest.Result?) -> String? {
    result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) }
}

/// How many times `needle` occurs in `text` (without overlaps).
func occurrences(of needle: String, in text: String) -> Int {
    text.ranges(of: needle).count
}

/// Checks that the child printed exactly `reports` reports and every one of `fragments`.
func expectLockOrderOutput(
    _ result: ExitTest.Result?, reports: Int, contains fragments: [String] = [],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let text = lockOrderStandardError(result) else { return }
    let count = occurrences(of: lockOrderReportHeader, in: text)
    #expect(
        count == reports, "expected \(reports) report(s), found \(count); stderr:\n\(text)",
        sourceLocation: sourceLocation)
    for fragment in fragments {
        #expect(
            text.contains(fragment), "stderr should contain \"\(fragment)\"; it was:\n\(text)",
            sourceLocation: sourceLocation)
    }
}
