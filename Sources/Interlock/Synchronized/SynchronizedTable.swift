// The table behind `synchronized(_:_:)`: one recursive futex lock record per object being
// locked, found by the object's address without any lock when it is there already, recycled
// once nobody holds or waits on it.
//
// Algorithm: the design of Apple's objc4 (objc-sync.mm) — a fixed table of buckets, each a
// short list of per-object records under a small lock, a record counting the threads that use
// it, and a per-thread cache so that re-entry skips the table — with these differences:
//   - a record's user count and its mutex are one futex word, so an uncontended acquire is
//     one CAS and an uncontended release one CAS, as for a plain mutex;
//   - a record stays linked and keyed by its object while unused, and a call finds it by a
//     lock-free walk of the bucket list (an RCU read-side section, CShims/include/ilk_rcu.h)
//     and claims it with that one CAS; the bucket lock is taken only when the walk finds no
//     record for the object, to rename or add one;
//   - a claim that finds no record for its object unlinks the bucket's unused records beyond
//     the one it takes and one spare, and retires them to RCU (objc4 keeps every record it
//     ever made), so a burst of objects locked at once is given back as the table is used;
//     memory never follows the number of objects ever locked;
//   - the API takes a closure, so the record found on entry is still at hand on exit: the
//     exit never looks anything up, and the per-thread cache only has to answer "does this
//     thread hold that object already?" (a stack of object addresses, not of records).
//
// Layout (CShims/include/ilk_sync.h): ILK_SYNC_BUCKET_COUNT = 128 buckets of 128 bytes in
// zeroed static memory, each a `_MutexWord` lock word and the head of its list; records of 64
// bytes, 64-byte aligned (two records' words never share a line):
//
//   field    written by                              read by
//   -------  --------------------------------------  --------------------------------------
//   word     atomics (the state table below)         atomics; futex word of the sleepers
//   owner    the holder (relaxed atomics)            anyone, comparing with its own id
//   depth    the holder (plain)                      the holder
//   object   bucket-lock holder, word DEAD or        walkers (atomics, a guess); users
//            record unpublished (relaxed atomics)    (stable while they are users)
//   next     bucket-lock holder (atomics)            walkers (acquire)
//   garbage  the thread that unlinked the record     that thread
//
// The word: bit 31 DEAD, bits 2-30 U (users: threads that hold the record or are registered
// to wait for it), bits 0-1 L (the lock: 0 free, 1 locked, 2 locked and maybe sleepers):
//
//   word            meaning
//   --------------  -----------------------------------------------------------------------
//   0               unused: nobody holds it or waits on it (a spare)
//   U=n, L=1        held; the other n-1 users registered and are awake (none asleep yet)
//   U=n, L=2        held; registered waiters may sleep: the release must wake one if n > 1
//   U=n, L=0, n>=1  free, with n registered waiters (one just woken, or a holder between
//                   clearing L and leaving U): the next taker takes it
//   DEAD            being renamed or unlinked by the bucket-lock holder, or unlinked
//                   (retired): every claim fails on it
//
// A record's states: spare (linked, word 0, keyed by an object that may have died — a claim
// by a new object at that address revives it, which is the same as a fresh record); in use
// (linked, U >= 1, keyed by a live object); dead (word DEAD: transiently while the bucket
// lock's holder renames it, for good once unlinked, until RCU frees it).
//
// Transitions (a call `synchronized(x, body)` with K = x's address, by thread t):
//   re-entry   K is on t's held stack: t holds x's record already; run body, touch nothing.
//   walk       inside an RCU read-side section, follow the bucket list (acquire loads) to a
//              record whose object reads K. None: the slow claim below.
//   fast claim CAS word 0 -> U=1,L=1 (acquire). Success: leave the section, check that the
//              record's object is still K (it may have been renamed between the walk and the
//              CAS: ABA); if not, release it as below and do the slow claim.
//   re-enter   the CAS failed and owner == t (x entered deeper than the held stack stores):
//   by owner   leave the section; depth += 1. No change to the word.
//   contended  the CAS failed: spin with backoff (unregistered, inside the section); when L
//              reads 0, CAS word -> U+1, L=1 (acquire), leave, check the key as above. When the
//              spin budget is spent, register: CAS word -> U+1, L=2 (acquire), leave the
//              section, check the key (if not K: U -= 1 and do the slow claim), then wait as a
//              registered user: when L reads 0, CAS L -> 2 (acquire: taken); else set L = 2
//              and futex-wait on the word. Any DEAD read: leave and do the slow claim.
//   slow claim with the bucket lock held, scan the list. A record keyed K: re-enter by owner,
//              or take it (L 0 -> 1 with U+1) or register on it (U+1, L=2) and, once the
//              bucket lock is dropped, wait as a registered user. No record keyed K: the first
//              spare that a CAS 0 -> DEAD (acquire) wins is renamed (object = K), and published
//              held by t by a store U=1,L=1 (release); else a fresh record is linked at the
//              head (release store) held by t. Besides those, one spare stays linked; every
//              other spare whose CAS 0 -> DEAD wins is unlinked (release store of the
//              predecessor's next) and, once the bucket lock is dropped, retired to RCU.
//   own        after taking L: owner = t, depth = 1. Then push K on t's held stack.
//   release    pop K; depth -= 1; at 0, owner = 0 and release the word: CAS U=1,L=1 -> 0
//              (release). Otherwise, with n = U: if L == 2 and n > 1, CAS L -> 0 (release,
//              still a user), wake one sleeper, then U -= 1 (release); else CAS
//              U -> n-1, L -> 0 (release). This is t's last access to the record.
//
// Invariants:
//   1. A bucket holds at most one linked record per key: a record is renamed or added only
//      after a scan of the whole list under the bucket lock found none with that key, and keys
//      change only under the bucket lock.
//   2. Every thread that holds a record's lock or sleeps on it (or is about to) is counted in
//      its U; it leaves U only after its release, wake included. So U == 0 implies L == 0
//      (every path that leaves U clears L first or in the same CAS, or never set it but for a
//      registration on a wrongly keyed record, whose holder is a user), and word 0 means
//      nobody holds the record, nobody sleeps on it, and nobody will touch it but a new claim.
//      Spinners are not users: they only read the word inside their read-side section, and
//      whatever they take they take by a CAS and then check the key.
//   3. DEAD is set only by a CAS from 0, by the holder of the bucket lock. A linked record is
//      DEAD only while that thread holds the lock (it renames and republishes it, or unlinks
//      it); an unlinked record stays DEAD. Every claim and registration is a CAS from a value
//      without DEAD, so none succeeds on a record being renamed or unlinked.
//   4. A record's key changes only while its word is DEAD. A user (U counted, by its own CAS)
//      therefore reads the current key, and it cannot change until the user leaves U: after
//      the check "object == K" the record is K's until the user's release. While U >= 1 the
//      key is the address of a live object: each counted call keeps its object alive
//      (`_fixLifetime` after the release, Synchronized.swift) until after its release. With 1., two
//      different live objects never share a record, and an object never has two.
//   5. A record is unlinked only when DEAD, and freed only by RCU after a grace period, i.e.
//      after every read-side section that began before it was unlinked has ended. Walkers
//      read records (and CAS their words) only inside a section, and a walker that started
//      after the unlink cannot reach the record (an unlinked record's `next` is left as it
//      was, so a walker standing on it still reaches the rest of the list). So no walker
//      touches freed memory; a stale walker meets DEAD and goes to the slow claim.
//   6. A record is allocated only when its bucket holds no spare that its claim could win, and
//      a claim that finds no record for its key leaves at most one spare linked besides the
//      record it takes. So a bucket never holds more records than its peak number of records
//      in use at once (plus one), and right after such a claim holds its records in use plus
//      at most one. Memory follows how many objects are locked at once, not how many were
//      ever locked; in steady state claims allocate nothing.
//   7. A key is on thread t's held stack exactly while t is inside a call that acquired that
//      key's record (pushed after the acquire, popped before the release; calls nest, so the
//      stack is LIFO). A key found there is held by t: re-entry is safe without the table.
//      Only the first ILK_SYNC_HELD_SLOTS keys are stored; for deeper ones the owner check
//      answers: a thread reads its own id in `owner` only while it holds the record, and then
//      the key it read during its walk is the current one (4., and its own acquisition is
//      earlier in program order), so owner == t after a walk to K means t holds K's record.
//
// Memory ordering (the same argument holds on AArch64, where these are LDAR/STLR/CASAL-class
// instructions and nothing relies on x86's stronger loads):
//   - Lock: every CAS that takes L (0 -> 1 or 0 -> 2) is an acquire, every release of L (the
//     CASes that clear it) a release; they pair, so a body's writes happen-before the next
//     holder's body, and `depth` and the key check ride on it. The word's other RMWs continue
//     its release sequences (C++20 rules: every later RMW), so an acquire that reads any
//     later value still synchronizes with the release that cleared L.
//   - Recycling: the CAS 0 -> DEAD is an acquire and every way of leaving U a release, so the
//     renaming or unlinking thread sees every earlier user's accesses (owner, depth, the word)
//     finished. The renamer's store of U=1,L=1 is a release heading a release sequence that
//     every later claim's acquire CAS reads from: the new key happens-before every claim's
//     key check (4.). Registration CASes are acquires for the same reason.
//   - The list: a fresh record is initialised (relaxed and plain stores) before the release
//     store that links it at the head; an unlink stores the successor into the predecessor's
//     `next` with a release. Walkers load `head` and `next` with acquire, so the fields of a
//     record they reach are at least as initialised. The walk's load of `object` is relaxed:
//     it is a guess, checked after the claim (4.).
//   - Under the bucket lock (`_MutexWord`, acquire/release) the lock holder is the only writer
//     of `head`, `object` and `next`, so its own loads of them are relaxed.
//   - `owner` is relaxed, as in RecursiveLock.swift: a thread reads its own id there only if
//     it wrote it itself and has not cleared it since (coherence).
//   - RCU: a record is freed only after a grace period that follows its unlink (5.); the
//     shim's ThreadSanitizer annotations (ilk_rcu.h) give that edge to TSan.
//   - The held stack is thread-local and needs no ordering.
//
// Lost wake-ups: a sleeper registered (U+1) and set L = 2 in one CAS before its futex wait
// on the exact word it wrote; any later change of the word (a release, a registration) makes
// the wait return at once. A release that finds L == 2 and another user clears L and wakes
// one sleeper while still a user itself (so the record cannot be recycled under the wake);
// the woken thread takes L as 2, so a release after it wakes the next. A release that finds
// n == 1 knows that nobody sleeps (sleepers are users) and makes no system call. A spinner
// may take L ahead of a woken thread, which then sets L = 2 again and sleeps (Drepper's
// mutex 3, MutexWord.swift).
//
// No deadlock from the table itself: a thread holds a bucket lock only for one scan of one
// list; it never holds two, never sleeps on a record while holding one, and waits for
// nothing else under it (malloc at most). A thread that takes a record whose key turns out
// not to be its object's releases it at once without waiting. So the only waits between
// threads are on records, one per object: a set of calls deadlocks only if its objects
// themselves are locked in a cycle. A table of striped locks (object -> lock by hash) would
// add waits between unrelated objects that merely share a stripe.
//
// fork(): the RCU fork handlers are installed (once, a pthread_once check) by every slow
// claim, which the process's first call takes, since the table starts empty.
//
// Deciding figure (SynchronizedBenchmarks, one run before and one after, against one global
// NSRecursiveLock): one object uncontended went from 1.53 to 0.72 of the peer's time, against the
// design before it (bucket lock, users count and a mutex: six atomic read-modify-writes). The
// runs, row by row, are in Benchmarks/README.md ("synchronized: the lock-free table").

import CInterlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The per-object lock records of ``synchronized(_:_:)`` (the file comment has the algorithm).
@usableFromInline
internal enum _SynchronizedTable {
    @usableFromInline
    internal typealias Record = UnsafeMutablePointer<ilk_sync_record>

    /// One user in the word (bits 2-30).
    @usableFromInline static var _user: UInt32 { 4 }
    /// The lock bits L: 0 free, 1 locked, 2 locked and maybe sleepers.
    @usableFromInline static var _lockMask: UInt32 { 3 }
    /// Renamed or unlinked under the bucket lock: every claim fails.
    @usableFromInline static var _dead: UInt32 { 0x8000_0000 }
    /// The word of a record held by its only user, nobody asleep.
    @usableFromInline static var _heldAlone: UInt32 { _user | 1 }

    /// The users counted in `word`.
    @inlinable @inline(__always)
    internal static func _users(_ word: UInt32) -> UInt32 { (word & ~_dead) >> 2 }

    /// Stalls a claim between its walk and its CAS (tests only): set before arming
    /// `ilk_sync_hook_word()`, cleared after disarming it, with no claim running in between
    /// that the test did not start.
    nonisolated(unsafe) internal static var _walkHook: ((_ key: UInt, _ record: Record) -> Void)?

    /// The bucket of the object at address `key`: the top bits of `key` times 2^64/φ
    /// (Fibonacci hashing), which spreads the 16-byte-aligned addresses of neighbouring
    /// allocations over the whole table.
    @inlinable @inline(__always)
    internal static func bucketIndex(of key: UInt) -> UInt32 {
        UInt32(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - ILK_SYNC_BUCKET_SHIFT))
    }

    @inlinable @inline(__always)
    internal static func _next(_ record: Record) -> Record? {
        // Acquire: pairs with the release store that linked a fresh record at the head or
        // unlinked one (file comment), so the fields of the record reached are initialised.
        ilk_atomic_load_ptr(ilk_sync_record_next_word(record), ILK_ORDER_ACQUIRE)?
            .assumingMemoryBound(to: ilk_sync_record.self)
    }

    @inlinable @inline(__always)
    internal static func _head(_ bucket: UnsafeMutablePointer<ilk_sync_bucket>) -> Record? {
        // Acquire: as in `_next`.
        ilk_atomic_load_ptr(ilk_sync_bucket_head_word(bucket), ILK_ORDER_ACQUIRE)?
            .assumingMemoryBound(to: ilk_sync_record.self)
    }

    /// The record's key. Relaxed: a walker's guess, or a user's check after its acquiring
    /// CAS, which synchronized with the release that published the key (file comment, 4.).
    @inlinable @inline(__always)
    internal static func _key(_ record: Record) -> UInt {
        ilk_atomic_load_uptr(ilk_sync_record_object(record), ILK_ORDER_RELAXED)
    }

    /// Claims and acquires the record of the object at address `key` for the calling thread,
    /// which does not hold it through its held stack. Sleeps while another thread holds it.
    /// - Returns: the record, to pass to ``release(_:)`` when the body has run.
    @usableFromInline
    internal static func acquire(_ key: UInt) -> Record {
        let tid = ilk_current_thread_id()
        let bucket = ilk_sync_bucket_at(bucketIndex(of: key))!
        ilk_rcu_read_lock()
        var current = _head(bucket)
        while let record = current {
            if _key(record) == key { break }
            current = _next(record)
        }
        if let record = current {
            // Relaxed: a test's switch; `_runWalkHook` re-reads it with acquire.
            if _slowPath(ilk_atomic_load_u32(ilk_sync_hook_word(), ILK_ORDER_RELAXED) != 0) {
                _runWalkHook(key, record)
            }
            let word = ilk_sync_record_word(record)!
            // Acquire on success: pairs with the release that cleared L (or published a
            // renamed record); relaxed on failure: the value only picks the next path.
            let seen = ilk_atomic_cas_value_u32(word, 0, _heldAlone, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
            if _fastPath(seen == 0) {
                ilk_rcu_read_unlock()  // a user now: the record cannot be unlinked (2., 3.)
                if _fastPath(_key(record) == key) {
                    _own(record, tid)
                    ilk_sync_held_push(key)
                    return record
                }
                _releaseWord(record)  // renamed between the walk and the CAS
            } else if ilk_atomic_load_u32(ilk_sync_record_owner(record), ILK_ORDER_RELAXED) == tid {
                // Relaxed: exact for the asking thread (file comment, 7.).
                ilk_rcu_read_unlock()
                ilk_sync_record_depth(record)!.pointee &+= 1
                ilk_sync_held_push(key)
                return record
            } else if _acquireContended(record, key, tid) {  // ends the read-side section
                ilk_sync_held_push(key)
                return record
            }
        } else {
            ilk_rcu_read_unlock()
        }
        let record = _claimSlow(key, tid, bucket)
        ilk_sync_held_push(key)
        return record
    }

    /// Undoes one ``acquire(_:)`` by the calling thread: releases the record when its depth
    /// returns to 0, which also stops counting the thread among the record's users.
    @usableFromInline
    internal static func release(_ record: Record) {
        ilk_sync_held_pop()
        let tid = ilk_current_thread_id()
        let owner = ilk_sync_record_owner(record)!
        // Relaxed: exact for the asking thread (file comment).
        let holder = ilk_atomic_load_u32(owner, ILK_ORDER_RELAXED)
        if _slowPath(holder != tid) { _releaseByNonOwner(holder: holder, caller: tid) }
        let depth = ilk_sync_record_depth(record)!
        depth.pointee &-= 1
        if depth.pointee == 0 {
            // Relaxed: cleared before the word's release, which publishes it to the next holder.
            ilk_atomic_store_u32(owner, 0, ILK_ORDER_RELAXED)
            _releaseWord(record)
        }
    }

    /// Records the calling thread as the holder of the record whose L it has just taken.
    @inlinable @inline(__always)
    internal static func _own(_ record: Record, _ tid: UInt32) {
        // Relaxed: other threads only compare it with their own id.
        ilk_atomic_store_u32(ilk_sync_record_owner(record), tid, ILK_ORDER_RELAXED)
        ilk_sync_record_depth(record)!.pointee = 1
    }

    /// Releases L and leaves U: the release transition (file comment). The caller's last
    /// access to the record.
    @inlinable @inline(__always)
    internal static func _releaseWord(_ record: Record) {
        let word = ilk_sync_record_word(record)!
        // Release: pairs with the acquiring CAS of the next taker, and with the CAS 0 -> DEAD
        // of a thread that renames or unlinks the record. Relaxed on failure: the value read
        // only seeds the slow path's CAS loop.
        let seen = ilk_atomic_cas_value_u32(word, _heldAlone, 0, ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
        if _slowPath(seen != _heldAlone) { _releaseWordSlow(word, seen) }
    }

    /// The release with other users registered, or L == 2.
    @usableFromInline @inline(never)
    internal static func _releaseWordSlow(_ word: UnsafeMutablePointer<UInt32>, _ seen: UInt32) {
        var current = seen
        while true {
            let lock = current & _lockMask
            if _slowPath(lock == 0 || current & _dead != 0 || _users(current) == 0) {
                _internalError("a record's word was released while not held (word \(current))")
            }
            if lock == 2 && _users(current) > 1 {
                // Release: pairs with the acquiring CAS of the next taker. Still a user, so
                // the record cannot be recycled before the wake below.
                let witnessed = ilk_atomic_cas_value_u32(
                    word, current, current & ~_lockMask,
                    ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
                if witnessed != current { current = witnessed; continue }
                _Futex.wakeOne(word, for: .synchronized)
                // Release: pairs with the CAS 0 -> DEAD of a renaming or unlinking thread.
                _ = ilk_atomic_fetch_sub_u32(word, _user, ILK_ORDER_RELEASE)
                return
            }
            // Nobody asleep: either L == 1 (registered users are awake and will look again),
            // or this is the only user. Release: as in `_releaseWord`.
            let witnessed = ilk_atomic_cas_value_u32(
                word, current, current &- _user &- lock,
                ILK_ORDER_RELEASE, ILK_ORDER_RELAXED)
            if witnessed == current { return }
            current = witnessed
        }
    }

    /// The contended transition, entered inside the walk's read-side section (which it ends):
    /// spins, then registers and sleeps. Returns `true` holding the record of `key`, `false`
    /// when the record turned out dead or renamed (the caller does the slow claim).
    @usableFromInline @inline(never)
    internal static func _acquireContended(_ record: Record, _ key: UInt, _ tid: UInt32) -> Bool {
        #if INTERLOCK_CONTENTION
        let probe = _Contention.begin()
        let taken = _acquireWaiting(record, key, tid)
        if probe != 0 && taken, let address = UnsafeRawPointer(bitPattern: key) {
            // SAFETY: `key` is the address of the object passed to synchronized, which keeps
            // it alive for the call; borrowed unretained for the record's label.
            _Contention.end(probe, .synchronized, Unmanaged<AnyObject>.fromOpaque(address).takeUnretainedValue())
        }
        return taken
        #else
        return _acquireWaiting(record, key, tid)
        #endif
    }

    /// `_acquireContended`'s spin, registration and sleep.
    internal static func _acquireWaiting(_ record: Record, _ key: UInt, _ tid: UInt32) -> Bool {
        let word = ilk_sync_record_word(record)!
        var budget = _spinBudget
        var backoff: UInt32 = 1
        let jitter = ilk_spin_jitter()
        while true {
            // backoff plus a jitter in 0..<backoff, as in `_MutexWord._spin`.
            let pauses = backoff &+ (jitter & (backoff &- 1))
            if pauses >= budget { break }
            budget &-= pauses
            for _ in 0..<pauses { ilk_spin_pause() }
            backoff &<<= 1
            // Relaxed: only decides whether to try the acquiring CAS below.
            let current = ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
            if current & _dead != 0 { break }
            if current & _lockMask == 0
                // Acquire on success: pairs with the release that cleared L.
                && ilk_atomic_cas_value_u32(
                    word, current, current &+ _user &+ 1,
                    ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == current
            {
                ilk_rcu_read_unlock()
                return _keep(record, key, tid)
            }
        }
        // Register (U + 1, L = 2), or take L if it is free meanwhile.
        // Relaxed: a guess for the CAS.
        var current = ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
        while true {
            if current & _dead != 0 {
                ilk_rcu_read_unlock()
                return false
            }
            if current & _lockMask == 0 {
                // Acquire on success: as in the spin.
                let witnessed = ilk_atomic_cas_value_u32(
                    word, current, current &+ _user &+ 1,
                    ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
                if witnessed == current {
                    ilk_rcu_read_unlock()
                    return _keep(record, key, tid)
                }
                current = witnessed
                continue
            }
            // Acquire on success: pairs with the release that published the key (4.), which
            // the check below reads.
            let witnessed = ilk_atomic_cas_value_u32(
                word, current, (current & ~_lockMask) &+ _user &+ 2,
                ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
            if witnessed == current { break }
            current = witnessed
        }
        ilk_rcu_read_unlock()  // a user now
        if _key(record) != key {
            // Renamed between the walk and the registration: leave U (the L = 2 written is
            // harmless: the holder, a user, at worst finds itself alone). Release: pairs with
            // the CAS 0 -> DEAD of a thread that renames or unlinks the record.
            _ = ilk_atomic_fetch_sub_u32(word, _user, ILK_ORDER_RELEASE)
            return false
        }
        _waitRegistered(word)
        _own(record, tid)
        return true
    }

    /// After taking L by a CAS that also counted the caller: keeps the record if its key is
    /// still `key`, else releases it at once.
    @inlinable @inline(__always)
    internal static func _keep(_ record: Record, _ key: UInt, _ tid: UInt32) -> Bool {
        if _key(record) == key {
            _own(record, tid)
            return true
        }
        _releaseWord(record)
        return false
    }

    /// Waits, as a registered user of the record (counted in U), until it takes L (as 2).
    @usableFromInline @inline(never)
    internal static func _waitRegistered(_ word: UnsafeMutablePointer<UInt32>) {
        // Relaxed: a guess for the CAS.
        var current = ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
        while true {
            if current & _lockMask == 0 {
                // Acquire on success: pairs with the release that cleared L. Taken as 2: other
                // registered users may sleep (Drepper's mutex 3).
                let witnessed = ilk_atomic_cas_value_u32(
                    word, current, current | 2,
                    ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
                if witnessed == current { return }
                current = witnessed
                continue
            }
            if current & _lockMask == 1 {
                // Relaxed: marks the word only; nothing is taken or read through it.
                let marked = (current & ~_lockMask) | 2
                let witnessed = ilk_atomic_cas_value_u32(
                    word, current, marked,
                    ILK_ORDER_RELAXED, ILK_ORDER_RELAXED)
                if witnessed != current { current = witnessed; continue }
                current = marked
            }
            _ = _Futex.wait(word, expected: current, for: .synchronized)
            // Relaxed: a guess for the CAS.
            current = ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
        }
    }

    /// The slow claim (file comment): under the bucket lock, finds the record of `key` and
    /// takes it or registers on it, or renames a spare or links a fresh record, held; unlinks
    /// surplus spares, which are retired to RCU once the lock is dropped.
    @usableFromInline @inline(never)
    internal static func _claimSlow(_ key: UInt, _ tid: UInt32, _ bucket: UnsafeMutablePointer<ilk_sync_bucket>)
        -> Record
    {
        // The first claim of the process comes here (the table starts empty): the place to
        // make RCU fork-safe before any record is retired. A pthread_once check after that.
        ilk_rcu_install_fork_handlers()
        let lock = ilk_sync_bucket_lock(bucket)!
        let head = ilk_sync_bucket_head_word(bucket)!
        _MutexWord.lock(lock, for: .synchronized)
        // Relaxed (every list load under the lock): this thread is the only writer now.
        var current = ilk_atomic_load_ptr(head, ILK_ORDER_RELAXED)?.assumingMemoryBound(to: ilk_sync_record.self)
        while let record = current, _key(record) != key {
            current = ilk_atomic_load_ptr(ilk_sync_record_next_word(record), ILK_ORDER_RELAXED)?
                .assumingMemoryBound(to: ilk_sync_record.self)
        }
        if let found = current {
            // Relaxed: exact for the asking thread (7.).
            if ilk_atomic_load_u32(ilk_sync_record_owner(found), ILK_ORDER_RELAXED) == tid {
                _unlockBucket(lock)
                ilk_sync_record_depth(found)!.pointee &+= 1
                return found
            }
            let taken = _takeOrRegister(ilk_sync_record_word(found)!)
            _unlockBucket(lock)
            if !taken { _waitRegistered(ilk_sync_record_word(found)!) }
            _own(found, tid)
            return found
        }
        var renamable: Record? = nil
        var keptSpare = false
        var garbage: Record? = nil  // unlinked, chained through `garbage`
        var previous: Record? = nil
        current = ilk_atomic_load_ptr(head, ILK_ORDER_RELAXED)?.assumingMemoryBound(to: ilk_sync_record.self)
        while let record = current {
            let nextWord = ilk_sync_record_next_word(record)!
            let next = ilk_atomic_load_ptr(nextWord, ILK_ORDER_RELAXED)
            let word = ilk_sync_record_word(record)!
            // Relaxed: a guess; the CAS decides.
            if ilk_atomic_load_u32(word, ILK_ORDER_RELAXED) == 0 {
                if renamable != nil && !keptSpare {
                    keptSpare = true
                    // Acquire: pairs with the release by which the record's last user left U, so
                    // every earlier use of the record happens-before its renaming or free (2.).
                } else if ilk_atomic_cas_value_u32(word, 0, _dead, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED) == 0 {
                    if renamable == nil {
                        renamable = record
                    } else {
                        // Release: a walker that reads `next` here sees it initialised (the
                        // file comment). The record's own `next` is left for walkers on it (5.).
                        let link: UnsafeMutablePointer<UnsafeMutableRawPointer?> =
                            previous.map { ilk_sync_record_next_word($0)! } ?? head
                        ilk_atomic_store_ptr(link, next, ILK_ORDER_RELEASE)
                        ilk_sync_record_garbage(record).pointee = garbage
                        garbage = record
                        current = next?.assumingMemoryBound(to: ilk_sync_record.self)
                        continue
                    }
                }
            }
            previous = record
            current = next?.assumingMemoryBound(to: ilk_sync_record.self)
        }
        let record: Record
        if let renamable {
            // Relaxed: the word is DEAD, so no claim can succeed meanwhile; the release below
            // publishes the key to every later claim (4.).
            ilk_atomic_store_uptr(ilk_sync_record_object(renamable), key, ILK_ORDER_RELAXED)
            _own(renamable, tid)
            // Release: heads the release sequence every later claim's acquire CAS reads from.
            ilk_atomic_store_u32(ilk_sync_record_word(renamable)!, _heldAlone, ILK_ORDER_RELEASE)
            record = renamable
        } else {
            record = _allocateRecord()
            // Relaxed (all four): the record is unpublished; the release store below publishes it.
            ilk_atomic_store_u32(ilk_sync_record_word(record), _heldAlone, ILK_ORDER_RELAXED)
            ilk_atomic_store_uptr(ilk_sync_record_object(record), key, ILK_ORDER_RELAXED)
            ilk_atomic_store_ptr(
                ilk_sync_record_next_word(record),
                ilk_atomic_load_ptr(head, ILK_ORDER_RELAXED), ILK_ORDER_RELAXED)
            _own(record, tid)
            // Release: pairs with the walkers' acquire load of the head.
            ilk_atomic_store_ptr(head, UnsafeMutableRawPointer(record), ILK_ORDER_RELEASE)
        }
        _unlockBucket(lock)
        while let dead = garbage {
            garbage = ilk_sync_record_garbage(dead).pointee
            _retireRecord(dead)
        }
        return record
    }

    /// Counts the caller in U of a linked record, with the bucket lock held (so the word is not
    /// DEAD, 3.), taking L if it is free. - Returns: whether L was taken.
    @usableFromInline
    internal static func _takeOrRegister(_ word: UnsafeMutablePointer<UInt32>) -> Bool {
        // Relaxed: a guess for the CAS.
        var current = ilk_atomic_load_u32(word, ILK_ORDER_RELAXED)
        while true {
            let taking = current & _lockMask == 0
            let desired = taking ? current &+ _user &+ 1 : (current & ~_lockMask) &+ _user &+ 2
            // Acquire on success: pairs with the release that cleared L (when taking).
            let witnessed = ilk_atomic_cas_value_u32(word, current, desired, ILK_ORDER_ACQUIRE, ILK_ORDER_RELAXED)
            if witnessed == current { return taking }
            current = witnessed
        }
    }

    @usableFromInline
    internal static func _unlockBucket(_ lock: UnsafeMutablePointer<UInt32>) {
        if _slowPath(!_MutexWord.unlock(lock, for: .synchronized)) {
            _internalError("a bucket lock was unlocked while not locked")
        }
    }

    /// Runs the test hook armed through `ilk_sync_hook_word()`.
    @usableFromInline @inline(never)
    internal static func _runWalkHook(_ key: UInt, _ record: Record) {
        // Acquire: pairs with the test's release store that armed the hook after setting it.
        if ilk_atomic_load_u32(ilk_sync_hook_word(), ILK_ORDER_ACQUIRE) != 0 { _walkHook?(key, record) }
    }

    /// A zeroed record, 64-byte aligned (from `ilk_block_alloc_zeroed`, freed by RCU).
    @usableFromInline
    internal static func _allocateRecord() -> Record {
        let record = ilk_block_alloc_zeroed(MemoryLayout<ilk_sync_record>.size, 64)!
            .bindMemory(to: ilk_sync_record.self, capacity: 1)
        // Relaxed: a statistic, read after the threads that moved it are joined or as a snapshot.
        _ = ilk_atomic_fetch_add_u64(ilk_sync_counter_allocated(), 1, ILK_ORDER_RELAXED)
        return record
    }

    /// Hands an unlinked (DEAD) record to RCU, which frees it after a grace period (5.).
    @usableFromInline
    internal static func _retireRecord(_ record: Record) {
        ilk_rcu_retire(UnsafeMutableRawPointer(record), MemoryLayout<ilk_sync_record>.size)
        // Relaxed: a statistic (see `_allocateRecord`).
        _ = ilk_atomic_fetch_add_u64(ilk_sync_counter_freed(), 1, ILK_ORDER_RELAXED)
    }

    /// A release by a thread that does not hold the record. The API pairs every release with its
    /// acquire on the same thread, so a holder that is not a thread of this process means that
    /// the process forked inside the body (the child's thread has a new id): a misuse, named as
    /// such. Anything else is a bug of this file.
    @usableFromInline @inline(never)
    internal static func _releaseByNonOwner(holder: UInt32, caller: UInt32) -> Never {
        if holder != 0, access("/proc/self/task/\(holder)", F_OK) != 0, errno == ENOENT {
            fatalError(
                "synchronized(_:_:): a section entered by thread \(holder) is left by thread \(caller) of a "
                    + "process where thread \(holder) does not exist: fork() was called inside the body, and the "
                    + "child cannot leave a section held at the fork (its one thread has a new id, as with "
                    + "RecursiveLock). Fork outside synchronized, or exec at once in the child")
        }
        _internalError(
            "a record released by thread \(caller), which does not hold it "
                + (holder == 0 ? "(nobody does)" : "(thread \(holder) does)"))
    }

    @usableFromInline @inline(never)
    internal static func _internalError(_ what: String) -> Never {
        fatalError("synchronized(_:_:): internal error: \(what)")
    }

    /// The records linked in the bucket of `key`, head first, read under the bucket lock (tests).
    internal static func _bucketRecords(of key: UInt) -> [Record] {
        let bucket = ilk_sync_bucket_at(bucketIndex(of: key))!
        let lock = ilk_sync_bucket_lock(bucket)!
        _MutexWord.lock(lock, for: .synchronized)
        defer { _unlockBucket(lock) }
        var records: [Record] = []
        // Relaxed: under the bucket lock (file comment).
        var current = ilk_atomic_load_ptr(ilk_sync_bucket_head_word(bucket), ILK_ORDER_RELAXED)?
            .assumingMemoryBound(to: ilk_sync_record.self)
        while let record = current {
            records.append(record)
            current = ilk_atomic_load_ptr(ilk_sync_record_next_word(record), ILK_ORDER_RELAXED)?
                .assumingMemoryBound(to: ilk_sync_record.self)
        }
        return records
    }

    /// The record linked for `key` now, if any, found under the bucket lock (tests).
    internal static func _record(of key: UInt) -> Record? {
        _bucketRecords(of: key).first { _key($0) == key }
    }

    // MARK: - Census (tests and diagnostics)

    /// Counts the records of every bucket, each bucket under its lock (buckets one after the
    /// other, so the sum is exact only when no thread is inside `synchronized`).
    internal static func census() -> SynchronizedCensus {
        var census = SynchronizedCensus()
        for index in 0..<UInt32(ILK_SYNC_BUCKET_COUNT) {
            let bucket = ilk_sync_bucket_at(index)!
            let lock = ilk_sync_bucket_lock(bucket)!
            _MutexWord.lock(lock, for: .synchronized)
            // Relaxed (list loads): under the bucket lock (file comment).
            var current = ilk_atomic_load_ptr(ilk_sync_bucket_head_word(bucket), ILK_ORDER_RELAXED)?
                .assumingMemoryBound(to: ilk_sync_record.self)
            while let record = current {
                // Acquire: as the CAS 0 -> DEAD, so a record's users read 0 only after their uses.
                if _users(ilk_atomic_load_u32(ilk_sync_record_word(record), ILK_ORDER_ACQUIRE)) == 0 {
                    census.spare += 1
                } else {
                    census.inUse += 1
                }
                current = ilk_atomic_load_ptr(ilk_sync_record_next_word(record), ILK_ORDER_RELAXED)?
                    .assumingMemoryBound(to: ilk_sync_record.self)
            }
            _ = _MutexWord.unlock(lock, for: .synchronized)
        }
        // Relaxed: statistics (see `_allocateRecord`).
        census.allocated = Int(ilk_atomic_load_u64(ilk_sync_counter_allocated(), ILK_ORDER_RELAXED))
        census.freed = Int(ilk_atomic_load_u64(ilk_sync_counter_freed(), ILK_ORDER_RELAXED))
        return census
    }
}

/// What the table of ``synchronized(_:_:)`` holds: for tests and the stress harness.
@_spi(Diagnostics)
public struct SynchronizedCensus: Sendable, Equatable {
    /// Records with at least one thread holding or waiting on them (or about to).
    public var inUse = 0
    /// Records linked in the table with no user, ready for reuse.
    public var spare = 0
    /// Records allocated since the process started.
    public var allocated = 0
    /// Records unlinked since the process started (retired to RCU, which frees them after a
    /// grace period).
    public var freed = 0

    /// Every record linked in the table.
    public var linked: Int { inUse + spare }

    /// Buckets in the table (each keeps at most one spare after a claim that found no record).
    public static var bucketCount: Int { Int(ILK_SYNC_BUCKET_COUNT) }

    /// The table now, bucket by bucket (exact when no thread is inside `synchronized`).
    public static func take() -> SynchronizedCensus { _SynchronizedTable.census() }
}
