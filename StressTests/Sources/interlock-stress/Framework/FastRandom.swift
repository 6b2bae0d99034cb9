// A per-thread pseudo-random generator for workloads: xorshift64*, a few cycles per number,
// no shared state, no locking (SystemRandomNumberGenerator makes a system call per number).

/// xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift generators",
/// 2016). Not for cryptography; good enough to pick bits and operations.
struct FastRandom: RandomNumberGenerator {
    private var state: UInt64

    /// A generator seeded from `seed` (any value; zero is remapped, xorshift needs non-zero).
    init(seed: UInt64) {
        // splitmix64's finalizer spreads consecutive seeds (thread indices) apart.
        var z = seed &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        state = z == 0 ? 0x2545_F491_4F6C_DD1D : z
    }

    /// The next 64 random bits.
    @inline(__always)
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
}
