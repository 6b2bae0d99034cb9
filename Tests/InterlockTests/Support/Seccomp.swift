// Per-thread seccomp filters for tests that need the kernel to refuse or hold one system call
// of one thread (a failed membarrier, a refused futex call on one word, a held futex wake),
// while the rest of the process runs as usual.
//
// A filter applies to the thread that installs it (no TSYNC) and to threads it creates later;
// installing one sets no_new_privs for that thread, which seccomp requires of an unprivileged
// caller. The C calls are variadic (Swift cannot call them), so they go through libc's
// `syscall`, itself called through a plain function type.

#if os(Linux) && (arch(x86_64) || arch(arm64))
#if canImport(Glibc)
import Glibc
#endif

enum _Seccomp {
    #if arch(x86_64)
    static let futexNumber: UInt32 = 202, ioctlNumber = 16, prctlNumber = 157, seccompNumber = 317
    static let membarrierNumber: UInt32 = 324
    static let auditArch: UInt32 = 0xC000_003E  // AUDIT_ARCH_X86_64
    #else
    static let futexNumber: UInt32 = 98, ioctlNumber = 29, prctlNumber = 167, seccompNumber = 277
    static let membarrierNumber: UInt32 = 283
    static let auditArch: UInt32 = 0xC000_00B7  // AUDIT_ARCH_AARCH64
    #endif
    static let futexWaitPrivate: UInt32 = 128  // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
    static let futexWakePrivate: UInt32 = 129  // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
    static let futexWaitBitsetPrivate: UInt32 = 137  // FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG
    static let futexCmpRequeuePrivate: UInt32 = 132  // FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG

    /// What a filter answers: SECCOMP_RET_ALLOW, SECCOMP_RET_USER_NOTIF, SECCOMP_RET_ERRNO | e.
    static let allow: UInt32 = 0x7FFF_0000, userNotification: UInt32 = 0x7FC0_0000
    static func failure(_ code: Int32) -> UInt32 { 0x0005_0000 | UInt32(code) }

    typealias SyscallFunction = @convention(c) (Int, Int, Int, Int, Int, Int, Int) -> Int

    /// libc's `long syscall(long number, ...)`, called as a non-variadic function: on Linux
    /// x86-64 and AArch64 integer arguments travel alike either way (glibc's `syscall` is
    /// assembly that moves them into place and ignores x86-64's vector-count register).
    static func syscall(_ number: Int, _ a: Int = 0, _ b: Int = 0, _ c: Int = 0, _ d: Int = 0) -> Int {
        let symbol = dlsym(nil, "syscall")!  // nil: RTLD_DEFAULT
        return unsafeBitCast(symbol, to: SyscallFunction.self)(number, a, b, c, d, 0, 0)
    }

    /// One classic-BPF instruction, laid out as `struct sock_filter` (little-endian).
    static func instruction(_ code: UInt16, _ k: UInt32, jt: UInt8 = 0, jf: UInt8 = 0) -> UInt64 {
        UInt64(code) | UInt64(jt) << 16 | UInt64(jf) << 24 | UInt64(k) << 32
    }

    /// A program that answers `action` to system call `number` when each given 32-bit word of
    /// `struct seccomp_data` (nr at 0, arch at 4, args[i] at 16 + 8i, low word first) holds
    /// its value, and allows everything else.
    static func program(_ number: UInt32, matching words: [(offset: UInt32, value: UInt32)], action: UInt32) -> [UInt64]
    {
        let load: UInt16 = 0x20, jumpIfEqual: UInt16 = 0x15, ret: UInt16 = 0x06  // BPF_LD|W|ABS ...
        let checks = [(UInt32(4), auditArch), (UInt32(0), number)] + words
        var code: [UInt64] = []
        for (i, check) in checks.enumerated() {
            // A failed comparison jumps to the final ALLOW, past the remaining pairs and the action.
            let remaining = UInt8(2 * (checks.count - i - 1) + 1)
            code.append(instruction(load, check.0))
            code.append(instruction(jumpIfEqual, check.1, jf: remaining))
        }
        code.append(instruction(ret, action))
        code.append(instruction(ret, allow))
        return code
    }

    /// The words of `struct seccomp_data` that select futex calls on `address` with `operation`.
    static func futexCall(on address: UnsafeMutablePointer<UInt32>, _ operation: UInt32) -> [(
        offset: UInt32, value: UInt32
    )] {
        let bits = UInt(bitPattern: address)
        return [(16, UInt32(truncatingIfNeeded: bits)), (20, UInt32(truncatingIfNeeded: bits >> 32)), (24, operation)]
    }

    /// Installs `program` as a seccomp filter on the calling thread (setting no_new_privs for
    /// it first). - Returns: what seccomp(SECCOMP_SET_MODE_FILTER) returned (a listener fd with
    /// the NEW_LISTENER flag, else 0), or -errno.
    static func install(_ program: [UInt64], flags: Int = 0) -> Int {
        // swift-format-ignore: NoBlockComments
        guard syscall(prctlNumber, 38 /* PR_SET_NO_NEW_PRIVS */, 1) == 0 else { return -Int(errno) }
        return program.withUnsafeBufferPointer { code in
            // struct sock_fprog: unsigned short len, then the pointer at offset 8.
            var fprog: (UInt64, UInt) = (UInt64(code.count), UInt(bitPattern: code.baseAddress))
            // swift-format-ignore: NoBlockComments
            let r = withUnsafeMutablePointer(to: &fprog) {
                syscall(seccompNumber, 1 /* SECCOMP_SET_MODE_FILTER */, flags, Int(bitPattern: UInt(bitPattern: $0)))
            }
            return r >= 0 ? r : -Int(errno)
        }
    }

    /// Makes every futex call of the calling thread (and of threads it creates later) on
    /// `address` with one of `operations` fail with `code`. - Returns: 0, or -errno.
    static func failFutex(on address: UnsafeMutablePointer<UInt32>, _ operations: [UInt32], with code: Int32) -> Int {
        for operation in operations {
            let r = install(program(futexNumber, matching: futexCall(on: address, operation), action: failure(code)))
            if r != 0 { return r }
        }
        return 0
    }
}
#endif
