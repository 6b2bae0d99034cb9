// ReadWriteLock: many readers or one writer, on futexes; writers preferred, readers not starved;
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
//                 (`ilk_rwlock_reader_leave_asm`, x86-64 Linux): CF says R was 0, OF that it
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

/// A reader-writer lock: any number of readers at once, or one writer alone.
///
/// Writers are preferred: while a writer waits, readers arriving later wait behind it and
/// ``tryLockRead()`` returns `false`, so a stream of readers cannot starve writers. Readers are
/// not starved either: a writer releasing the lock wakes sleeping readers to compete for it,
/// and once one of them has waited a millisecond, hands the lock to all of them before the next
/// writer gets in. Prefer ``withReadLock(_:)`` and ``withWriteLock(_:)``.
///
/// The uncontended write lock+unlock is one exchange and a plain store; the read lock+unlock
/// one atomic increment and one atomic decrement (Concurrency Kit's instructions).
///
/// - Warning: Neither lock is recursive: a thread that holds the read lock and asks for it again
///   while a writer waits deadlocks. Unlocking a lock not held in that mode traps.
public final class ReadWriteLock: @unchecked Sendable {
    // The words, laid out by `ilk_rwlock_words` (CShims/include/ilk_rwlock.h): W, Sw, N, RS, Sr,
    // the fence mode, A and E together, R in another 128-byte block; reached only through the
    // pointers below.
    @usableFromInline internal var _storage = ilk_rwlock_words()

    /// Creates an unlocked reader-writer lock.
    public init() {
        _storage.fence_mode = ilk_membarrier_setup() == 0 ? _RW.symmetricMode : 0
        _storage.attention = _storage.fence_mode == 0 ? 0 : _RW.attentionFences
    }

    #if INTERLOCK_LOCK_ORDER
    deinit { _LockOrder.forget(self) }
    #endif

    /// Creates a lock in symmetric mode when `symmetricFences` is true (as on systems without
    /// membarrier), so that tests can run both modes on one machine.
    internal init(symmetricFences: Bool) {
        _storage.fence_mode = symmetricFences || ilk_membarrier_setup() == 0 ? _RW.symmetricMode : 0
        _storage.attention = _storage.fence_mode == 0 ? 0 : _RW.attentionFences
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

    @inlinable @inline(__always)
    internal var _base: UnsafeMutableRawPointer {
        // SAFETY: `_storage` is the first stored property of this final class; objects never
        // move, and `self` is alive for the call. The words are disjoint 4- and 8-byte fields.
        UnsafeMutableRawPointer(_getUnsafePointerToStoredProperties(self))
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
    public func lockRead() {
        _LockOrder.willLock(self, .readWriteLockRead)
        // The shape of the code before the hooks (they compile to nothing without the trait).
        if _fastPath(_tryEnterRead()) {
            _LockOrder.didLock(self, .readWriteLockRead)
            return
        }
        _lockReadUntimed()
        _LockOrder.didLock(self, .readWriteLockRead)
    }

    /// Takes the lock for reading if that is possible at once: not while a writer holds it or
    /// waits for it.
    /// - Returns: `true` when the calling thread now holds the lock for reading.
    @inlinable
    public func tryLockRead() -> Bool {
        let taken = _tryEnterRead()
        if taken { _LockOrder.didLock(self, .readWriteLockRead) }
        return taken
    }

    /// Takes the lock for reading, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLockRead()``.
    /// - Returns: `true` when the calling thread now holds the lock for reading.
    @inlinable
    public func lockRead(before deadline: ContinuousClock.Instant) -> Bool {
        let taken = _tryEnterRead() || _lockReadSlow(deadline: deadline)
        if taken { _LockOrder.didLock(self, .readWriteLockRead) }
        return taken
    }

    /// Releases the calling thread's read lock.
    /// - Warning: Traps when the lock is not held for reading.
    @inlinable @inline(__always)
    public func unlockRead() {
        _LockOrder.didUnlock(self)
        // Relaxed: a misuse check only. Looked at BEFORE our decrement: while we hold a read
        // lock no writer can enter, so E seen now means we hold none.
        let e = ilk_atomic_load_u32(_entered, ILK_ORDER_RELAXED)
        // Release (a `lock sub` on x86-64, full barrier): pairs with the claimant's acquire of
        // R (one release sequence of RMWs). Classified by R's old value (ilk_rwlock.h).
        let outcome =
            _fastPath(ilk_flag_asm_usable())
            ? ilk_rwlock_reader_leave_asm(_r) : ilk_rwlock_reader_leave_builtin(_r)
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

    /// Runs `body` holding the lock for reading; releases it when `body` returns or throws.
    /// - Returns: what `body` returns.
    @inlinable
    public func withReadLock<R>(_ body: () throws -> R) rethrows -> R {
        lockRead()
        defer { unlockRead() }
        return try body()
    }

    /// One attempt to enter as a reader; takes the increment back when it may not stay.
    @inlinable @inline(__always)
    internal func _tryEnterRead() -> Bool {
        // Seq_cst: the reader's half of the Dekker pair with a claimant (CAS W, then load R).
        // Only the sign of the new value is used (D set: a claimant waits, so W is claimed),
        // so the increment compiles to `lock inc` and a branch on the sign flag.
        let new = ilk_atomic_add_fetch_u64(_r, 1, ILK_ORDER_SEQ_CST)
        if _fastPath(Int64(bitPattern: new) >= 0) {
            // Seq_cst: the other half; also acquire: pairs with the release store of the last
            // write unlock, whose section we are about to read.
            if _fastPath(ilk_atomic_load_u32(_w, ILK_ORDER_SEQ_CST) == 0) { return true }
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
    public func lockWrite() {
        _LockOrder.willLock(self, .readWriteLockWrite)
        _lockWriteUnchecked()
        _LockOrder.didLock(self, .readWriteLockWrite)
    }

    /// `lockWrite()` without the lock-order hooks.
    @inlinable @inline(__always)
    internal func _lockWriteUnchecked() {
        // Seq_cst: acquire (pairs with the release store of the last write unlock) and the
        // claimant's half of the Dekker pair with readers. An exchange, not a CAS: storing C
        // over C changes nothing, and from 0 or P it claims (file comment, "The claim").
        if _fastPath(ilk_atomic_exchange_u32(_w, _RW.claimed, ILK_ORDER_SEQ_CST) & _RW.claimed == 0) {
            // Seq_cst: as in `_enter`.
            if _fastPath(ilk_atomic_load_u64(_r, ILK_ORDER_SEQ_CST) == 0) {
                // Relaxed: as in `_enter`.
                ilk_atomic_store_u32(_entered, 1, ILK_ORDER_RELAXED)
                return
            }
            _drainUntimed()
            return
        }
        _lockWriteUntimed()
    }

    /// Takes the lock for writing if nobody holds it, without waiting.
    ///
    /// May also fail at the instant a reader that arrived while a writer waited is backing out
    /// (for a few instructions it counts as a reader); retry, or use ``lockWrite(before:)``.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func tryLockWrite() -> Bool {
        let taken = _tryLockWriteUnchecked()
        if taken { _LockOrder.didLock(self, .readWriteLockWrite) }
        return taken
    }

    /// `tryLockWrite()` without the lock-order hooks.
    @inlinable
    internal func _tryLockWriteUnchecked() -> Bool {
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

    /// Takes the lock for writing, waiting at most until `deadline`.
    ///
    /// Never returns `false` before the deadline; a deadline already passed makes this a
    /// ``tryLockWrite()``.
    /// - Returns: `true` when the calling thread now holds the lock for writing.
    @inlinable
    public func lockWrite(before deadline: ContinuousClock.Instant) -> Bool {
        let taken = _tryLockWriteUnchecked() || _lockWriteSlow(deadline: deadline)
        if taken { _LockOrder.didLock(self, .readWriteLockWrite) }
        return taken
    }

    /// Releases the calling thread's write lock.
    /// - Warning: Traps when the lock is not held for writing.
    @inlinable @inline(__always)
    public func unlockWrite() {
        _LockOrder.didUnlock(self)
        // Relaxed: E changes only by the claimant (the holder reads its own store).
        if _slowPath(ilk_atomic_load_u32(_entered, ILK_ORDER_RELAXED) == 0) { _RW.misuse(self, "unlockWrite()") }
        // Relaxed: published by W's release store below, after which the next claimant sets it.
        ilk_atomic_store_u32(_entered, 0, ILK_ORDER_RELAXED)
        _release()
    }

    /// Runs `body` holding the lock for writing; releases it when `body` returns or throws.
    /// - Returns: what `body` returns.
    @inlinable
    public func withWriteLock<R>(_ body: () throws -> R) rethrows -> R {
        lockWrite()
        defer { unlockWrite() }
        return try body()
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
        let attention = ilk_atomic_load_u32(_attention, ILK_ORDER_RELAXED)
        if _slowPath(attention != 0) {
            _releaseAttending(attention: attention)
            return
        }
        // Release: pairs with the acquire of W by the next readers and claimant.
        ilk_atomic_store_u32(_w, 0, ILK_ORDER_RELEASE)
        // The light half of the asymmetric store-load fence (A was 0 above: asymmetric mode).
        ilk_compiler_barrier()
        // Relaxed: ordered after the release store by the asymmetric fence (file comment).
        let after = ilk_atomic_load_u32(_attention, ILK_ORDER_RELAXED)
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
    static func misuse(_ lock: ReadWriteLock, _ operation: StaticString) -> Never {
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
