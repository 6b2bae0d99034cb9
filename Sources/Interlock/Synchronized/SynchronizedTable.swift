// The table behind `synchronized(_:_:)`: one recursive futex lock record per object being
// locked, found by the object's address, recycled once nobody holds or waits on it.
//
// Algorithm: the design of Apple's objc4 (objc-sync.mm) — a fixed table of buckets, each a
// short list of per-object records under a small lock, a record counting the threads that use
// it, and a per-thread cache so that re-entry skips the table — with three differences:
//   - the record's mutex is RecursiveLock's scheme (owner thread id and depth over the futex
//     mutex of `_MutexWord`, MutexWord.swift) instead of a pthread recursive mutex;
//   - a claim that finds no record for its object frees the bucket's unused records beyond
//     the one it takes and one spare (objc4 keeps every record it ever made, as many per
//     bucket as were ever in use at once), so a burst of objects locked at once is given
//     back as the table is used; memory never follows the number of objects ever locked;
//   - the API takes a closure, so the record found on entry is still at hand on exit: the
//     exit never looks anything up, and the per-thread cache only has to answer "does this
//     thread hold that object already?" (a stack of object addresses, not of records).
//
// Layout (CShims/include/ilk_sync.h): ILK_SYNC_BUCKET_COUNT = 128 buckets of 128 bytes in
// zeroed static memory, each a `_MutexWord` lock word and the head of its list; records of 64
// bytes, 64-byte aligned (two records' mutex words never share a line):
//
//   field   guarded by                        meaning
//   ------  --------------------------------  ------------------------------------------------
//   mutex   _MutexWord (the record's)         0 unlocked, 1 locked, 2 locked + sleepers maybe
//   owner   relaxed atomics                   kernel tid of the holder, 0 when free
//   depth   the holder (plain)                the holder's table acquisitions of the record
//   users   atomics (see Memory ordering)     table acquisitions in progress, U below
//   object  the bucket lock                   the key: the address of the object, K below
//   next    the bucket lock                   the bucket list
//
// A record's states:
//
//   state    U     list     mutex, owner, depth   K
//   -------  ----  -------  --------------------  ----------------------------------------------
//   in use   >= 1  linked   anything              the address of a live object
//   spare    0     linked   0, 0, 0               stale: an object that may have died; a claim
//                                                 for a new object at that address revives it,
//                                                 which is the same as a fresh record
//   garbage  0     unlinked 0, 0, 0               unlinked from spare under the bucket lock,
//                                                 freed after it is dropped; unreachable
//
// Transitions (a call `synchronized(x, body)` with K = x's address, by thread t):
//   re-entry   K is on t's held stack: t holds x's record already; run body, touch nothing.
//   claim      with the bucket lock held, scan the list: a record with object == K gets U += 1
//              (spare -> in use, or one more user). Otherwise the first spare seen is renamed
//              (object = K, U 0 -> 1), or, when there is none, a fresh record is linked at the
//              head with U = 1; besides that one, at most one spare stays linked and every
//              other spare seen becomes garbage. Then the bucket lock is dropped.
//   acquire    owner == t (x was entered deeper than the held stack stores): depth += 1.
//              Otherwise lock the record's mutex (spinning briefly, then sleeping on it), then
//              owner = t, depth = 1. Push K on t's held stack.
//   release    pop K; depth -= 1; at 0, owner = 0 and unlock the mutex (waking one sleeper);
//              then U -= 1, t's last access to the record.
//
// Invariants:
//   1. A bucket holds at most one record per key: a record is renamed or added only after a
//      scan of the whole list under the bucket lock found none with that key.
//   2. Every thread that holds a record's mutex or waits on it is counted in its U: it claimed
//      the record before acquiring, and decrements after its unlock, wake included. Hence
//      U == 0 means the mutex is 0 and nobody sleeps on it or will touch the record again
//      except by a new claim.
//   3. U is incremented only with the bucket lock held. A thread holding the bucket lock that
//      reads U == 0 therefore knows it stays 0 until it lets go: it may rename, unlink or free
//      the record.
//   4. While U >= 1 the record's key is the address of a live object: each counted call keeps
//      its object alive (`withExtendedLifetime`, Synchronized.swift) until after its decrement,
//      so no other object can have that address meanwhile. With 1., two different live objects
//      never share a record, and an object never has two.
//   5. A record is allocated only when its bucket holds no spare, and a claim that finds no
//      record for its key leaves at most one spare linked. So a bucket never holds more records
//      than its peak number of records in use at once, and right after such a claim holds its
//      records in use plus at most one. Memory follows how many objects are locked at once,
//      not how many were ever locked; in steady state claims allocate nothing.
//   6. A key is on thread t's held stack exactly while t is inside a call that claimed and
//      acquired that key's record (pushed after the acquire, popped before the release; calls
//      nest, so the stack is LIFO). A key found there is held by t: re-entry is safe without the
//      table. Only the first ILK_SYNC_HELD_SLOTS keys are stored; for deeper ones the owner
//      check answers, exact for the asking thread as in RecursiveLock.
//
// Memory ordering:
//   - The bucket lock (`_MutexWord`, acquire/release) orders each list: `head`, `object`,
//     `next`, and every claim's increment of U before the next holder's look at U.
//   - U's decrement is a release and the claim's load of U an acquire. A claimant that reads 0
//     synchronizes with the last user's decrement, and through the release sequence that the
//     RMWs on U form, with every earlier user's too: all their accesses to the record (mutex
//     word, owner, depth, the futex wake) happen-before its renaming or free.
//   - U's increment is relaxed: it is made with the bucket lock held, and whoever acts on U's
//     value holds that lock (3.) or is the counted thread itself; the record's own words are
//     ordered by its mutex.
//   - The record's mutex (`_MutexWord`, acquire/release) orders the bodies run under it, so a
//     body's writes to the user's data happen-before the next holder's body; `depth` rides on it.
//   - `owner` is relaxed, as in RecursiveLock.swift: a thread reads its own id there only if it
//     wrote it itself and has not cleared it since (coherence), and compares with others' ids.
//   - The held stack is thread-local and needs no ordering.
//
// No deadlock from the table itself: a thread holds a bucket lock only for one scan of one
// list; it never holds two, never sleeps on a record's mutex while holding one, and waits for
// nothing else under it (an allocation by malloc at most, which takes no lock of this table).
// So the only waits between threads are on records' mutexes, one per object: a set of calls
// deadlocks only if its objects themselves are locked in a cycle. A table of striped locks
// (object -> lock by hash) would add waits between unrelated objects that merely share a
// stripe, and could deadlock code that nests distinct objects in opposite orders.

import CInterlock

/// The per-object lock records of ``synchronized(_:_:)`` (the file comment has the algorithm).
@usableFromInline
internal enum _SynchronizedTable {
    @usableFromInline
    internal typealias Record = UnsafeMutablePointer<ilk_sync_record>

    /// The bucket of the object at address `key`: the top bits of `key` times 2^64/φ
    /// (Fibonacci hashing), which spreads the 16-byte-aligned addresses of neighbouring
    /// allocations over the whole table.
    @inlinable @inline(__always)
    internal static func bucketIndex(of key: UInt) -> UInt32 {
        UInt32(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - ILK_SYNC_BUCKET_SHIFT))
    }

    /// Claims and acquires the record of the object at address `key` for the calling thread,
    /// which does not hold it through its held stack. Sleeps while another thread holds it.
    /// - Returns: the record, to pass to ``release(_:)`` when the body has run.
    @usableFromInline
    internal static func acquire(_ key: UInt) -> Record {
        let record = _claim(key)
        let tid = ilk_current_thread_id()
        let owner = ilk_sync_record_owner(record)!
        // Relaxed: only this thread ever writes its own id there (file comment).
        let depth = ilk_sync_record_depth(record)!
        if ilk_atomic_load_u32(owner, ILK_ORDER_RELAXED) == tid {
            depth.pointee &+= 1
        } else {
            _MutexWord.lock(ilk_sync_record_mutex(record), for: .synchronized)
            // Relaxed: other threads only compare it with their own id.
            ilk_atomic_store_u32(owner, tid, ILK_ORDER_RELAXED)
            depth.pointee = 1
        }
        ilk_sync_held_push(key)
        return record
    }

    /// Undoes one ``acquire(_:)`` by the calling thread: unlocks the record's mutex when its
    /// depth returns to 0, then stops counting the thread among the record's users.
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
            // Relaxed: cleared before the mutex's release, which publishes it to the next holder.
            ilk_atomic_store_u32(owner, 0, ILK_ORDER_RELAXED)
            if _slowPath(!_MutexWord.unlock(ilk_sync_record_mutex(record), for: .synchronized)) {
                _internalError("a record's mutex was unlocked while not locked")
            }
        }
        // Release: pairs with the acquire load of U in `_claim` by a thread that finds 0 and
        // renames or frees the record. This thread's last access to the record.
        _ = ilk_atomic_fetch_sub_u32(ilk_sync_record_users(record), 1, ILK_ORDER_RELEASE)
    }

    /// The claim transition (file comment): finds, renames or creates the record of `key`
    /// under its bucket's lock, counts the caller among its users and unlinks surplus spares,
    /// which are freed once the lock is dropped.
    @usableFromInline
    internal static func _claim(_ key: UInt) -> Record {
        let bucket = ilk_sync_bucket_at(bucketIndex(of: key))!
        let lock = ilk_sync_bucket_lock(bucket)!
        let head = ilk_sync_bucket_head(bucket)!
        _MutexWord.lock(lock, for: .synchronized)
        var found: Record? = nil
        var renamable: Record? = nil
        var keptSpare = false
        var garbage: Record? = nil  // unlinked spares, chained through `next`
        var previous: Record? = nil
        var current = head.pointee
        while let record = current {
            let next = ilk_sync_record_next(record).pointee
            if ilk_sync_record_object(record).pointee == key {
                found = record
                break
            }
            // Acquire: pairs with the release decrement of the record's last user (file
            // comment), so renaming or freeing it follows every use of it.
            if ilk_atomic_load_u32(ilk_sync_record_users(record), ILK_ORDER_ACQUIRE) == 0 {
                if renamable == nil {
                    renamable = record
                } else if !keptSpare {
                    keptSpare = true
                } else {
                    // SAFETY: U == 0 under the bucket lock (invariants 2 and 3): nobody else
                    // can reach the record once it is unlinked.
                    (previous.map { ilk_sync_record_next($0) } ?? head).pointee = next
                    ilk_sync_record_next(record).pointee = garbage
                    garbage = record
                    current = next
                    continue
                }
            }
            previous = record
            current = next
        }
        let record: Record
        if let found {
            record = found
        } else if let renamable {
            ilk_sync_record_object(renamable).pointee = key
            record = renamable
        } else {
            record = _allocateRecord()
            ilk_sync_record_object(record).pointee = key
            ilk_sync_record_next(record).pointee = head.pointee
            head.pointee = record
        }
        // Relaxed: made under the bucket lock, which orders it for every thread acting on U
        // (file comment, Memory ordering).
        _ = ilk_atomic_fetch_add_u32(ilk_sync_record_users(record), 1, ILK_ORDER_RELAXED)
        if _slowPath(!_MutexWord.unlock(lock, for: .synchronized)) {
            _internalError("a bucket lock was unlocked while not locked")
        }
        while let dead = garbage {
            garbage = ilk_sync_record_next(dead).pointee
            _freeRecord(dead)
        }
        return record
    }

    /// A zeroed record (spare state, no key), 64-byte aligned.
    @usableFromInline
    internal static func _allocateRecord() -> Record {
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<ilk_sync_record>.size, alignment: 64)
        let record = raw.initializeMemory(as: ilk_sync_record.self, repeating: ilk_sync_record(), count: 1)
        // Relaxed: a statistic, read after the threads that moved it are joined or as a snapshot.
        _ = ilk_atomic_fetch_add_u64(ilk_sync_counter_allocated(), 1, ILK_ORDER_RELAXED)
        return record
    }

    @usableFromInline
    internal static func _freeRecord(_ record: Record) {
        record.deinitialize(count: 1)
        UnsafeMutableRawPointer(record).deallocate()
        // Relaxed: a statistic (see `_allocateRecord`).
        _ = ilk_atomic_fetch_add_u64(ilk_sync_counter_freed(), 1, ILK_ORDER_RELAXED)
    }

    /// A release by a thread that does not hold the record: a bug of this file, since the API
    /// pairs every release with its acquire on the same thread.
    @usableFromInline @inline(never)
    internal static func _releaseByNonOwner(holder: UInt32, caller: UInt32) -> Never {
        _internalError(
            "a record released by thread \(caller), which does not hold it "
                + (holder == 0 ? "(nobody does)" : "(thread \(holder) does)"))
    }

    @usableFromInline @inline(never)
    internal static func _internalError(_ what: String) -> Never {
        fatalError("synchronized(_:_:): internal error: \(what)")
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
            var current = ilk_sync_bucket_head(bucket).pointee
            while let record = current {
                // Acquire: as in `_claim`, so a record's users read 0 only after their uses.
                if ilk_atomic_load_u32(ilk_sync_record_users(record), ILK_ORDER_ACQUIRE) == 0 {
                    census.spare += 1
                } else {
                    census.inUse += 1
                }
                current = ilk_sync_record_next(record).pointee
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
    /// Records freed since the process started.
    public var freed = 0

    /// Every record linked in the table.
    public var linked: Int { inUse + spare }

    /// Buckets in the table (each keeps at most one spare after a claim that found no record).
    public static var bucketCount: Int { Int(ILK_SYNC_BUCKET_COUNT) }

    /// The table now, bucket by bucket (exact when no thread is inside `synchronized`).
    public static func take() -> SynchronizedCensus { _SynchronizedTable.census() }
}
