// The recording side of contention profiling: what each primitive's slow path calls
// (ContentionProfiling.swift has the public face, ilk_contention.c the site table).
//
// Compiled only with the package trait ContentionProfiling (INTERLOCK_CONTENTION). Each
// primitive brackets a contended wait, on its slow path only, in `#if INTERLOCK_CONTENTION`:
//
//   let probe = _Contention.begin()          // 0 unless on and this wait is sampled
//   ... the wait ...
//   if probe != 0 { _Contention.end(probe, .lock, self, hold: word) }
//
// States of one contended acquisition:
//
//   begin   off: one relaxed load of ilk_contention_state, returns 0. On: the per-thread
//           sampling decision (1 in N), then the monotonic clock: the probe is the start time.
//   end     the wait's length; a backtrace (the call site); the site's counters; for the
//           mutex-word locks (hold: word), a hold in progress: the word is marked contended (2)
//           so that its release takes the unlock's slow path, where `released` finds the hold.
//   released  (the unlock's slow path, when on and the thread tracks holds) the hold's length
//           into the site; past INTERLOCK_HOLD_WARN_MS, one warning per site.
//   hold warnings for holders that did not wait: with INTERLOCK_HOLD_WARN_MS set, a recorded
//           waiter on a mutex word notes its start in a small table keyed by the word
//           (ilk_contention.h) and forgets it once it has the mutex; the release that ends the
//           wait (the unlock's slow path: a waiter made the word 2) finds a note older than the
//           threshold and warns with the releasing thread's backtrace, once per release site.
//           This catches the common case, a holder that took the lock freely and held it long
//           while others queued, without touching its uncontended acquisition.
//
// Invariants:
//   - Nothing runs on an uncontended path: acquisitions that take the fast path, and releases
//     that find the word at 1, never reach this file.
//   - Marking a held mutex word 2 is always allowed (ilk MutexWord.swift: 2 only says "maybe
//     waiters"); it costs the holder's release one futex wake that may find nobody.
//   - A thread inside the profiler (reading a name, recording) is not profiled itself: the
//     reentrancy guard makes its own waits unsampled.
//   - A hold in progress lives in one table keyed by the mutex word (ilk_contention.c), so the
//     release ends it on whichever thread makes it (a Lock may be released by another thread).
//   - Warnings are printed after the release has freed the word and woken a waiter, so that the
//     profiler's printing never lengthens the time nobody can take the mutex.
//   - Task waits are keyed by the primitive, not by the awaiting caller: when the wait ends, the
//     callers are async frames that a frame-pointer walk does not follow on Linux, and Swift's
//     own Backtrace.capture() returns a single frame inside a task there (Swift 6.3.1; its
//     `.fast` algorithm crashed in a test program), so all task waits on one primitive form one
//     site.
#if INTERLOCK_CONTENTION
import CInterlock
import CInterlockContention

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What waited: the kind of a site, as reports name it.
@usableFromInline
internal enum _ContentionKind: UInt8, Sendable, CaseIterable {
    case lock
    case spinLock
    case recursiveLock
    case readWriteLockRead
    case readWriteLockWrite
    case condition
    case conditionReacquire
    case conditionLock
    case conditionLockWhen
    case semaphore
    case semaphoreAsync
    case waitGroup
    case waitGroupAsync
    case synchronized
    case locked
    case readWriteLockedRead
    case readWriteLockedWrite
    case channelSend
    case channelReceive
    case channelSendAsync
    case channelReceiveAsync
    case distributedLock
    case postgresLock
    case postgresSemaphore

    /// The kind's name in reports and in `ContentionProfile.Site.kind`.
    var label: String {
        switch self {
        case .lock: "Lock"
        case .spinLock: "SpinLock"
        case .recursiveLock: "RecursiveLock"
        case .readWriteLockRead: "ReadWriteLock.read"
        case .readWriteLockWrite: "ReadWriteLock.write"
        case .condition: "Condition"
        case .conditionReacquire: "Condition.reacquire"
        case .conditionLock: "ConditionLock"
        case .conditionLockWhen: "ConditionLock.whenCondition"
        case .semaphore: "Semaphore"
        case .semaphoreAsync: "Semaphore.async"
        case .waitGroup: "WaitGroup"
        case .waitGroupAsync: "WaitGroup.async"
        case .synchronized: "synchronized"
        case .locked: "Locked"
        case .readWriteLockedRead: "ReadWriteLocked.read"
        case .readWriteLockedWrite: "ReadWriteLocked.write"
        case .channelSend: "BoundedChannel.send"
        case .channelReceive: "BoundedChannel.receive"
        case .channelSendAsync: "BoundedChannel.send.async"
        case .channelReceiveAsync: "BoundedChannel.receive.async"
        case .distributedLock: "DistributedLock"
        case .postgresLock: "PostgresLock"
        case .postgresSemaphore: "PostgresSemaphore"
        }
    }

    /// Whether the primitive of this kind has a `name` (`_NamedLock`).
    var hasName: Bool {
        switch self {
        case .lock, .recursiveLock, .condition, .conditionReacquire, .conditionLock, .conditionLockWhen, .locked:
            true
        default: false
        }
    }

    /// The kind whose raw value a site stores; `nil` for the "other" site (0xFF).
    static func of(raw: UInt8) -> _ContentionKind? { _ContentionKind(rawValue: raw) }
}

/// The slow paths' calls (the file comment).
@usableFromInline
internal enum _Contention {
    /// Whether profiling is on in this process: the settings' lazy initialisation the first
    /// time, then one relaxed load.
    @inline(__always)
    static var isOn: Bool {
        // Relaxed: the cached state is all that is read (ilk_contention.h).
        let state = ilk_contention_state_cached()
        if _fastPath(state == 1) { return false }
        if state == 2 { return true }
        return _ContentionSettings.current.isOn
    }

    /// The start of a contended wait: 0 when nothing is to be recorded (off, not sampled, or
    /// inside the profiler), else the monotonic clock in nanoseconds (never 0).
    @usableFromInline
    static func begin() -> Int64 {
        guard _slowPath(isOn) else { return 0 }
        guard ilk_contention_sample() != 0 else { return 0 }
        return Swift.max(ilk_clock_monotonic_ns(), 1)
    }

    /// The end of a contended wait that `begin` started: records it at its site. `lock` is the
    /// primitive (its name and address); `hold`, for the mutex-word locks, the word the caller
    /// now holds, whose hold is then measured until its release.
    @usableFromInline @inline(never)
    static func end(
        _ probe: Int64, _ kind: _ContentionKind, _ lock: AnyObject,
        hold word: UnsafeMutablePointer<UInt32>? = nil
    ) {
        let now = ilk_clock_monotonic_ns()
        guard ilk_contention_enter() == 0 else { return }
        defer { ilk_contention_leave() }
        let address = UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque())
        // A dynamic cast only for the kinds that have a `name` (a failed cast is the slow kind).
        let named = kind.hasName ? (lock as? _NamedLock)?.name : nil
        let label = kind == .synchronized ? "synchronized(\(type(of: lock)))" : named
        let site = record(kind, address, label: label, byName: named != nil, wait: now - probe)
        if let word, site >= 0 {
            // Relaxed: the caller holds the mutex, so the word is 1 or 2 and only waiters'
            // exchanges (which also write 2) touch it; the holder's own release, later in
            // program order, reads this value or a later one (the file comment).
            ilk_atomic_store_u32(word, 2, ILK_ORDER_RELAXED)
            // The hold starts now, after the recording: the profiler's own time (a backtrace; a
            // new site's symbolized stack, far slower under ThreadSanitizer) is not the caller's.
            ilk_contention_push_hold(UnsafeRawPointer(word), site, ilk_clock_monotonic_ns())
        }
    }

    /// A wait that has no object of its own to name (a distributed lock's): `address` keys it,
    /// `label` names it.
    static func end(_ probe: Int64, _ kind: _ContentionKind, address: UnsafeRawPointer, label: String?) {
        let now = ilk_clock_monotonic_ns()
        guard ilk_contention_enter() == 0 else { return }
        defer { ilk_contention_leave() }
        _ = record(kind, address, label: label, byName: label != nil, wait: now - probe)
    }

    private static func record(
        _ kind: _ContentionKind, _ address: UnsafeRawPointer, label: String?, byName: Bool, wait: Int64
    ) -> Int32 {
        var created: Int32 = 0
        let site = withUnsafeTemporaryAllocation(
            of: UnsafeMutableRawPointer?.self, capacity: Int(ILK_CONTENTION_FRAMES)
        ) {
            buffer in
            // Skip `record` (the caller's return address into `end` is kept: dropped when shown).
            let count = ilk_contention_backtrace(buffer.baseAddress, 1)
            if let label {
                return label.withCString {
                    ilk_contention_record(
                        kind.rawValue, address, $0, byName ? 1 : 0, buffer.baseAddress, count, wait, &created)
                }
            }
            return ilk_contention_record(kind.rawValue, address, nil, 0, buffer.baseAddress, count, wait, &created)
        }
        // A new site: once, the stack that the Swift runtime can name from debug information
        // (ContentionSymbols.swift). About 140 µs, so never per wait.
        if created != 0 { _ContentionBacktraces.capture(for: site) }
        return site
    }

    /// What a release found to warn about, printed once the mutex is free (`warn`).
    @usableFromInline
    internal enum _HoldWarning {
        /// A waiter then held the lock `hold` ns (site `site`).
        case held(site: Int32, hold: Int64, threshold: Int64)
        /// A holder that did not wait kept a noted waiter waiting `waited` ns on `lock`.
        case keptWaiting(lock: Unmanaged<AnyObject>, waited: Int64, threshold: Int64)
    }

    /// The unlock's slow path of a mutex word, when on, before the word is freed: ends the hold
    /// of `word` recorded at its acquisition (by whichever thread took it), and takes a waiter's
    /// note. Returns what to warn about, for `warn` once the mutex is free: printing (a
    /// symbolication, a write to standard error) must not extend the time nobody can take it.
    @usableFromInline @inline(never)
    static func released(_ word: UnsafeMutablePointer<UInt32>) -> _HoldWarning? {
        let now = ilk_clock_monotonic_ns()
        let threshold = ilk_contention_hold_warn_ns()
        // A noted wait ends here for warnings (hold warnings on): taken even when unused below,
        // so that a later release does not find it.
        var waitedOn: UnsafeRawPointer? = nil
        let waitedSince = threshold > 0 ? ilk_contention_wait_take(UnsafeRawPointer(word), &waitedOn) : 0
        var since: Int64 = 0
        let site = ilk_contention_pop_hold(UnsafeRawPointer(word), &since)
        if site >= 0 {
            let hold = now - since
            ilk_contention_add_hold(site, hold)
            if threshold > 0 && hold > threshold {
                return ilk_contention_claim_warning(site) != 0
                    ? .held(site: site, hold: hold, threshold: threshold) : nil
            }
        }
        // A holder that took the mutex without waiting: a waiter noted when it began to wait.
        if waitedSince > 0 && now - waitedSince > threshold, let waitedOn {
            // SAFETY: the note's object is stored by the noted waiters, which keep it alive while
            // noted, under the slot's lock with the word (ilk_contention.c); it contains `word`,
            // so it is the object this thread is releasing, alive for its call.
            return .keptWaiting(
                lock: Unmanaged<AnyObject>.fromOpaque(waitedOn), waited: now - waitedSince, threshold: threshold)
        }
        return nil
    }

    /// Prints what `released` found, after the release (the releasing call keeps the lock alive).
    @usableFromInline @inline(never)
    static func warn(_ warning: _HoldWarning) {
        guard ilk_contention_enter() == 0 else { return }
        defer { ilk_contention_leave() }
        switch warning {
        case .held(let site, let hold, let threshold):
            _ContentionWarning.printHold(site: site, hold: hold, threshold: threshold)
        case .keptWaiting(let lock, let waited, let threshold):
            _ContentionWarning.printHeldWhileWaited(lock.takeUnretainedValue(), waited: waited, threshold: threshold)
        }
    }

    /// The unlock's slow path's test: on, and some hold is in progress or hold warnings are on.
    @inline(__always)
    static var tracksHolds: Bool {
        ilk_contention_state_cached() == 2
            && (ilk_contention_holds_in_progress() != 0 || ilk_contention_warns_holds() != 0)
    }

    /// Hold warnings: a recorded waiter notes when it began to wait on `word` (the file comment).
    static func waitBegan(_ word: UnsafeMutablePointer<UInt32>, _ lock: AnyObject, _ probe: Int64) {
        if ilk_contention_warns_holds() != 0 {
            let object = UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque())
            ilk_contention_wait_began(UnsafeRawPointer(word), object, probe)
        }
    }

    /// The waiter that noted `probe` has the mutex, or gave up.
    static func waitEnded(_ word: UnsafeMutablePointer<UInt32>, _ probe: Int64) {
        if ilk_contention_warns_holds() != 0 { ilk_contention_wait_ended(UnsafeRawPointer(word), probe) }
    }
}
#endif
