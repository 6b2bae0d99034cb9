// Shared vocabulary of the atomics tests: the orderings valid for each kind of operation,
// and the six atomic integer types as a parameter that a generic check can be run over.

import Interlock
import Testing

/// Every ordering: all are valid for read-modify-write operations and fences.
let allOrders: [MemoryOrder] = [.relaxed, .acquire, .release, .acquireRelease, .sequentiallyConsistent]
/// The orderings a load accepts.
let loadOrders: [MemoryOrder] = [.relaxed, .acquire, .sequentiallyConsistent]
/// The orderings a store accepts.
let storeOrders: [MemoryOrder] = [.relaxed, .release, .sequentiallyConsistent]

/// A check that can run over any atomic integer type.
protocol AtomicIntegerCheck {
    func run<V: AtomicIntegerValue>(_ type: V.Type)
}

/// The six atomic integer types, as a test argument.
enum AtomicIntegerKind: CaseIterable, Sendable, CustomTestStringConvertible {
    case int32, int64, int, uint32, uint64, uint

    var testDescription: String {
        switch self {
        case .int32: "AtomicInt32"
        case .int64: "AtomicInt64"
        case .int: "AtomicInt"
        case .uint32: "AtomicUInt32"
        case .uint64: "AtomicUInt64"
        case .uint: "AtomicUInt"
        }
    }

    /// Runs `check` specialized for this kind's value type.
    func run(_ check: some AtomicIntegerCheck) {
        switch self {
        case .int32: check.run(Int32.self)
        case .int64: check.run(Int64.self)
        case .int: check.run(Int.self)
        case .uint32: check.run(UInt32.self)
        case .uint64: check.run(UInt64.self)
        case .uint: check.run(UInt.self)
        }
    }
}

extension FixedWidthInteger {
    /// A value with a mixed bit pattern across the whole width (both halves non-zero).
    static var pattern: Self { Self(truncatingIfNeeded: 0x5A3C_96E1_0F87_C3A5 as UInt64) }
    /// Another, different in every nibble from `pattern`.
    static var otherPattern: Self { Self(truncatingIfNeeded: 0x1234_5678_9ABC_DEF0 as UInt64) }
}
