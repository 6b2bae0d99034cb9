// Helpers shared by the LockFreeStack and LockFreeQueue tests: elements that count their own
// deinitializations, per-thread result slots, and the process's resident set size.

import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Counts live `TrackedElement`s of one test (each test has its own, so tests running in
/// parallel do not disturb each other's counts).
final class LiveCounter: Sendable {
    let live = AtomicInt(0)
    let created = AtomicInt(0)
}

/// A class element that counts its instances in a `LiveCounter`.
final class TrackedElement: Sendable {
    let value: Int
    let counter: LiveCounter

    init(_ value: Int, _ counter: LiveCounter) {
        self.value = value
        self.counter = counter
        counter.live.increment()
        counter.created.increment()
    }

    deinit {
        counter.live.decrement()
    }
}

/// A struct element with references and a payload, larger than a word.
struct CompositeElement: Sendable, Equatable {
    var name: String
    var tags: [Int]
    var a: Int
    var b: Double
}

/// One slot per thread for results written by that thread and read after the threads are
/// joined (pthread_join orders the writes before the reads).
final class PerThreadResults<T>: @unchecked Sendable {
    // Separate elements of one allocation: threads writing different indices touch
    // different memory (a Swift Array would be one variable, whose mutation races).
    private let slots: UnsafeMutablePointer<T>
    private let count: Int

    init(count: Int, initial: T) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: initial, count: count)
        self.count = count
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }

    /// Called only by thread `index`, or after all threads were joined.
    subscript(index: Int) -> T {
        get { slots[index] }
        set { slots[index] = newValue }
    }

    /// All slots, after the threads were joined.
    var all: [T] { Array(UnsafeBufferPointer(start: slots, count: count)) }
}

/// The resident set size of this process in KiB (VmRSS in /proc/self/status).
func residentSetKiB() throws -> Int {
    guard let file = fopen("/proc/self/status", "r") else {
        throw ResidentSetError(reason: "cannot open /proc/self/status: errno \(errno)")
    }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("VmRSS:") {
            let digits = text.dropFirst("VmRSS:".count).filter { $0.isNumber }
            if let kib = Int(digits) { return kib }
        }
    }
    throw ResidentSetError(reason: "no VmRSS line in /proc/self/status")
}

struct ResidentSetError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

/// In a child process of an exit test: exits 1, with the figures on stderr, when the resident
/// set grew by the allowed slack or more over `cycles` operations after a warm-up; prints the
/// figures and returns otherwise. The slack is 16 MiB natively; under ThreadSanitizer, whose
/// own metadata for the atomics' addresses comes and goes (3-15 MiB measured over a million
/// queue cycles), 32 MiB. Without reclamation a million cycles leak at least 16 MB natively
/// and about six times that under TSan (shadow and metadata), so both limits catch a leak.
func checkResidentSetGrowth(before: Int, after: Int, cycles: Int, what: String) {
    let slackKiB = (TestScale.isThreadSanitized ? 32 : 16) * 1024
    let message = "\(what): \(cycles) cycles, resident set \(before) KiB -> \(after) KiB (limit +\(slackKiB) KiB)\n"
    message.withCString { _ = write(2, $0, strlen($0)) }
    if after - before >= slackKiB { exit(1) }
}
