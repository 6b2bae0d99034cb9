// interlock-pg-helper: the child process of PostgresLock's multi-process tests
// (Tests/InterlockPostgresTests). Each run does one job against one lock and exits.
//
//   interlock-pg-helper hold CONNINFO NAME
//       tryLock (exit 3 if another session holds it), print "held TOKEN" on stdout, then wait
//       for the end of stdin (the parent closes it, or dies) and exit without unlocking. The
//       tests end it with SIGKILL while it holds the lock.
//   interlock-pg-helper hold-until-lost CONNINFO NAME
//       tryLock (exit 3 if another session holds it), print "held TOKEN", then wait in
//       waitUntilLost() and print "lost" when it returns, then "token nil" (or "token T" if the
//       object still has one), and exit 0.
//   interlock-pg-helper count CONNINFO NAME COUNTER ITERATIONS OUT
//       ITERATIONS times: lock(before:) with a 60 s deadline (exit 4 when it passes), read
//       COUNTER (a decimal count, 20 digits and a newline; exit 5 when it is not), write it back
//       plus one in place, unlock. At the end, write one line "VALUE TOKEN" per iteration to OUT:
//       the count this process wrote and the fencing token it held while writing it.
//   interlock-pg-helper semaphore CONNINFO NAME PERMITS ITERATIONS OCCUPANCY OUT
//       ITERATIONS times: PostgresSemaphore.acquire(before:) with a 60 s deadline (exit 4 when it
//       passes); then, under an flock of OCCUPANCY (a decimal count, 20 digits and a newline),
//       add one to it; hold the permit 1 ms; subtract one likewise; release. At the end, write
//       to OUT one line "OCCUPANCY TOKEN" per iteration: the count this process wrote when it
//       entered (the holders at that moment, itself included) and its permit's fencing token.
//
// Exit status: 0 done, 1 a PostgresLock error (printed on stderr), 2 bad arguments, 3 the lock
// was held, 4 timed out waiting for the lock, 5 a counter that is not a count, 6 a file error.

import InterlockPostgres
import InterlockTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

func fail(_ message: String, _ status: Int32) -> Never { exitFailing("interlock-pg-helper", message, status) }

/// Writes all of `text` to `fd`.
func writeAll(_ fd: Int32, _ text: String) -> Bool {
    let bytes = Array(text.utf8)
    var done = 0
    while done < bytes.count {
        let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return false }
        done += n
    }
    return true
}

func openLock(_ connectionString: String, _ name: String) -> PostgresLock {
    do {
        return try PostgresLock(connectionString: connectionString, name: name)
    } catch {
        fail("init: \(error)", 1)
    }
}

/// `hold`: take the lock, say so, and keep it until stdin ends (or SIGKILL).
func hold(_ connectionString: String, _ name: String) -> Never {
    let lock = openLock(connectionString, name)
    let acquired: Bool
    do { acquired = try lock.tryLock() } catch { fail("tryLock: \(error)", 1) }
    guard acquired, let token = lock.fencingToken else { fail("the lock is held", 3) }
    if !writeAll(1, "held \(token)\n") { fail("write stdout: errno \(errno)", 6) }
    var byte: UInt8 = 0
    while true {
        let n = read(0, &byte, 1)
        if n == 0 || (n < 0 && errno != EINTR) { break }
    }
    exit(0)  // holding: the server releases the lock when the session ends
}

/// `hold-until-lost`: take the lock, say so, and report when waitUntilLost() returns.
func holdUntilLost(_ connectionString: String, _ name: String) async -> Never {
    let lock = openLock(connectionString, name)
    let acquired: Bool
    do { acquired = try await lock.tryLock() } catch { fail("tryLock: \(error)", 1) }
    guard acquired, let token = lock.fencingToken else { fail("the lock is held", 3) }
    if !writeAll(1, "held \(token)\n") { fail("write stdout: errno \(errno)", 6) }
    await lock.waitUntilLost()
    let after = lock.fencingToken.map { "token \($0)" } ?? "token nil"
    if !writeAll(1, "lost\n\(after)\n") { fail("write stdout: errno \(errno)", 6) }
    exit(0)
}

/// Writes the records to `out` and exits 0.
func finish(writing records: [String], to out: String) -> Never {
    let fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    if fd < 0 || !writeAll(fd, records.joined()) { fail("write \(out): errno \(errno)", 6) }
    close(fd)
    exit(0)
}

/// Reads the 21-byte counter at offset 0. - Returns: its value, or nil when it is not a count.
func readCounter(_ fd: Int32) -> Int? {
    var buffer = [UInt8](repeating: 0, count: 64)
    let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    guard n == 21, buffer[20] == UInt8(ascii: "\n"),
        buffer[0..<20].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
    else { return nil }
    return Int(String(decoding: buffer[0..<20], as: UTF8.self))
}

func formatCounter(_ value: Int) -> String {
    let digits = String(value)
    return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "\n"
}

/// `count`: ITERATIONS increments of COUNTER under the lock, recording the tokens.
func count(_ connectionString: String, _ name: String, _ counter: String, _ iterations: Int, _ out: String) -> Never {
    let lock = openLock(connectionString, name)
    var records: [String] = []
    for _ in 0..<iterations {
        let acquired: Bool
        do {
            acquired = try lock.lock(before: .now + .seconds(60))
        } catch {
            fail("lock(before:): \(error)", 1)
        }
        if !acquired { fail("timed out waiting for the lock", 4) }
        guard let token = lock.fencingToken else { fail("no fencing token while holding", 1) }
        let fd = open(counter, O_RDWR | O_CLOEXEC)
        if fd < 0 { fail("open \(counter): errno \(errno)", 6) }
        guard let value = readCounter(fd) else { fail("\(counter) does not hold a count", 5) }
        let text = Array(formatCounter(value + 1).utf8)
        let written = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        if written != text.count { fail("pwrite \(counter): errno \(errno)", 6) }
        close(fd)
        records.append("\(value + 1) \(token)\n")
        do { try lock.unlock() } catch { fail("unlock: \(error)", 1) }
    }
    finish(writing: records, to: out)
}

/// Adds `delta` to the count in `path` under an exclusive flock. - Returns: the new count.
func addOccupancy(_ path: String, _ delta: Int) -> Int {
    let fd = open(path, O_RDWR | O_CLOEXEC)
    if fd < 0 { fail("open \(path): errno \(errno)", 6) }
    defer { close(fd) }
    while flock(fd, LOCK_EX) != 0 { if errno != EINTR { fail("flock \(path): errno \(errno)", 6) } }
    guard let value = readCounter(fd) else { fail("\(path) does not hold a count", 5) }
    let text = Array(formatCounter(value + delta).utf8)
    if text.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) != text.count {
        fail("pwrite \(path): errno \(errno)", 6)
    }
    return value + delta
}

/// `semaphore`: ITERATIONS holds of a permit, each counted in OCCUPANCY while held.
func semaphore(
    _ connectionString: String, _ name: String, _ permits: Int, _ iterations: Int, _ occupancy: String, _ out: String
) async -> Never {
    let semaphore: PostgresSemaphore
    do {
        semaphore = try PostgresSemaphore(connectionString: connectionString, name: name, permits: permits)
    } catch {
        fail("init: \(error)", 1)
    }
    var records: [String] = []
    for _ in 0..<iterations {
        let acquired: Bool
        do { acquired = try await semaphore.acquire(before: .now + .seconds(60)) } catch {
            fail("acquire: \(error)", 1)
        }
        if !acquired { fail("timed out waiting for a permit", 4) }
        guard let token = semaphore.fencingToken else { fail("no fencing token while holding", 1) }
        let inside = addOccupancy(occupancy, 1)
        usleep(1000)  // the work done under the permit: lets the holders overlap
        _ = addOccupancy(occupancy, -1)
        records.append("\(inside) \(token)\n")
        do { try await semaphore.release() } catch { fail("release: \(error)", 1) }
    }
    finish(writing: records, to: out)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "hold" where arguments.count == 3:
    hold(arguments[1], arguments[2])
case "hold-until-lost" where arguments.count == 3:
    await holdUntilLost(arguments[1], arguments[2])
case "count" where arguments.count == 6:
    guard let iterations = Int(arguments[4]), iterations >= 0 else { fail("bad ITERATIONS \(arguments[4])", 2) }
    count(arguments[1], arguments[2], arguments[3], iterations, arguments[5])
case "semaphore" where arguments.count == 7:
    guard let permits = Int(arguments[3]), let iterations = Int(arguments[4]), iterations >= 0 else {
        fail("bad PERMITS or ITERATIONS", 2)
    }
    await semaphore(arguments[1], arguments[2], permits, iterations, arguments[5], arguments[6])
default:
    fail(
        "usage: interlock-pg-helper hold CONNINFO NAME | hold-until-lost CONNINFO NAME | count CONNINFO NAME COUNTER ITERATIONS OUT | semaphore CONNINFO NAME PERMITS ITERATIONS OCCUPANCY OUT",
        2)
}
