// Tests of synchronized(_:_:)'s lock-free claim racing the recycling of the record it found:
// a claimant is stalled by the table's walk hook between its walk (which found its object's
// spare record) and its CAS, while the main thread renames that record for another object
// (then leaves it free, or holds it) or unlinks it. The claimant must end up in a record of its
// own object: holding the other object's record would let two objects share a lock (or one
// object have two), and waiting on it would make distinct objects wait for each other.
//
// Part of the serialized "synchronized" suite: the bucket's records must stay as the test
// arranges them, so no other test may claim records meanwhile.

import CInterlock
import Testing

@_spi(Diagnostics) @testable import Interlock

extension SynchronizedTests {
    /// What the main thread does to the stalled claimant's record.
    enum RecordRace: Sendable { case renamedAndFree, renamedAndHeld, unlinked }

    @Test(
        "a claim stalled between walk and CAS while its record is renamed for another object and left free takes its own"
    )
    func stalledClaimRecordRenamedFree() { runStalledClaim(.renamedAndFree) }

    @Test(
        "a claim stalled between walk and CAS while its record is renamed and held for another object does not wait for it"
    )
    func stalledClaimRecordRenamedHeld() { runStalledClaim(.renamedAndHeld) }

    @Test("a claim stalled between walk and CAS while its record is unlinked takes a linked record of its own")
    func stalledClaimRecordUnlinked() { runStalledClaim(.unlinked) }

    func runStalledClaim(_ race: RecordRace) {
        // Arranges a's bucket: a claim of a fresh object trims it to at most two records, all
        // spare once it returns; a's claim then renames the first of them (in list order). For
        // `.unlinked`, two fresh records are linked ahead of a's: a later claim of a fresh
        // object renames the first, keeps the second and unlinks the rest, a's record among
        // them. A claim can meet a stale record keyed by its object's address instead (left by
        // a dead object), which upsets the order: then another set of objects is tried.
        var keep: [SyncToken] = []
        defer { withExtendedLifetime(keep) {} }
        var arranged: (objects: [SyncToken], record: _SynchronizedTable.Record)? = nil
        for _ in 0..<20 where arranged == nil {
            let (objects, made) = syncCollidingObjects(8)
            keep += made
            let a = objects[0]
            synchronized(objects[1]) {}
            if race == .unlinked {
                synchronized(a) {
                    synchronized(objects[2]) { synchronized(objects[3]) { synchronized(objects[4]) {} } }
                }
            } else {
                synchronized(a) {}
            }
            let records = _SynchronizedTable._bucketRecords(of: UInt(bitPattern: ObjectIdentifier(a)))
            guard let record = _SynchronizedTable._record(of: UInt(bitPattern: ObjectIdentifier(a))),
                let position = records.firstIndex(of: record)
            else { continue }
            if race == .unlinked ? position >= 2 : position == 0 { arranged = (objects, record) }
        }
        guard let (objects, record) = arranged else {
            Issue.record("could not arrange a bucket with a's record in place")
            return
        }
        let a = objects[0]
        let aKey = UInt(bitPattern: ObjectIdentifier(a))
        let key = { (object: AnyObject) in UInt(bitPattern: ObjectIdentifier(object)) }
        let stalled = AtomicBool(false), resume = AtomicBool(false)
        _SynchronizedTable._walkHook = { key, _ in
            guard key == aKey else { return }
            stalled.store(true)
            _ = lockEventually { resume.load() }
        }
        // Release: pairs with the claim's acquire load in `_runWalkHook`.
        ilk_atomic_store_u32(ilk_sync_hook_word(), 1, ILK_ORDER_RELEASE)
        let inside = AtomicBool(false), leave = AtomicBool(false), done = AtomicBool(false)
        let claimant = TestThread {
            synchronized(a) {
                inside.store(true)
                // Longer than the checks made meanwhile, each bounded by `lockStallLimit`.
                _ = lockEventually(within: lockStallLimit * 4) { leave.load() }
            }
            done.store(true)
        }
        let wasStalled = lockEventually { stalled.load() }
        #expect(wasStalled, "the claimant's walk did not find a's record")
        // The claimant stands between its walk and its CAS, inside its read-side section (so
        // the record cannot be freed, even once unlinked). The main thread's claims walk a's
        // bucket too; the hook lets them pass.
        var renamedFor: AnyObject? = nil
        var claimantGotInWhileHeld = false
        switch race {
        case .renamedAndFree, .renamedAndHeld:
            // Claims of fresh objects rename the first spare in list order: a's record.
            func nest(_ level: Int) {
                guard level < objects.count else { return }
                synchronized(objects[level]) {
                    if renamedFor == nil && _SynchronizedTable._record(of: key(objects[level])) == record {
                        renamedFor = objects[level]
                        if race == .renamedAndHeld {
                            resume.store(true)
                            // The claimant meets the record held for another object: it must
                            // not wait for it (nor take it later).
                            claimantGotInWhileHeld = lockEventually(within: .seconds(10)) { inside.load() }
                        }
                        return
                    }
                    nest(level + 1)
                }
            }
            nest(5)
            #expect(renamedFor != nil, "no claim of another object renamed a's record")
        case .unlinked:
            // A claim of a fresh object unlinks it (another try if one meets a stale record).
            for other in objects[5...] where _SynchronizedTable._record(of: aKey) != nil {
                synchronized(other) {}
            }
            #expect(_SynchronizedTable._record(of: aKey) == nil, "a's record is still linked")
            // Readable: the stalled claimant's read-side section keeps RCU from freeing it.
            #expect(
                ilk_atomic_load_u32(ilk_sync_record_word(record), ILK_ORDER_ACQUIRE) == _SynchronizedTable._dead,
                "an unlinked record is not DEAD")
        }
        resume.store(true)
        if race == .renamedAndHeld {
            #expect(claimantGotInWhileHeld, "the claimant of a waited for the holder of its renamed record")
        }
        let gotIn = lockEventually { inside.load() }
        #expect(gotIn, "the claimant never entered synchronized(a)")
        // Relaxed: the test has run its last claim that could meet the hook.
        ilk_atomic_store_u32(ilk_sync_hook_word(), 0, ILK_ORDER_RELAXED)
        guard gotIn else { return }  // the claimant hangs: leave it (and the hook) alone
        // While the claimant is inside synchronized(a): a is excluded, and the other object
        // (or a fresh one of the bucket) is not.
        let other = (renamedFor ?? objects[6]) as! SyncToken
        let onA = SyncContender(a), onOther = SyncContender(other)
        #expect(onA.sleepsEventually(), "another thread entered synchronized(a) while the claimant was inside")
        #expect(onOther.finishesEventually(), "synchronized on another object waited for the claimant of a")
        if let linked = _SynchronizedTable._record(of: aKey) {
            #expect(
                ilk_atomic_load_u32(ilk_sync_record_owner(linked), ILK_ORDER_RELAXED) != 0,
                "a's linked record is not held while the claimant is inside")
        } else {
            Issue.record("no record is linked for a while the claimant is inside")
        }
        leave.store(true)
        #expect(lockEventually { done.load() })
        claimant.join()
        #expect(onA.finishesEventually(), "a stayed locked after the claimant left")
        _SynchronizedTable._walkHook = nil
        let census = SynchronizedCensus.take()
        #expect(census.inUse == 0)
        #expect(census.linked == census.allocated - census.freed, "records lost or double counted: \(census)")
    }
}
