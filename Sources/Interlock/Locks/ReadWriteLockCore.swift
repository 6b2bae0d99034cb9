// ReadWriteLock's algorithm (`_RWLockCore`, over the words wherever they live: a ReadWriteLock or
// a ReadWriteLocked): many readers or one writer, on futexes; writers preferred, readers not starved;
// the uncontended write lock is one exchange and its unlock a plain store.
//
// Layout: separate words on one allocation, after Concurrency Kit's rwlock (a writer word and a
// reader count, each side announcing itself on its own word and then looking at the other's),
// plus what a lock that sleeps needs: counts of sleepers, a grant epoch for readers and a
// notification counter for writers. R sits in its own 128-byte block, away from the others
// (`ilk_rwlock_words`, CShims/include/ilk_rwlock.h): every reader writes R, while the words that
// readers only read (W) change only when writers come, so a reader's look at it stays a hit in
// its own cache.
//
//   W   (UInt32)  writer word: 0 free; 1 = C "claimed" (a writer owns W: it holds the lock, or
//                 waits for the readers inside to leave); 4 = P "pending" (free, but writers are
//                 registered to sleep: new readers wait, a writer may claim). Only constants: a
//                 CAS whose expected value is loaded from a word the last unlock has just stored
//                 (a generation counter, in a first version) cost 3.5-4.8 ns per lock+unlock
//                 against 2.2-2.4 from a constant.
//   E   (UInt32)  1 while the claimant holds the lock ("entered": no reader inside), else 0.
//                 Written only by the claimant; read by the misuse checks of both unlocks.
//   R   (UInt64)  bits 0-62: readers inside, plus the optimistic increments of readers about to
//                 back out; bit 63 D: the claimant sleeps on R, waiting for them to leave (in
//                 R itself, so that a leaving reader learns of it from its own decrement). 64
//                 bits so that the count cannot overflow, which lets the reader's increment be
//                 a `lock inc` tested by its sign flag (D set) instead of a `lock xadd` whose
//                 result is compared (0.3-0.4 ns less per read lock on a 2-vCPU x86-64
//                 machine), and its decrement a `lock sub` followed by branches on its flags
//                 (`ilk_rwlock_reader_leave`, x86-64 Linux): CF says R was 0, OF that it
//                 was D alone (both misuses), SF with neither that D was set with readers
//                 counted; a `lock xadd` cost 0.6-0.8 ns more (4.17 against 3.36 ns per read
//                 lock+unlock). The builtin form (under ThreadSanitizer, on other systems) and
//                 the back-out of an optimistic increment compare the old value instead. A
//                 reader that found D with readers counted loads R again, and wakes the
//                 claimant if it finds D alone (see `_readerLeft` for why no wake-up is lost).
//                 The claimant's futex waits on R's low half, which every change of the count
//                 changes.
//   Sw  (UInt32)  writers registered to sleep.
//   N   (UInt32)  writer notification counter: writers sleep on it (Rust's futex rwlock).
//   Sr  (UInt64)  high half: grant epoch; bit 31 STARVING (a registered reader has waited 1 ms);
//                 bits 0-30: readers registered to sleep.
//   A   (UInt32)  attention: bits 0-30 count the threads inside a sleeper's protocol (counted
//                 before they register in Sr or Sw, uncounted after they have left it); bit 31
//                 is set while the fence mode is not asymmetric. The write unlock looks at A
//                 alone (once before its release store, once after) and at Sr and Sw only when
//                 A is not 0.
//   RS  (UInt32)  reader sequence: readers sleep on it; every event that may let a sleeping
//                 reader in (a grant, a release that found readers registered late, a nudge)
//                 increments it (release) before waking them, so a reader that read it before
//                 the event cannot sleep through it (futex on a sequence).
//
//   W      E  R      meaning
//   -----  -  -----  ------------------------------------------------------------------------
//   0      0  0      free
//   4 (P)  0  k      free for writers; readers wait (writers registered, one of them woken)
//   0      0  k > 0  read-locked by k readers (some of them maybe backing out)
//   1 (C)  0  k > 0  a writer has claimed W and waits for k readers to leave; new readers back out
//   1 (C)  0  0      a writer has claimed W and is about to enter, or to give up (momentary)
//   1 (C)  1  0      write-locked
//   1 (C)  1  k > 0  write-locked, with k optimistic reader increments in flight (momentary)
//
// Readers: a reader announces itself (R += 1), then looks at W; it stays when W is 0, and
// otherwise takes its increment back and waits: the same two instructions as Concurrency Kit's
// reader. Writers: a writer claims W (C from 0 or from P), then looks at R; it enters when R is 0
// (E = 1) and otherwise waits for R to reach 0 (D on, futex on R).
//
// The claim: the fast path EXCHANGES W with C, which claims from 0 or P and changes nothing when
// W is C already (the lock held or claimed by another writer; the newcomer then takes the slow
// path). A CAS would do the same, but on a 2-vCPU AMD EPYC virtual machine
// the write lock+unlock with a CAS claim swung between 2.2 and 3.1-3.9 ns in episodes of seconds
// (the host's load on the core's other hardware thread, presumably), while Concurrency Kit's
// exchange-based claim stayed at 2.2-2.4; with the exchange, and with the unlock's looks cut from
// five loads to two (A, below), ours measures 2.1-2.3 in both. The reader's announcement and the
// writer's claim are seq_cst read-modify-writes followed by seq_cst loads of the other side's
// word (a Dekker pair): at least one side sees the other, so a reader and a writer are never
// inside together.
//
// Release: the write unlock clears E, stores W = 0 with release, a plain store (the previous
// design, one state word, needed a read-modify-write there); then it looks at A, and at Sr and Sw
// when A is not 0, and wakes whoever registered. Before the store it looks at A too: 0 means no
// writer to store P for, no starving reader to grant, and asymmetric fences. The value stored is P instead of 0 when the look before the store saw writers
// registered, so that readers keep waiting for the writer the unlock wakes. A store followed by a load needs a store-load fence to be sure of
// seeing a sleeper that registered meanwhile; that fence is made ASYMMETRIC: the unlock has a
// compiler barrier only, and every sleeper, after registering (a seq_cst read-modify-write) and
// before its last look at W, calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a
// full barrier on every running thread of the process (0.4-0.9 us on a 2-vCPU x86-64 machine,
// against microseconds for the futex sleep it precedes). So either the unlock's load sees the
// registration, or the sleeper's look at W sees the release. Where membarrier is unusable
// (`ilk_membarrier_setup` says so: old kernels, sandboxes, other systems) the lock is built in
// symmetric mode: the unlock issues a full fence instead, and sleepers skip the system call.
// A sleeper counts itself in A before it registers in Sr or Sw, so the same argument covers the
// unlock's look at A: an unlock that sees A = 0 after its store is one whose release the
// sleeper's look at W will see.
// If membarrier fails later (ENOMEM since Linux 5.10, or a seccomp filter installed after
// setup), the lock DEGRADES rather than trapping (`_degrade`): it switches to full fences, wakes
// every sleeper once, and from then on its sleepers bound every futex wait to 1 ms and look
// again; a reader that finds P with no writer registered clears it. The argument does not rest
// on timing, so it holds under arbitrary preemption: an unlock that read the old mode (A without
// the fence bit) may be preempted for any time between its decision and its store of W, then
// store P for writers long gone and miss every sleeper in its looks; but exclusion never
// depended on the mode (the reader/claimant Dekker pair is seq_cst on both sides in every mode),
// a missed wake-up costs a poller one interval, and the stale P is cleared by the first reader
// that polls or arrives (it registers, then looks). Sleepers that were asleep in an unbounded
// wait before the switch are woken by it, so none is left relying on an unlock's look.
//
// Readers are not starved. Normally an unlock only wakes the registered readers (RS) to compete
// with whoever else comes (barging keeps the lock busy: nothing waits for a sleeping thread to
// be scheduled). A reader that has waited 1 ms (`starvationThreshold`; it sleeps no longer
// than that before raising the flag) marks Sr STARVING; an unlock that sees the flag while it
// still holds W GRANTS the lock to every registered reader: it adds their number to R, then
// moves Sr to the next epoch with count and flag at 0 (one CAS), and only then releases W and
// wakes them. A sleeping reader that finds the epoch moved holds the lock (also when its
// deadline passed meanwhile: it returns true). Writers are woken one at a time through N; a
// woken writer claims W and waits for the granted readers, so under contention a starving
// batch of readers alternates with writers. A registration that an unlock only sees after its
// release is never granted (the lock may have a new claimant by then): the readers are woken to
// look again, and the next unlock grants them if they still starve. Granting at every unlock,
// as a first version did, made every write wait for sleeping readers to be scheduled: the
// `rwlock-timeouts` stress workload ran 5 (2 threads) to 150 (8 threads) times slower.
//
// Writer preference: while W is claimed or pending (P), new readers back out and `tryLockRead`
// fails. P is set only by an unlock that saw writers registered (a claimant's own stores erase
// it, and its unlock decides again), and it never outlives them: the last registered writer to
// give up (timed out) clears it with a CAS P -> 0, and so does an unlock that stored P and then
// finds no writer registered (its look after the store); the two pair as an asymmetric Dekker
// (the leaving writer calls membarrier between its decrement and its CAS). Clearing P NUDGES
// the readers (increments RS and wakes them). One window remains: a writer that registers
// after an unlock's first look, while W is being released, gets no P; it is woken at once by
// the unlock's second look, and readers arriving in between may get in before it.
//
// Invariants:
//   - E set implies W = C and R counts no reader inside (only increments about to be taken back).
//   - A's count is at least the number of threads registered in Sr or Sw; bit 31 is set whenever
//     the fence mode is not asymmetric.
//   - P set implies a writer is registered, or the thread that will clear it is on its way
//     (the last leaver, or the unlock that stored it).
//   - Every sleeper is registered (Sr or Sw, or D in R for the claimant) before its last look and
//     stays registered until it leaves; a reader's registration ends either by its own CAS on Sr
//     (same epoch, count - 1) or by a grant (next epoch), never both.
//   - Every futex wait compares a word that the event it waits for changes: RS for readers, N
//     for writers, R for the claimant.
//
// Memory ordering:
//   - Entering: a reader's load of W is acquire (seq_cst) and pairs with the release store of the
//     last write unlock; a claimant's exchange (or CAS) of W is acquire (seq_cst) and pairs with
//     the same store;
//     a claimant's load of R that reads 0 is acquire and pairs with the readers' release
//     decrements (one release sequence). A granted reader's acquire load of Sr pairs with the
//     granting CAS (seq_cst, so release), made after the writer's section.
//   - The Dekker pair (reader R += 1, then load W; claimant claims W, then loads R) is seq_cst on
//     both sides. D needs none: it is in R, and every change of R is a read-modify-write.
//   - E is relaxed: only the claimant writes it, before W's release store; the next claimant's
//     acquire of W orders its own store of E after ours.
//   - The unlock's loads of A, Sr and Sw are relaxed: they are ordered after its release store by
//     the asymmetric fence (compiler barrier here, membarrier in the sleeper), or by the full
//     fence in symmetric mode. ThreadSanitizer models neither, and needs neither: it checks
//     the happens-before edges of the data, which all go through the acquire and release
//     operations above (a lost wake-up would show as a hang, which the stress watchdog catches).
//   - Writer notification: release increment of N, acquire load (Rust's argument: a writer that
//     reads the new count then sees W released). Reader sequence RS: the same, for readers (a
//     reader that reads the new value sees the grant, the release or the clearing of P before it).

import CInterlock
import Synchronization

/// The algorithm of ``ReadWriteLock`` over its words wherever they live: in a
/// `ReadWriteLock`, or beside the value of a ``ReadWriteLocked``. One pointer, passed in a
/// register; the lock-order hooks are the owners' (they need the object).
@usableFromInline @frozen
internal struct _RWLockCore {
    /// The words (`ilk_rwlock_words`): the first stored property of an object that is alive
    /// while the core is used; objects never move.
    @usableFromInline internal let _base: UnsafeMutableRawPointer

    @inlinable @inline(__always)
    internal init(_ base: UnsafeMutableRawPointer) { _base = base }

    /// The words of a new, unlocked lock: symmetric fences when `symmetricFences` or when
    /// membarrier is unusable (the file comment, "Release").
    internal static func initialWords(symmetricFences: Bool = false) -> ilk_rwlock_words {
        var words = ilk_rwlock_words()
        words.fence_mode = symmetricFences || ilk_membarrier_setup() == 0 ? _RW.symmetricMode : 0
        words.attention = words.fence_mode == 0 ? 0 : _RW.attentionFences
        return words
    }

    /// The attention word A (`ilk_rwlock_words.attention`), on W's line.
    @inlinable @inline(__always)
    internal var _attention: UnsafeMutablePointer<UInt32> {
        _word(\.attention, as: UInt32.self)
    }

    /// The entered word E (`ilk_rwlock_words.entered`), on W's line.
    @inlinable @inline(__always)
    internal var _entered: UnsafeMutablePointer<UInt32> {
        _word(\.entered, as: UInt32.self)
    }

    /// The fence mode word (`ilk_rwlock_words.fence_mode`), on W's line.
    @inlinable @inline(__always)
    internal var _fenceMode: UnsafeMutablePointer<UInt32> {
        _word(\.fence_mode, as: UInt32.self)
    }

    /// Symmetric (or degraded) mode: the write unlock issues a full fence, and sleepers make no
    /// membarrier call.
    @inlinable @inline(__always)
    internal var _symmetric: Bool {
        // Relaxed: set at init, and changed at most once, to degraded, by a sleeper whose
        // membarrier failed (`_degrade`, which covers the unlocks that read the old mode).
        ilk_atomic_load_u32(_fenceMode, ILK_ORDER_RELAXED) != 0
    }

    /// Degraded mode: sleepers bound every futex wait by `degradedPollInterval`.
    internal var _degraded: Bool {
        // Relaxed: as `_symmetric`.
        ilk_atomic_load_u32(_fenceMode, ILK_ORDER_RELAXED) == _RW.degradedMode
    }

    /// A deadline for one futex wait: `deadline`, cut to the poll interval in degraded mode.
    internal func _waitLimit(_ deadline: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard _degraded else { return deadline }
        let poll = ContinuousClock.now + _RW.degradedPollInterval
        return deadline.map { Swift.min($0, poll) } ?? poll
    }

    /// The address of a word of `ilk_rwlock_words`: its offset comes from the C layout (one
    /// definition; the optimizer folds it to a constant).
    @inlinable @inline(__always)
    internal func _word<T>(_ field: KeyPath<ilk_rwlock_words, T>, as _: T.Type) -> UnsafeMutablePointer<T> {
        (_base + MemoryLayout<ilk_rwlock_words>.offset(of: field)!).assumingMemoryBound(to: T.self)
    }

    @inlinable @inline(__always) internal var _w: UnsafeMutablePointer<UInt32> {
        _word(\.writer, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _sw: UnsafeMutablePointer<UInt32> {
        _word(\.writer_sleepers, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _n: UnsafeMutablePointer<UInt32> {
        _word(\.writer_notify, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _rs: UnsafeMutablePointer<UInt32> {
        _word(\.reader_sequence, as: UInt32.self)
    }
    @inlinable @inline(__always) internal var _sr: UnsafeMutablePointer<UInt64> {
        _word(\.reader_sleepers, as: UInt64.self)
    }
    @inlinable @inline(__always) internal var _r: UnsafeMutablePointer<UInt64> {
        _word(\.readers, as: UInt64.self)
    }
    /// R's low 32 bits, the claimant's futex word.
    @inlinable @inline(__always) internal var _rLow: UnsafeMutablePointer<UInt32> {
        #if _endian(little)
        UnsafeMutableRawPointer(_r).assumingMemoryBound(to: UInt32.self)
        #else
        (UnsafeMutableRawPointer(_r) + 4).assumingMemoryBound(to: UInt32.self)
        #endif
    }

    // MARK: Read lock

    /// Blocks until the calling thread holds the lock for reading.
    @inlinable @inline(__always)
    internal func lockRead() {
        if _fastPath(_tryEnterRead()) { return }
        _lockReadUntimed()
    }

    /// Takes the lock for reading if that is possible at once (no writer holds or waits).
    @inlinable
    internal func tryLockRead() -> Bool { _tryEnterRead() }

    /// Takes the lock for reading, waiting at most until `deadline`; never `false` before it.
    @inlinable
    internal func lockRead(before deadline: ContinuousClock.Instant) -> Bool {
        _tryEnterRead() || _lockReadSlow(deadline: deadline)
    }

    /// Releases the calling thread's read lock; traps when it is not held for reading.
    @inlinable @inline(__always)
    internal func unlockRead() {
        // Relaxed: a misuse check only. Looked at BEFORE our decrement: while we hold a read
        // lock no writer can enter, so E seen now means we hold none.
        let e = _Word32.atomic(_entered).pointee.load(ordering: .relaxed)
        // Release (a `lock sub` on x86-64, full barrier): pairs with the claimant's acquire of
        // R (one release sequence of RMWs). Classified by R's old value (ilk_rwlock.h); one C
        // function with the ThreadSanitizer check inside (a witness pays one call for it).
        let outcome = ilk_rwlock_reader_leave(_r)
        if _slowPath(outcome != ILK_RWLOCK_LEFT || e != 0) { _readerLeft(outcome, entered: e) }
    }

    /// The rare ends of a read unlock: a misuse, or D set (a claimant waits for the readers).
    @usableFromInline @inline(never)
    internal func _readerLeft(_ outcome: UInt32, entered e: UInt32) {
        if e != 0 || outcome != ILK_RWLOCK_LEFT_DRAINING { _RW.misuse(self, "unlockRead()") }
        // Our decrement found D set and readers counted. If it left none (R == D), the
        // claimant may be asleep waiting for exactly that: wake it. Relaxed suffices: the load
        // comes after our decrement in R's modification order (read-write coherence). If R
        // is no longer D, whatever changed it takes over: an increment since is a reader that
        // sees D and backs out, and its back-out wakes the claimant if it leaves R == D (as
        // `_readerBackOut` does); a cleared D means the claimant is awake (it saw the count 0,
        // or it timed out). An older D seen again after a whole new drain only costs a spurious wake:
        // the claimant looks at R again and goes back to sleep.
        if ilk_atomic_load_u64(_r, ILK_ORDER_RELAXED) == _RW.drainWaiting { _wakeClaimant() }
    }

    /// One attempt to enter as a reader; takes the increment back when it may not stay.
    @inlinable @inline(__always)
    internal func _tryEnterRead() -> Bool {
        // Seq_cst: the reader's half of the Dekker pair with a claimant (CAS W, then load R).
        // Only the sign of the new value is used (D set: a claimant waits, so W is claimed),
        // so the increment compiles to `lock inc` and a branch on the sign flag.
        // Swift's atomics, not the shim's: an LLVM instruction in every caller, a protocol
        // witness included (Atomics/WordAtomics.swift).
        let new = _Word64.atomic(_r).pointee.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
        if _fastPath(Int64(bitPattern: new) >= 0) {
            // Seq_cst: the other half; also acquire: pairs with the release store of the last
            // write unlock, whose section we are about to read.
            if _fastPath(_Word32.atomic(_w).pointee.load(ordering: .sequentiallyConsistent) == 0) { return true }
        }
        _readerBackOut()
        return false
    }

    @usableFromInline @inline(never)
    internal func _wakeClaimant() {
        _Futex.wakeOne(_rLow, for: .readWriteLock)
    }

    /// Takes back the optimistic increment of a reader that may not stay.
    @usableFromInline @inline(never)
    internal func _readerBackOut() {
        // Release: as in `unlockRead` (this decrement can be the one a claimant waits for).
        let before = ilk_atomic_fetch_sub_u64(_r, 1, ILK_ORDER_RELEASE)
        // Our own increment is still counted unless an unlockRead() by a thread that held no
        // read lock took it: stop before the word wraps.
        if _slowPath(before & _RW.readerCountMask == 0) { _RW.misuse(self, "unlockRead()") }
        if before == _RW.drainWaiting | 1 { _wakeClaimant() }
    }

    // MARK: Write lock

    /// Blocks until the calling thread holds the lock for writing.
    @inlinable @inline(__always)
    internal func lockWrite() {
        // Seq_cst: acquire (pairs with the release store of the last write unlock) and the
        // claimant's half of the Dekker pair with readers. An exchange, not a CAS: storing C
        // over C changes nothing, and from 0 or P it claims (file comment, "The claim").
        // Swift's atomics here and in the unlock, as in `_tryEnterRead`.
        if _fastPath(
            _Word32.atomic(_w).pointee.exchange(_RW.claimed, ordering: .sequentiallyConsistent) & _RW.claimed == 0)
        {
            // Seq_cst: as in `_enter`.
            if _fastPath(_Word64.atomic(_r).pointee.load(ordering: .sequentiallyConsistent) == 0) {
                // Relaxed: as in `_enter`.
                _Word32.atomic(_entered).pointee.store(1, ordering: .relaxed)
                return
            }
            _drainUntimed()
            return
        }
        _lockWriteUntimed()
    }

    /// Takes the lock for writing if nobody holds it, without waiting.
    @inlinable
    internal func tryLockWrite() -> Bool {
        // Relaxed: a guess for the CAS (0, or P: a writer may take a pending lock).
        var w = ilk_atomic_load_u32(_w, ILK_ORDER_RELAXED)
        while true {
            if w & _RW.claimed != 0 { return false }
            // Seq_cst: as in `lockWrite`.
            let found = ilk_atomic_cas_value_u32(_w, w, _RW.claimed, ILK_ORDER_SEQ_CST, ILK_ORDER_RELAXED)
            if found == w { break }
            w = found
        }
        // Seq_cst: the claimant's load of R (see `_enter`).
        if ilk_atomic_load_u64(_r, ILK_ORDER_SEQ_CST) == 0 {
            // Relaxed: only the claimant writes E; it is read by misuse checks.
            ilk_atomic_store_u32(_entered, 1, ILK_ORDER_RELAXED)
            return true
        }
        _release()
        return false
    }

    /// Takes the lock for writing, waiting at most until `deadline`; never `false` before it.
    @inlinable
    internal func lockWrite(before deadline: ContinuousClock.Instant) -> Bool {
        tryLockWrite() || _lockWriteSlow(deadline: deadline)
    }

    /// Releases the calling thread's write lock; traps when it is not held for writing.
    @inlinable @inline(__always)
    internal func unlockWrite() {
        // Relaxed: E changes only by the claimant (the holder reads its own store).
        if _slowPath(_Word32.atomic(_entered).pointee.load(ordering: .relaxed) == 0) {
            _RW.misuse(self, "unlockWrite()")
        }
        // Relaxed: published by W's release store below, after which the next claimant sets it.
        _Word32.atomic(_entered).pointee.store(0, ordering: .relaxed)
        _release()
    }

    /// A claimant (W = C) enters once the readers inside have left.
    @inlinable @inline(__always)
    internal func _enter(deadline: ContinuousClock.Instant?) -> Bool {
        // Seq_cst: the claimant's half of the Dekker pair with readers (after its claim of W);
        // acquire: reading 0 pairs with the release decrements of the readers that left.
        if _fastPath(ilk_atomic_load_u64(_r, ILK_ORDER_SEQ_CST) == 0) {
            // Relaxed: only the claimant writes E; it is read by misuse checks.
            ilk_atomic_store_u32(_entered, 1, ILK_ORDER_RELAXED)
            return true
        }
        return _drain(deadline: deadline)
    }

    /// Releases W as claimant (E is 0 already): stores 0, or P when writers are registered, after
    /// granting starving readers when there are any; then wakes who registered.
    @inlinable @inline(__always)
    internal func _release() {
        // Relaxed: a look for sleepers (and for a mode other than asymmetric); one that starts
        // its protocol after this look is seen by the look after the release, or sees the release.
        let attention = _Word32.atomic(_attention).pointee.load(ordering: .relaxed)
        if _slowPath(attention != 0) {
            _releaseAttending(attention: attention)
            return
        }
        // Release: pairs with the acquire of W by the next readers and claimant.
        _Word32.atomic(_w).pointee.store(0, ordering: .releasing)
        // The light half of the asymmetric store-load fence (A was 0 above: asymmetric mode).
        ilk_compiler_barrier()
        // Relaxed: ordered after the release store by the asymmetric fence (file comment).
        let after = _Word32.atomic(_attention).pointee.load(ordering: .relaxed)
        if _slowPath(after != 0) { _wakeAfterRelease(stored: 0, attention: after) }
    }

    /// `_release` when A showed a sleeper or a mode other than asymmetric: decides between 0
    /// and P and whether to grant from the sleepers' own words.
    @usableFromInline @inline(never)
    internal func _releaseAttending(attention: UInt32) {
        // Relaxed: a look for readers to grant and writers to keep readers out for; a sleeper
        // that registers after it is seen by the look after the release, or sees the release
        // (readers are then woken to retry rather than granted; a writer is woken, with no P).
        let starvingReaders = ilk_atomic_load_u64(_sr, ILK_ORDER_RELAXED) & _RW.starving
        let released = ilk_atomic_load_u32(_sw, ILK_ORDER_RELAXED) == 0 ? 0 : _RW.pending
        if starvingReaders != 0 {
            _releaseGranting(storing: released, attention: attention)
            return
        }
        // Release: pairs with the acquire of W by the next readers and claimant.
        ilk_atomic_store_u32(_w, released, ILK_ORDER_RELEASE)
        _wakeAfterRelease(stored: released, attention: attention)
    }

    /// After a release store of W: the store-load fence (the light half of the asymmetric pair,
    /// or a full fence when `attention`, a value of A this unlock loaded, has the fence bit:
    /// symmetric or degraded mode), then wakes the registered sleepers. Deciding from A rather
    /// than from the mode word keeps the decision in step with the path taken: `_degrade` sets
    /// A's bit before it changes the mode.
    @usableFromInline
    internal func _wakeAfterRelease(stored: UInt32, attention: UInt32) {
        if attention & _RW.attentionFences != 0 { ilk_fence_full() } else { ilk_compiler_barrier() }
        // Relaxed: ordered after the release store by the fence above (file comment).
        let sr = ilk_atomic_load_u64(_sr, ILK_ORDER_RELAXED)
        let sw = ilk_atomic_load_u32(_sw, ILK_ORDER_RELAXED)
        if sr & _RW.sleeperCountMask != 0 || sw | stored != 0 {
            _wakeSleepers(readers: sr & _RW.sleeperCountMask != 0, writers: sw != 0, storedPending: stored != 0)
        }
    }

    /// A thread starts a sleeper's protocol: counted in A before it registers in Sr or Sw, so
    /// that an unlock whose look at A misses it is one whose release its look at W will see.
    @usableFromInline
    internal func _attend() {
        // Seq_cst: the first step of the sleeper's half of its pair with an unlock.
        _ = ilk_atomic_fetch_add_u32(_attention, 1, ILK_ORDER_SEQ_CST)
    }

    /// A thread leaves a sleeper's protocol, after its registration in Sr or Sw has ended.
    @usableFromInline
    internal func _unattend() {
        // Relaxed: a count; a stale nonzero A only sends an unlock down its careful path.
        _ = ilk_atomic_fetch_sub_u32(_attention, 1, ILK_ORDER_RELAXED)
    }
}

/// The words' encodings (see the file comment).
@usableFromInline
internal enum _RW {
    /// W: a writer has claimed the writer word.
    @usableFromInline static var claimed: UInt32 { 1 }
    /// W: free, but writers are registered to sleep: readers wait, writers may claim.
    @usableFromInline static var pending: UInt32 { 4 }
    /// R: the claimant sleeps on R, waiting for the readers inside to leave.
    @usableFromInline static var drainWaiting: UInt64 { 1 << 63 }
    /// R: the count of readers (inside, or backing out).
    @usableFromInline static var readerCountMask: UInt64 { (1 << 63) - 1 }
    /// Sw: the count of writers registered to sleep (the whole word).
    @usableFromInline static var writerCountMask: UInt32 { 0xFFFF_FFFF }
    /// Sr: the count of readers registered to sleep.
    @usableFromInline static var sleeperCountMask: UInt64 { 0x7FFF_FFFF }
    /// The fence modes (`ilk_rwlock_words.fence_mode`): symmetric from init, or degraded.
    @usableFromInline static var symmetricMode: UInt32 { 1 }
    @usableFromInline static var degradedMode: UInt32 { 3 }
    /// A: set while the fence mode is not asymmetric, so that unlocks take the careful path.
    @usableFromInline static var attentionFences: UInt32 { 1 << 31 }
    /// Degraded mode: the longest futex wait before a sleeper looks again.
    static var degradedPollInterval: Duration { .milliseconds(1) }
    /// Sr: a registered reader has waited `starvationThreshold`: the next unlock grants.
    @usableFromInline static var starving: UInt64 { 1 << 31 }
    /// Sr: the registrations (count and flag), cleared by a grant.
    @usableFromInline static var registrationMask: UInt64 { 0xFFFF_FFFF }
    /// How long a reader waits before unlocks hand the lock to the sleeping readers instead of
    /// waking them to compete (Go's sync.Mutex switches to hand-off after the same 1 ms).
    /// Handing off at every unlock instead cost 5-150 times the throughput of the
    /// `rwlock-timeouts` stress workload (every write waited for sleeping readers to wake up).
    static var starvationThreshold: Duration { .milliseconds(1) }
    /// Sr: one grant epoch.
    @usableFromInline static var epochUnit: UInt64 { 1 << 32 }
    @usableFromInline @inline(never)
    static func misuse(_ lock: _RWLockCore, _ operation: StaticString) -> Never {
        // Relaxed: a description for the trap message.
        let e = ilk_atomic_load_u32(lock._entered, ILK_ORDER_RELAXED)
        let count = ilk_atomic_load_u64(lock._r, ILK_ORDER_RELAXED) & readerCountMask
        let held =
            e != 0
            ? "write-locked"
            : count == 0 || count > UInt64(UInt32.max) ? "not locked" : "read-locked by \(count) readers"
        fatalError("ReadWriteLock: \(operation) called on a lock that is \(held)")
    }

    @usableFromInline @inline(never)
    static func tooManyReaders() -> Never {
        fatalError("ReadWriteLock: too many readers (\(sleeperCountMask)) wait for the lock")
    }
}
