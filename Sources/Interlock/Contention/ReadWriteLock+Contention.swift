// ReadWriteLock's and ReadWriteLocked's acquisitions with contention profiling
// (ContentionRecorder.swift): the fast paths of `_RWLockCore` (ReadWriteLockCore.swift, whose
// header argues their orderings) unchanged, and slow paths bracketed by a probe, the read and
// write sides recorded apart. Builds with the package trait ContentionProfiling only.
//
// Holds are not measured for either side: their releases (a reader's decrement, the writer's
// store) have no slow path that a recorded acquisition could force, as a mutex word's 2 does.
#if INTERLOCK_CONTENTION
import CInterlock

extension _RWLockCore {
    /// `lockRead()`, recording a contended acquisition of `owner` as `kind`.
    @inlinable @inline(__always)
    internal func lockRead(profiling owner: AnyObject, _ kind: _ContentionKind) {
        if _fastPath(_tryEnterRead()) { return }
        _lockReadProfiled(owner, kind)
    }

    /// `lockRead(before:)`, recording a contended acquisition of `owner` as `kind`.
    @inlinable
    internal func lockRead(
        before deadline: ContinuousClock.Instant, profiling owner: AnyObject, _ kind: _ContentionKind
    ) -> Bool {
        _tryEnterRead() || _lockReadProfiled(before: deadline, owner, kind)
    }

    /// `lockWrite()`, recording a contended acquisition of `owner` as `kind`: the same steps.
    @inlinable @inline(__always)
    internal func lockWrite(profiling owner: AnyObject, _ kind: _ContentionKind) {
        // Seq_cst: as in `lockWrite()` (the claim).
        if _fastPath(ilk_atomic_exchange_u32(_w, _RW.claimed, ILK_ORDER_SEQ_CST) & _RW.claimed == 0) {
            // Seq_cst: as in `lockWrite()`.
            if _fastPath(ilk_atomic_load_u64(_r, ILK_ORDER_SEQ_CST) == 0) {
                // Relaxed: as in `lockWrite()`.
                ilk_atomic_store_u32(_entered, 1, ILK_ORDER_RELAXED)
                return
            }
            _drainProfiled(owner, kind)
            return
        }
        _lockWriteProfiled(owner, kind)
    }

    /// `lockWrite(before:)`, recording a contended acquisition of `owner` as `kind`.
    @inlinable
    internal func lockWrite(
        before deadline: ContinuousClock.Instant, profiling owner: AnyObject, _ kind: _ContentionKind
    ) -> Bool {
        tryLockWrite() || _lockWriteProfiled(before: deadline, owner, kind)
    }

    @usableFromInline @inline(never)
    internal func _lockReadProfiled(_ owner: AnyObject, _ kind: _ContentionKind) {
        let probe = _Contention.begin()
        _ = _lockReadSlow(deadline: nil)
        if probe != 0 { _Contention.end(probe, kind, owner) }
    }

    @usableFromInline @inline(never)
    internal func _lockReadProfiled(
        before deadline: ContinuousClock.Instant, _ owner: AnyObject, _ kind: _ContentionKind
    ) -> Bool {
        let probe = _Contention.begin()
        let taken = _lockReadSlow(deadline: deadline)
        if probe != 0 && taken { _Contention.end(probe, kind, owner) }
        return taken
    }

    @usableFromInline @inline(never)
    internal func _drainProfiled(_ owner: AnyObject, _ kind: _ContentionKind) {
        let probe = _Contention.begin()
        _ = _drain(deadline: nil)
        if probe != 0 { _Contention.end(probe, kind, owner) }
    }

    @usableFromInline @inline(never)
    internal func _lockWriteProfiled(_ owner: AnyObject, _ kind: _ContentionKind) {
        let probe = _Contention.begin()
        _ = _lockWriteSlow(deadline: nil)
        if probe != 0 { _Contention.end(probe, kind, owner) }
    }

    @usableFromInline @inline(never)
    internal func _lockWriteProfiled(
        before deadline: ContinuousClock.Instant, _ owner: AnyObject, _ kind: _ContentionKind
    ) -> Bool {
        let probe = _Contention.begin()
        let taken = _lockWriteSlow(deadline: deadline)
        if probe != 0 && taken { _Contention.end(probe, kind, owner) }
        return taken
    }
}
#endif
