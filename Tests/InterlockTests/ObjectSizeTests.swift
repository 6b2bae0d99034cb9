// The memory each primitive costs, as ChoosingAPrimitive.md ("Memory per object") states it: the
// usable size of the object's one allocation, read with glibc's malloc_usable_size (found with
// dlsym, so that nothing else depends on glibc's malloc.h). A layout change fails here until the
// table is updated with it. malloc may serve a request from a larger free chunk (one run read 88
// bytes for a Condition), so the size of a type is the smallest over several fresh objects.

import Interlock
import Testing

#if canImport(Glibc)
import Glibc

@Suite("Memory per object")
struct ObjectSizeTests {
    private typealias UsableSize = @convention(c) (UnsafeMutableRawPointer?) -> Int

    /// The usable size of `object`'s allocation; nil where glibc's malloc is not in use.
    private func allocationSize(_ object: AnyObject) -> Int? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_usable_size") else { return nil }
        let usable = unsafeBitCast(symbol, to: UsableSize.self)
        return withExtendedLifetime(object) { usable(Unmanaged.passUnretained(object).toOpaque()) }
    }

    @Test(
        "each primitive's allocation has the size the docs state",
        .enabled(if: MemoryLayout<Int>.size == 8, "the table is for 64-bit platforms"),
        .enabled(if: !TestScale.isThreadSanitized, "TSan's allocator reports the requested size, not glibc's chunk"))
    func sizesMatchTheDocumentation() throws {
        let documented: [(String, () -> AnyObject, Int)] = [
            ("SpinLock", { SpinLock() }, 24),
            ("Lock", { Lock() }, 40),
            ("RecursiveLock", { RecursiveLock() }, 56),
            ("Condition", { Condition() }, 72),
            ("ConditionLock", { ConditionLock(condition: 0) }, 88),
            ("ReadWriteLock", { ReadWriteLock() }, 344),
            ("Once", { Once() }, 24),
            ("Lazy<Int>", { Lazy { 1 } }, 56),
            ("Locked<Int>", { Locked(0) }, 56),
            ("AtomicInt", { AtomicInt(0) }, 24),
            ("WaitGroup", { WaitGroup() }, 184),
            ("Semaphore", { Semaphore(value: 0) }, 200),
        ]
        for (name, make, bytes) in documented {
            let objects = (0..<32).map { _ in make() }
            let sizes = try objects.map { try #require(allocationSize($0), "malloc_usable_size is not available") }
            let size = sizes.min()!
            #expect(size == bytes, "\(name): \(size) bytes, the docs say \(bytes)")
        }
    }
}
#endif
