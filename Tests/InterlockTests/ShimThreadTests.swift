// The C shim's thread helpers: ilk_current_thread_id (the kernel thread id, cached per
// thread: non-zero, stable, distinct between threads, equal to gettid), the spin-wait hint
// and thread yield, and the fences.

import CInterlock
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's id of the calling thread, read independently of the shim: the name of
/// /proc/thread-self is "<pid>/task/<tid>".
private func kernelThreadID() -> UInt32? {
    var buffer = [CChar](repeating: 0, count: 256)
    let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard length > 0 else { return nil }
    let path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let last = path.split(separator: "/").last else { return nil }
    return UInt32(last)
}

/// gettid(2) itself, looked up at run time (glibc 2.30+ has it; Swift's Glibc module does
/// not export its declaration).
private func gettidIfAvailable() -> UInt32? {
    guard let symbol = dlsym(nil, "gettid") else { return nil }
    let gettid = unsafeBitCast(symbol, to: (@convention(c) () -> Int32).self)
    return UInt32(gettid())
}

/// Ids reported from another thread.
private final class IDReport: @unchecked Sendable {
    var shim: [UInt32] = []
    var kernel: UInt32? = nil
    var gettid: UInt32? = nil
}

@Suite("C shim: thread id, spin hint, yield, fences")
struct ShimThreadTests {
    @Test("ilk_current_thread_id is non-zero, stable within a thread and equals gettid")
    func currentThreadID() throws {
        let id = ilk_current_thread_id()
        #expect(id != 0)
        #expect(ilk_current_thread_id() == id)
        #expect(ilk_current_thread_id() == id)
        let kernel = try #require(kernelThreadID(), "/proc/thread-self is readable")
        #expect(id == kernel)
        if let viaGettid = gettidIfAvailable() { #expect(id == viaGettid) }
    }

    @Test("ilk_current_thread_id differs between two threads and matches each one's gettid")
    func distinctBetweenThreads() throws {
        let mine = ilk_current_thread_id()
        let report = IDReport()
        let other = TestThread {
            report.shim = [ilk_current_thread_id(), ilk_current_thread_id()]
            report.kernel = kernelThreadID()
            report.gettid = gettidIfAvailable()
        }
        other.join()  // orders the report's writes before these reads
        #expect(report.shim.count == 2)
        #expect(report.shim.first != 0)
        #expect(report.shim.first == report.shim.last, "stable within the other thread")
        #expect(report.shim.first != mine, "different from this thread's id")
        #expect(report.shim.first == report.kernel)
        if let viaGettid = report.gettid { #expect(report.shim.first == viaGettid) }
        #expect(ilk_current_thread_id() == mine, "this thread's cached id is untouched")
    }

    @Test("ilk_spin_pause and ilk_thread_yield run and return")
    func spinAndYield() {
        var spins = 0
        for _ in 0..<1_000 {
            ilk_spin_pause()
            spins += 1
        }
        for _ in 0..<10 { ilk_thread_yield() }
        #expect(spins == 1_000)
    }

    @Test("fences run: full, acquire, release, any order, compiler-only")
    func fences() {
        var word: UInt32 = 0
        ilk_atomic_store_u32(&word, 1, ILK_ORDER_RELAXED)
        ilk_fence_release()
        ilk_fence_full()
        ilk_fence_acquire()
        for order in cAllOrders { ilk_thread_fence(order) }
        ilk_compiler_barrier()
        #expect(ilk_atomic_load_u32(&word, ILK_ORDER_RELAXED) == 1)
    }

    /// Regression: the cache used to keep the parent's id in the child of fork(), where the
    /// surviving thread has a new kernel id (recursive-lock ownership would be confused).
    @Test("ilk_current_thread_id is the child's own id after fork()")
    func threadIDAfterFork() throws {
        let gettidSymbol = try #require(dlsym(nil, "gettid"))
        let gettid = unsafeBitCast(gettidSymbol, to: (@convention(c) () -> Int32).self)
        let parentID = ilk_current_thread_id()  // fills the parent's cache before the fork
        let pid = fork()
        if pid == 0 {
            // The child: only async-signal-safe work (no allocation) until _exit.
            let childID = ilk_current_thread_id()
            _exit(childID == UInt32(gettid()) && childID != parentID ? 0 : 1)
        }
        try #require(pid > 0, "fork failed")
        var status: Int32 = 0
        #expect(waitpid(pid, &status, 0) == pid)
        #expect(status == 0, "the child's ilk_current_thread_id was not its own gettid")
        #expect(ilk_current_thread_id() == parentID)
    }
}
