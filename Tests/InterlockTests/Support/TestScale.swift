// How big a concurrency test may be: full size natively, much smaller under ThreadSanitizer,
// which slows atomics and thread switches by one or two orders of magnitude.
//
// Swift has no compile-time condition for sanitizers, so the check is made at run time: a
// process built with -sanitize=thread carries the TSan runtime, whose entry point
// `__tsan_init` is then visible to dlsym. INTERLOCK_TEST_SCALE=small forces the small sizes.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

enum TestScale {
    /// Whether this process runs under ThreadSanitizer.
    static let isThreadSanitized: Bool = {
        #if canImport(Darwin)
        let handle = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #else
        let handle: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #endif
        return dlsym(handle, "__tsan_init") != nil
    }()

    /// Whether tests should use their small sizes.
    static let isSmall: Bool = {
        if isThreadSanitized { return true }
        if let value = getenv("INTERLOCK_TEST_SCALE") { return String(cString: value) == "small" }
        return false
    }()

    /// `full` normally; `small` under ThreadSanitizer (or INTERLOCK_TEST_SCALE=small).
    static func count(_ full: Int, small: Int) -> Int { isSmall ? small : full }
}
