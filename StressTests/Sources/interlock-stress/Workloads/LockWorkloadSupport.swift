// Shared check of the lock stress workloads (Lock, SpinLock, RecursiveLock): Concurrency Kit's
// lock validator (ck's regressions/ck_spinlock/validate). Inside the critical section a plain,
// non-atomic counter is incremented ten times, must then read exactly ten, is brought back to
// zero and must read zero. Two threads inside at once interleave their increments and see
// values other than ten and zero; ThreadSanitizer also reports the plain accesses as a race.

/// The state a lock workload protects: plain memory at a stable address.
///   [0] the ck counter (0 outside every critical section)
///   [1] critical sections completed (checked against the workers' own counts at the end)
///   [2] id of the thread inside plus one, 0 when nobody is (checked on entry and exit)
final class LockProtectedState: @unchecked Sendable {
    let words = SharedBuffer<Int>(count: 3, repeating: 0)

    /// The critical section's work; call only while holding the lock under test.
    /// - Returns: a description of what was wrong, or `nil` when the section saw nobody else.
    @inline(never)
    func criticalSection(thread: Int) -> String? {
        let p = words.base
        var problem: String? = nil
        if p[2] != 0 { problem = "thread \(thread) entered while thread \(p[2] - 1) was inside" }
        p[2] = thread + 1
        let entry = p[0]
        for _ in 0..<10 { incrementOpaquely(p) }
        let inside = p[0]
        for _ in 0..<10 { p[0] -= 1 }
        let exit = p[0]
        if entry != 0 || inside != 10 || exit != 0 {
            problem = "thread \(thread): the counter read \(entry), \(inside), \(exit) (expected 0, 10, 0)"
        }
        if p[2] != thread + 1 { problem = "thread \(p[2] - 1) entered while thread \(thread) was inside" }
        p[2] = 0
        p[1] += 1
        return problem
    }

    /// Critical sections completed, read after the workers are joined.
    var sections: Int { words.base[1] }
    /// The ck counter, read after the workers are joined: 0 unless a section was torn.
    var counter: Int { words.base[0] }
}

/// One increment the optimizer cannot fold into `+= 10`, so that the section lasts long enough
/// for an overlap to show.
@inline(never)
func incrementOpaquely(_ p: UnsafeMutablePointer<Int>) {
    p.pointee += 1
}
