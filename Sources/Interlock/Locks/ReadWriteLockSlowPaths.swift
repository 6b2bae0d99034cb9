// ReadWriteLock's slow paths: sleeping and waking, granting starving readers, the writers'
// registration and the claimant's drain. The words, the protocol, its invariants and its
// orderings are in ReadWriteLockCore.swift's header; each function here argues its own steps.

import CInterlock

extension _RWLockCore {
    // MARK: Slow paths

    // The untimed entries of the slow paths take no argument: an inlined fast path that passed
    // `deadline: nil` would build and destroy an Optional<ContinuousClock.Instant> through its
    // value witnesses on every call (seen in the benchmark's machine code: 7.8 ns per write
    // lock+unlock instead of 2.2).

    @usableFromInline @inline(never)
    internal func _lockReadUntimed() { _ = _lockReadSlow(deadline: nil) }

    @usableFromInline @inline(never)
    internal func _lockWriteUntimed() { _ = _lockWriteSlow(deadline: nil) }

    @usableFromInline @inline(never)
    internal func _drainUntimed() { _ = _drain(deadline: nil) }

    @usableFromInline @inline(never)
    internal func _wakeSleepers(readers: Bool, writers: Bool, storedPending: Bool) {
        if writers {
            _wakeWriter()
        } else if storedPending {
            // We stored P, and the writers it was for have all left: clear it (or the last
            // leaver does; see the file comment).
            _clearPending()
        }
        if readers { _wakeReaders() }
    }

    /// Clears P if W still holds it, then nudges the readers that it kept out.
    @usableFromInline
    internal func _clearPending() {
        // Seq_cst (release): a reader that reads the nudge's RS sees W cleared.
        if ilk_atomic_cas_value_u32(_w, _RW.pending, 0, ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED) == _RW.pending {
            _wakeReaders()
        }
    }

    /// Wakes every reader sleeping on RS, to look again (granted or not).
    @usableFromInline
    internal func _wakeReaders() {
        // Release: pairs with the acquire load of RS in `_sleepAsReader`.
        _ = ilk_atomic_fetch_add_u32(_rs, 1, ILK_ORDER_RELEASE)
        _Futex.wakeAll(_rs, for: .readWriteLock)
    }

    /// Wakes one writer sleeping on N.
    @usableFromInline
    internal func _wakeWriter() {
        // Release: pairs with the acquire load of N in `_lockWriteSlow`.
        _ = ilk_atomic_fetch_add_u32(_n, 1, ILK_ORDER_RELEASE)
        _Futex.wakeOne(_n, for: .readWriteLock)
    }

    /// The release of a claimant that saw a starving reader registered: grant every registered
    /// reader, then release.
    @usableFromInline @inline(never)
    internal func _releaseGranting(storing released: UInt32, attention: UInt32) {
        // E is 0 already (`unlockWrite`): the granted readers may unlock before our release
        // store, and their misuse check must not see E; the granting CAS below (release) orders
        // that store before their acquire of the new epoch.
        let granted = _grantReaders()
        // Release: as in `_release`. The granted readers are counted in R already, so P (writers
        // registered) keeps only new readers out.
        ilk_atomic_store_u32(_w, released, ILK_ORDER_RELEASE)
        if granted != 0 { _wakeReaders() }
        _wakeAfterRelease(stored: released, attention: attention)
    }

    /// Counts the registered readers into R and moves Sr to the next epoch (count 0), as one
    /// decision. Called by a claimant, before it releases W. - Returns: how many were granted.
    @usableFromInline
    internal func _grantReaders() -> UInt32 {
        var added: UInt32 = 0
        // Relaxed: a guess for the CAS.
        var sr = ilk_atomic_load_u64(_sr, ILK_ORDER_RELAXED)
        while true {
            let count = UInt32(truncatingIfNeeded: sr & _RW.sleeperCountMask)
            if count > added {
                // Relaxed: reaches the next claimant through our release store of W, and the
                // granted readers through the release CAS below. W is still claimed, so the
                // extra count admits nobody before the CAS decides.
                _ = ilk_atomic_fetch_add_u64(_r, UInt64(count &- added), ILK_ORDER_RELAXED)
                added = count
            }
            // Seq_cst (release): the granted readers' acquire of the new epoch sees our section.
            let found = ilk_atomic_cas_value_u64(
                _sr, sr, (sr & ~_RW.registrationMask) &+ _RW.epochUnit, ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED)
            if found == sr {
                if added > count {
                    // Relaxed: as the increment; readers that left before being granted.
                    _ = ilk_atomic_fetch_sub_u64(_r, UInt64(added &- count), ILK_ORDER_RELAXED)
                }
                return count
            }
            sr = found
        }
    }

    /// Spins, looking at `load()` after 1, 2, 4, ... pauses (plus a jitter), as `_MutexWord`
    /// does (its file comment has the measurement), until `done` or the budget is spent.
    /// - Returns: the last value loaded.
    @inline(__always)
    internal func _spin(_ load: () -> UInt32, until done: (UInt32) -> Bool) -> UInt32 {
        var budget = _spinBudget
        var backoff: UInt32 = 1
        let jitter = ilk_spin_jitter()
        while true {
            let value = load()
            if done(value) { return value }
            let pauses = backoff &+ (jitter & (backoff &- 1))
            if pauses >= budget { return value }
            budget &-= pauses
            for _ in 0..<pauses { ilk_spin_pause() }
            backoff &<<= 1
        }
    }

    @usableFromInline @inline(never)
    internal func _lockReadSlow(deadline: ContinuousClock.Instant?) -> Bool {
        let starveAt = ContinuousClock.now + _RW.starvationThreshold
        while true {
            if let deadline, ContinuousClock.now >= deadline { return false }
            // Relaxed: snapshots deciding when to try again; the attempt re-checks.
            let unblocked = _spin({ ilk_atomic_load_u32(_w, ILK_ORDER_RELAXED) }, until: { $0 == 0 }) == 0
            if unblocked && _tryEnterRead() { return true }
            switch _sleepAsReader(deadline: deadline, starveAt: starveAt) {
            case .granted: return true
            case .timedOut: return false
            case .retry: if _tryEnterRead() { return true }
            }
        }
    }

    @usableFromInline
    internal enum _ReaderWake { case granted, timedOut, retry }

    /// Registers in Sr, then sleeps on RS until granted, or until new readers may enter again
    /// (`.retry`: deregistered), or the deadline passes (`.timedOut`: deregistered). From
    /// `starveAt` on, the registration carries the starving flag, so that the next unlock grants.
    internal func _sleepAsReader(deadline: ContinuousClock.Instant?, starveAt: ContinuousClock.Instant) -> _ReaderWake {
        _attend()
        defer { _unattend() }
        var starving = ContinuousClock.now >= starveAt
        let epoch = _registerReader(starving: starving)
        _sleeperFence()
        var timedOut = false
        while true {
            // Acquire: pairs with the release increments of RS (`_wakeReaders`): reading one, we
            // see the event before it.
            let sequence = ilk_atomic_load_u32(_rs, ILK_ORDER_ACQUIRE)
            // Acquire: pairs with the granting CAS; we then hold the lock.
            if UInt32(truncatingIfNeeded: ilk_atomic_load_u64(_sr, ILK_ORDER_ACQUIRE) >> 32) != epoch {
                return .granted
            }
            // Seq_cst: after our registration (and membarrier), the sleeper's half of the pair
            // with an unlock's store of W and load of Sr.
            let w = ilk_atomic_load_u32(_w, ILK_ORDER_SEQ_CST)
            if timedOut || w == 0 {
                if _deregisterReader(epoch: epoch) { return .granted }
                return timedOut ? .timedOut : .retry
            }
            // Not yet starving: sleep no later than `starveAt`, then raise the flag.
            if w == _RW.pending && ilk_atomic_load_u32(_sw, ILK_ORDER_SEQ_CST) == 0 {
                // A stale P (its writers have left, and whoever clears it has not yet, or an
                // unlock in degraded mode missed them): clear it ourselves and look again.
                _clearPending()
                continue
            }
            let wakeAt = _waitLimit(starving ? deadline : Swift.min(deadline ?? starveAt, starveAt))
            let result =
                wakeAt.map { _Futex.wait(_rs, expected: sequence, until: $0, for: .readWriteLock) }
                ?? _Futex.wait(_rs, expected: sequence, for: .readWriteLock)
            if result == .timedOut {
                if let deadline, ContinuousClock.now >= deadline {
                    timedOut = true
                } else if !starving {
                    starving = true
                    _markStarving(epoch: epoch)
                }
            }
        }
    }

    /// Adds one to Sr's count (with the starving flag when `starving`). - Returns: the epoch
    /// registered in.
    internal func _registerReader(starving: Bool) -> UInt32 {
        // Relaxed: a guess for the CAS.
        var sr = ilk_atomic_load_u64(_sr, ILK_ORDER_RELAXED)
        while true {
            if _slowPath(sr & _RW.sleeperCountMask == _RW.sleeperCountMask) { _RW.tooManyReaders() }
            // Seq_cst: the sleeper's registration, first half of its pair with an unlock.
            let found = ilk_atomic_cas_value_u64(
                _sr, sr, (sr &+ 1) | (starving ? _RW.starving : 0), ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED)
            if found == sr { return UInt32(truncatingIfNeeded: sr >> 32) }
            sr = found
        }
    }

    /// Raises the starving flag on a registration still in `epoch` (a grant took it otherwise).
    internal func _markStarving(epoch: UInt32) {
        // Relaxed: a guess for the CAS.
        var sr = ilk_atomic_load_u64(_sr, ILK_ORDER_RELAXED)
        while UInt32(truncatingIfNeeded: sr >> 32) == epoch && sr & _RW.starving == 0 {
            // Relaxed: a request for the next unlock; no data is published.
            let found = ilk_atomic_cas_value_u64(_sr, sr, sr | _RW.starving, ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
            if found == sr { return }
            sr = found
        }
    }

    /// Takes this reader's registration back. - Returns: true when a grant took it first (the
    /// reader then holds the lock).
    internal func _deregisterReader(epoch: UInt32) -> Bool {
        // Acquire: finding a grant pairs with the granting CAS.
        var sr = ilk_atomic_load_u64(_sr, ILK_ORDER_ACQUIRE)
        while true {
            if UInt32(truncatingIfNeeded: sr >> 32) != epoch { return true }
            // Acquire on failure: as the load.
            let found = ilk_atomic_cas_value_u64(_sr, sr, sr &- 1, ILK_ORDER_SEQ_CST, ILK_ORDER_ACQUIRE)
            if found == sr { return false }
            sr = found
        }
    }

    /// The heavy half of the asymmetric fence, between a sleeper's registration and its last
    /// look at W (nothing in symmetric mode, where the unlock fences fully). If membarrier fails
    /// (ENOMEM since Linux 5.10, or a seccomp filter installed after setup), the lock degrades
    /// instead of trapping: from then on its unlocks fence fully, and its sleepers poll.
    internal func _sleeperFence() {
        if _symmetric { return }
        if ilk_membarrier_heavy() != 0 { _degrade() }
    }

    /// Switches to degraded mode. An unlock that read the old mode may still miss a sleeper, or
    /// store a P that no writer is registered for any time later (preempted between its
    /// decision and its store), so from now on every sleeper polls: each futex wait is bounded
    /// by `degradedPollInterval`, after which it looks again (and a reader clears a P with no
    /// writer registered). Sleepers already asleep in an unbounded wait are woken here, once,
    /// so that they poll too. None of this rests on timing (file comment, "degraded").
    internal func _degrade() {
        // Seq_cst: an unlock that loads A from now on takes the careful path and fences fully
        // (it decides from the bit, not from the mode below); one that loaded A before is
        // covered by the polling.
        _ = ilk_atomic_fetch_or_u32(_attention, _RW.attentionFences, ILK_ORDER_SEQ_CST)
        // Seq_cst: a full barrier of our own (the exchange) before our look at W.
        let previous = ilk_atomic_exchange_u32(_fenceMode, _RW.degradedMode, ILK_ORDER_SEQ_CST)
        guard previous != _RW.degradedMode else { return }
        // The release increments of RS and N come after the exchange: a sleeper that reads the
        // new RS (or N) with acquire then reads the degraded mode in `_waitLimit`; one that read
        // the old sequence is woken here, or its futex wait finds the sequence changed.
        _wakeReaders()
        _ = ilk_atomic_fetch_add_u32(_n, 1, ILK_ORDER_RELEASE)
        _Futex.wakeAll(_n, for: .readWriteLock)
    }

    @usableFromInline @inline(never)
    internal func _lockWriteSlow(deadline: ContinuousClock.Instant?) -> Bool {
        var registered = false
        while true {
            // Relaxed: a snapshot; the CAS re-checks.
            let w = _spin({ ilk_atomic_load_u32(_w, ILK_ORDER_RELAXED) }, until: { $0 & _RW.claimed == 0 })
            if w & _RW.claimed == 0 {
                // Seq_cst: as in `lockWrite` (from 0, or from P).
                if ilk_atomic_cas_value_u32(_w, w, _RW.claimed, ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED) == w {
                    if registered {
                        // Relaxed: a count; readers are held back by C from now on.
                        _ = ilk_atomic_fetch_sub_u32(_sw, 1, ILK_ORDER_RELAXED)
                        _unattend()
                    }
                    return _enter(deadline: deadline)
                }
                continue
            }
            if let deadline, ContinuousClock.now >= deadline {
                if registered { _writerLeaves() }
                return false
            }
            if !registered {
                _attend()
                // Seq_cst: the sleeper's registration, first half of its pair with an unlock.
                _ = ilk_atomic_fetch_add_u32(_sw, 1, ILK_ORDER_SEQ_CST)
                registered = true
                _sleeperFence()
                continue
            }
            // Acquire: pairs with the release increment in `_wakeWriter`: reading it, we see the
            // release of W that came before it.
            let sequence = ilk_atomic_load_u32(_n, ILK_ORDER_ACQUIRE)
            // Seq_cst: the sleeper's look at W, after its registration and membarrier.
            if ilk_atomic_load_u32(_w, ILK_ORDER_SEQ_CST) & _RW.claimed == 0 { continue }
            if let limit = _waitLimit(deadline) {
                _ = _Futex.wait(_n, expected: sequence, until: limit, for: .readWriteLock)
            } else {
                _ = _Futex.wait(_n, expected: sequence, for: .readWriteLock)
            }
        }
    }

    /// A registered writer gives up: deregisters; the last to leave nudges the readers that
    /// waited only because of it; otherwise passes on a wake-up it may have consumed.
    @usableFromInline @inline(never)
    internal func _writerLeaves() {
        defer { _unattend() }
        // Seq_cst: the leaver's registration change, first half of its pair with an unlock that
        // stores P (store W, then load Sw).
        let old = ilk_atomic_fetch_sub_u32(_sw, 1, ILK_ORDER_SEQ_CST)
        if old == 1 {
            // The last to leave clears P (readers waited only because of it), after the heavy
            // fence: an unlock storing P either sees our decrement or we see its P. (In degraded
            // mode the polling readers clear a P left stale by a missed decrement themselves.)
            _sleeperFence()
            _clearPending()
        } else {
            _wakeWriter()
        }
    }

    /// The claimant (W = C) waits for the readers inside to leave; on timeout it releases W
    /// (granting the readers queued behind it) and returns false. It sleeps on R with D set in
    /// R itself: a reader that leaves R at D alone (no reader counted) wakes it; a decrement
    /// that leaves readers inside changes R, so a wait that has not begun fails.
    @usableFromInline @inline(never)
    internal func _drain(deadline: ContinuousClock.Instant?) -> Bool {
        // Relaxed: a snapshot; the acquire operations below decide.
        _ = _spin({ ilk_atomic_load_u64(_r, ILK_ORDER_RELAXED) == 0 ? 0 : 1 }, until: { $0 == 0 })
        // Acquire: finding no reader inside pairs with the release decrements of the readers
        // that left (one release sequence of RMWs on R).
        var readers = ilk_atomic_fetch_or_u64(_r, _RW.drainWaiting, ILK_ORDER_ACQUIRE) | _RW.drainWaiting
        while true {
            if readers & _RW.readerCountMask == 0 {
                // Relaxed: an RMW, so the release sequence goes on; D is only a wake-up request.
                _ = ilk_atomic_fetch_and_u64(_r, ~_RW.drainWaiting, ILK_ORDER_RELAXED)
                // Relaxed: only the claimant writes E; it is read by misuse checks.
                ilk_atomic_store_u32(_entered, 1, ILK_ORDER_RELAXED)
                return true
            }
            if let deadline, ContinuousClock.now >= deadline {
                // Relaxed: as above.
                _ = ilk_atomic_fetch_and_u64(_r, ~_RW.drainWaiting, ILK_ORDER_RELAXED)
                _release()
                return false
            }
            if let deadline {
                _ = _Futex.wait(
                    _rLow, expected: UInt32(truncatingIfNeeded: readers), until: deadline, for: .readWriteLock)
            } else {
                _ = _Futex.wait(_rLow, expected: UInt32(truncatingIfNeeded: readers), for: .readWriteLock)
            }
            // Acquire: as above.
            readers = ilk_atomic_load_u64(_r, ILK_ORDER_ACQUIRE)
        }
    }
}
