// The lock record: what a DistributedLock file holds, and its text format.
//
// Format (ASCII, one field per line, each line ending in "\n", fields in this order, nothing
// else; about 150 bytes):
//
//     interlock-distributed-lock 1
//     pid=12345
//     host=build-7.example.net
//     time=1732281600.123456789          seconds.nanoseconds since the Unix epoch (CLOCK_REALTIME)
//     token=0123456789abcdef0123456789abcdef   128 random bits, lowercase hex, unique per acquisition
//
// The parser is strict: a file that is not exactly this shape is "not a lock", which is what
// keeps breakLock from ever removing a file that some other program put at the lock's path.
// The token is the only proof of ownership; pid, host and time are information for humans and
// for the stale-lock rules.

/// 128 random bits identifying one acquisition of a lock.
@usableFromInline
internal struct _LockToken: Equatable, Sendable {
    @usableFromInline var high: UInt64
    @usableFromInline var low: UInt64

    /// A fresh token from the system's random source (getrandom(2) on Linux).
    static func random() -> _LockToken {
        var generator = SystemRandomNumberGenerator()
        return _LockToken(high: generator.next(), low: generator.next())
    }

    /// 32 lowercase hexadecimal digits.
    var hex: String { _LockRecord.hex(high) + _LockRecord.hex(low) }
}

/// The contents of a lock file.
@usableFromInline
internal struct _LockRecord: Equatable, Sendable {
    var info: DistributedLock.Info
    var token: _LockToken

    static let magic = "interlock-distributed-lock 1"

    init(info: DistributedLock.Info, token: _LockToken) {
        self.info = info
        self.token = token
    }

    /// The record as the bytes of a lock file.
    var encoded: [UInt8] {
        let (seconds, attoseconds) = info.acquiredAt.components
        var nanos = String(attoseconds / 1_000_000_000)
        nanos = String(repeating: "0", count: 9 - nanos.utf8.count) + nanos
        let text =
            "\(Self.magic)\npid=\(info.processID)\nhost=\(Self.sanitizedLine(info.hostName))\n"
            + "time=\(seconds).\(nanos)\ntoken=\(token.hex)\n"
        return Array(text.utf8)
    }

    /// Parses a lock file's bytes; `nil` unless they are exactly a record. Works on bytes, not
    /// Characters: it runs on every contended tryLock and every release that reads a token.
    init?(parsing bytes: ArraySlice<UInt8>) {
        let newline = UInt8(ascii: "\n")
        guard bytes.last == newline else { return nil }
        let lines = bytes.split(separator: newline, maxSplits: 6, omittingEmptySubsequences: false)
        // Five lines and the empty remainder after the final newline.
        guard lines.count == 6, lines[5].isEmpty, lines[0].elementsEqual(Self.magic.utf8),
            let pidText = Self.field(lines[1], "pid"), let pid = Self.decimal(pidText),
            pid > 0, pid <= Int64(Int32.max),
            let host = Self.field(lines[2], "host"), !host.isEmpty,
            host.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }),
            let time = Self.field(lines[3], "time"),
            let dot = time.firstIndex(of: UInt8(ascii: ".")),
            let seconds = Self.decimal(time[..<dot]),
            case let nanosText = time[time.index(after: dot)...], nanosText.count == 9,
            let nanos = Self.decimal(nanosText),
            let tokenText = Self.field(lines[4], "token"), tokenText.count == 32,
            let high = Self.hexValue(tokenText.prefix(16)), let low = Self.hexValue(tokenText.suffix(16))
        else { return nil }
        info = DistributedLock.Info(
            acquiredAt: .seconds(seconds) + .nanoseconds(nanos), processID: Int32(pid),
            hostName: String(decoding: host, as: UTF8.self))
        token = _LockToken(high: high, low: low)
    }

    /// The value of `line` if it reads "<key>=<value>".
    private static func field(_ line: ArraySlice<UInt8>, _ key: String) -> ArraySlice<UInt8>? {
        let keyLength = key.utf8.count
        guard line.count > keyLength, line.prefix(keyLength).elementsEqual(key.utf8),
            line[line.startIndex + keyLength] == UInt8(ascii: "=")
        else { return nil }
        return line[(line.startIndex + keyLength + 1)...]
    }

    /// 1 to 18 decimal digits, nothing else.
    private static func decimal(_ digits: ArraySlice<UInt8>) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// 16 lowercase hexadecimal digits.
    private static func hexValue(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard digits.count == 16 else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }

    /// 16 lowercase hexadecimal digits.
    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.utf8.count) + digits
    }

    /// `text` with every byte that is not printable ASCII (newlines included) replaced by `?`,
    /// so that a host name always fits on its line.
    static func sanitizedLine(_ text: String) -> String {
        let cleaned = text.utf8.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }
        let result = String(decoding: cleaned, as: UTF8.self)
        return result.isEmpty ? "?" : result
    }
}
