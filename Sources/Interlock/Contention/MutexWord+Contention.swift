// The mutex word's acquisitions with contention profiling (ContentionRecorder.swift): the same
// fast path as `_MutexWord.lock`, and a slow path that brackets the wait with a probe. Used by
// every mutex-word lock in builds with the package trait ContentionProfiling only.
#if INTERLOCK_CONTENTION
extension _MutexWord {
    /// `lock(_:for:)`, recording a contended acquisition of `owner` as `kind`.
    @inlinable @inline(__always)
    internal static func lock(
        _ word: UnsafeMutablePointer<UInt32>, for user: _FutexUser, profiling owner: AnyObject, _ kind: _ContentionKind
    ) {
        if _slowPath(!tryLock(word)) { _lockSlowProfiled(word, user, owner, kind) }
    }

    /// `lock(_:before:for:)`, recording a contended acquisition of `owner` as `kind`.
    @inlinable @inline(__always)
    internal static func lock(
        _ word: UnsafeMutablePointer<UInt32>, before deadline: ContinuousClock.Instant, for user: _FutexUser,
        profiling owner: AnyObject, _ kind: _ContentionKind
    ) -> Bool {
        if _fastPath(tryLock(word)) { return true }
        return _lockSlowProfiled(word, before: deadline, user, owner, kind)
    }

    @usableFromInline @inline(never)
    internal static func _lockSlowProfiled(
        _ word: UnsafeMutablePointer<UInt32>, _ user: _FutexUser, _ owner: AnyObject, _ kind: _ContentionKind
    ) {
        let probe = _Contention.begin()
        if probe != 0 { _Contention.waitBegan(word, owner, probe) }
        _lockSlow(word, user)
        if probe != 0 {
            _Contention.waitEnded(word, probe)
            _Contention.end(probe, kind, owner, hold: word)
        }
    }

    @usableFromInline @inline(never)
    internal static func _lockSlowProfiled(
        _ word: UnsafeMutablePointer<UInt32>, before deadline: ContinuousClock.Instant, _ user: _FutexUser,
        _ owner: AnyObject, _ kind: _ContentionKind
    ) -> Bool {
        let probe = _Contention.begin()
        if probe != 0 { _Contention.waitBegan(word, owner, probe) }
        let taken = _lockSlow(word, before: deadline, user)
        if probe != 0 {
            _Contention.waitEnded(word, probe)
            // A wait that timed out is not an acquisition: nothing is recorded.
            if taken { _Contention.end(probe, kind, owner, hold: word) }
        }
        return taken
    }
}
#endif
