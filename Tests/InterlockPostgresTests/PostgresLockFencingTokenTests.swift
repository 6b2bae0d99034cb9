// PostgresLock's fencing tokens (strictly increasing per name over every acquisition, whoever
// takes it; positive; nil when not held) and its key (FNV-1a 64 of the name's UTF-8 bytes).

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, fencing tokens and keys", .blocking)
struct PostgresLockFencingTokenTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    @Test("tokens grow strictly over many acquisitions by several objects and names")
    func tokensStrictlyIncreasePerName() throws {
        let names = ["tokens-a", "tokens-b", "tokens-c"]
        // Three objects per name, over the socket and TCP, used in a scrambled order.
        var locks: [PostgresLock] = []
        for name in names {
            for index in 0..<3 {
                locks.append(
                    try PostgresLock(
                        connectionString: index == 1 ? server.tcpConnectionString : server.connectionString, name: name)
                )
            }
        }
        var last: [String: Int64] = [:]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<150 {
            let lock = locks.randomElement(using: &generator)!
            #expect(lock.fencingToken == nil)
            #expect(try lock.tryLock(), "round \(round)")
            let token = try #require(lock.fencingToken)
            #expect(token > 0)
            if let previous = last[lock.name] {
                #expect(token > previous, "\(lock.name): token \(token) after \(previous)")
            }
            last[lock.name] = token
            // The token stays while held, and goes with the unlock.
            #expect(try lock.checkHeld())
            #expect(lock.fencingToken == token)
            try lock.unlock()
            #expect(lock.fencingToken == nil)
        }
        #expect(last.count == names.count)
    }

    @Test("lock(before:) hands out tokens in the same sequence as tryLock")
    func waitingAcquisitionsGetIncreasingTokens() throws {
        let first = try PostgresLock(connectionString: server.connectionString, name: "tokens-waiting")
        let second = try PostgresLock(connectionString: server.tcpConnectionString, name: "tokens-waiting")
        var last: Int64 = 0
        for round in 0..<20 {
            let lock = round % 2 == 0 ? first : second
            let acquired = round % 3 == 0 ? try lock.tryLock() : try lock.lock(before: .now + .seconds(5))
            #expect(acquired)
            let token = try #require(lock.fencingToken)
            #expect(token > last)
            last = token
            try lock.unlock()
        }
    }

    /// FNV-1a, 64 bits, written here from its definition (offset basis 14695981039346656037,
    /// prime 1099511628211), independently of the library's.
    static func fnv1a64(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211
        }
        return hash
    }

    @Test("key is FNV-1a 64 of the name's UTF-8 bytes, as a bigint")
    func keyIsFNV1a64OfUTF8() throws {
        // Published FNV-1a 64 test vectors.
        let vectors: [(String, UInt64)] = [
            ("", 0xcbf2_9ce4_8422_2325),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ]
        for (name, expected) in vectors {
            #expect(Self.fnv1a64(name.utf8) == expected, "the test's own FNV-1a of \"\(name)\"")
            let lock = try PostgresLock(connectionString: server.connectionString, name: name)
            #expect(lock.key == Int64(bitPattern: expected), "key of \"\(name)\"")
            #expect(lock.name == name)
        }
        // UTF-8, not UTF-16 or unicode scalars; and a name whose key is negative as a bigint.
        for name in ["verrou-é", "ключ", "🔒 nightly", "tokens-a"] {
            let lock = try PostgresLock(connectionString: server.connectionString, name: name)
            #expect(lock.key == Int64(bitPattern: Self.fnv1a64(Array(name.utf8))), "key of \"\(name)\"")
        }
    }

    @Test("the server's advisory lock is the key, also for a key that is negative as a bigint")
    func negativeKeysAreLockedAsIs() throws {
        // Find a name whose key is negative (the top bit set), so that the bigint splits into
        // pg_locks' classid/objid with the high half above 2^31.
        let name = try #require(
            (0..<100).lazy.map { "tokens-negative-\($0)" }.first {
                Int64(bitPattern: Self.fnv1a64($0.utf8)) < 0
            })
        let lock = try PostgresLock(connectionString: server.connectionString, name: name)
        #expect(lock.key < 0)
        #expect(try lock.tryLock())
        #expect(try PGTest.holderPID(server, key: lock.key) != nil)
        #expect(try lock.checkHeld())
        #expect(try lock.holderInfo()?.isThisObject == true)
        try lock.unlock()
        #expect(try PGTest.holderPID(server, key: lock.key) == nil)
    }

    /// Regression (issue 29): the waiting acquisition put the key in its SQL unquoted, and
    /// `-9223372036854775808::bigint` is the negation of a cast that overflows.
    @Test(
        "every bigint is a key, Int64.min and Int64.max included, in tryLock and in the waiting lock(before:)",
        arguments: [Int64.min, Int64.min + 1, -1, 0, 1, Int64.max])
    func everyBigintIsAKey(key: Int64) throws {
        let holder = try PostgresLock(connectionString: server.connectionString, name: "key \(key)", key: key)
        let waiter = try PostgresLock(connectionString: server.tcpConnectionString, name: "key \(key)", key: key)
        #expect(holder.key == key)
        #expect(try holder.tryLock())
        #expect(try PGTest.holderPID(server, key: key) != nil)
        #expect(try holder.checkHeld())
        #expect(try holder.holderInfo()?.isThisObject == true)
        // The waiter queues in the server (the statement with the key in its text), and is
        // granted the lock when the holder lets go.
        let waiting = PGThread { try waiter.lock(before: .now + .seconds(30)) }
        #expect(try PGTest.eventually { try PGTest.someoneWaits(server, key: key) })
        let first = try #require(holder.fencingToken)
        try holder.unlock()
        #expect(try waiting.join().get())
        #expect(try #require(waiter.fencingToken) > first)
        #expect(try PGTest.holderPID(server, key: key) != nil)
        try waiter.unlock()
        #expect(try PGTest.holderPID(server, key: key) == nil)
    }
}
