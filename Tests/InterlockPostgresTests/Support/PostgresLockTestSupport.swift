// Support for PostgresLock's tests: polling a condition with a deadline, reading pg_locks as the
// superuser, OS threads that block in the server, a free TCP port that nothing listens on, and
// the helper executable (interlock-pg-helper, built with the tests) run as a child.

import Foundation
import Interlock
import InterlockTestSupport
import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

enum PGTest {
    /// Polls `condition` every 2 ms until it holds or `limit` has passed.
    /// - Returns: whether it held (the caller asserts it).
    static func eventually(within limit: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = ContinuousClock.now + limit
        while true {
            if try condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            usleep(2000)
        }
    }

    /// The `pg_locks` rows of the bigint advisory lock `key` in the current database:
    /// `(pid, granted)`, read by the superuser on a session of its own.
    static func advisoryLockRows(_ server: PostgresServer, key: Int64, database: String = "postgres") throws -> [(
        pid: Int32, granted: Bool
    )] {
        try server.execute(
            """
            SELECT pid, granted FROM pg_locks
            WHERE locktype = 'advisory' AND objsubid = 1
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND classid = \(UInt32(truncatingIfNeeded: UInt64(bitPattern: key) >> 32))
              AND objid = \(UInt32(truncatingIfNeeded: UInt64(bitPattern: key)))
            """, database: database
        ).map { (pid: Int32($0[0] ?? "") ?? -1, granted: $0[1] == "t") }
    }

    /// Whether some session waits (not granted) for the advisory lock `key`.
    static func someoneWaits(_ server: PostgresServer, key: Int64) throws -> Bool {
        try advisoryLockRows(server, key: key).contains { !$0.granted }
    }

    /// The pid of the backend that holds the advisory lock `key`, if any.
    static func holderPID(_ server: PostgresServer, key: Int64) throws -> Int32? {
        try advisoryLockRows(server, key: key).first { $0.granted }?.pid
    }

    /// A TCP port on 127.0.0.1 that nothing listens on (bound, then closed; the kernel hands
    /// out ephemeral ports in sequence, so it is not reused at once).
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0, "socket failed: errno \(errno)")
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        try #require(bound, "bind failed: errno \(errno)")
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Wall-clock time since the Unix epoch.
    static var wallClock: Duration {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return .seconds(now.tv_sec) + .nanoseconds(now.tv_nsec)
    }

    /// A fresh directory from mkdtemp (removed by the caller with `removeDirectory`).
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/interlock-pgtest-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return try #require(made.map { String(cString: $0) }, "mkdtemp failed: errno \(errno)")
    }

    static func removeDirectory(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}

// MARK: - Pipes

/// pipe2(fds, O_CLOEXEC): a pipe whose ends are close-on-exec from the start, so that a child
/// that another test spawns at the same moment cannot inherit them (pipe and then fcntl leave
/// that window open). Glibc's module map hides pipe2 (it needs _GNU_SOURCE), hence dlsym.
/// - Returns: whether it succeeded (errno tells why not).
func closeOnExecPipe(_ fds: inout [Int32]) -> Bool {
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    guard let symbol = dlsym(nil, "pipe2") else { return false }
    let pipe2 = unsafeBitCast(symbol, to: Pipe2.self)
    fds = [-1, -1]
    return fds.withUnsafeMutableBufferPointer { pipe2($0.baseAddress!, O_CLOEXEC) } == 0
}

// MARK: - Threads

/// Runs blocking work (waiting for child processes, starting servers, an engine-backed lock's
/// blocking forms) on a thread of its own and awaits it without blocking this task's thread: the
/// cooperative pool has 2 threads here, and a test that blocks one for seconds starves the async
/// tests that run beside it (a CI run saw waitUntilLost take 10.4 s that way).
func onThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    let thread = PGThread(body)
    while !thread.isFinished { try await Task.sleep(for: .milliseconds(2)) }
    return try thread.join().get()
}

/// An OS thread running a throwing closure (a lock(before:) that blocks in the server must not
/// block a thread of Swift concurrency's cooperative pool); `join()` waits for it and returns
/// the closure's outcome.
final class PGThread<Value: Sendable>: Sendable {
    private let handle = PGLocked<pthread_t?>(nil)
    private let outcome = PGLocked<Result<Value, any Error>?>(nil)

    init(_ body: @escaping @Sendable () throws -> Value) {
        let box = Unmanaged.passRetained(
            PGThreadBody { [self] in
                let result = Result { try body() }
                self.outcome.withLock { $0 = result }
            }
        ).toOpaque()
        var created = pthread_t()
        let rc = pthread_create(
            &created, nil,
            { raw in
                let body = Unmanaged<PGThreadBody>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, box)
        precondition(rc == 0, "PGThread: pthread_create failed with error \(rc)")
        handle.withLock { $0 = created }
    }

    /// Waits for the thread (call once). - Returns: what the closure returned or threw.
    func join() -> Result<Value, any Error> {
        let thread = handle.withLock { $0! }
        let rc = pthread_join(thread, nil)
        precondition(rc == 0, "PGThread: pthread_join failed with error \(rc)")
        return outcome.withLock { $0! }
    }

    /// Whether the closure has finished.
    var isFinished: Bool { outcome.withLock { $0 != nil } }
}

private final class PGThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

// MARK: - The helper process

enum PGHelper {
    /// interlock-pg-helper, next to the test bundle in the build directory.
    static let path = builtExecutable(named: "interlock-pg-helper")

    /// A running helper whose stdin and stdout are pipes to us.
    final class Child {
        let pid: pid_t
        /// Our end of its stdin: closing it tells a `hold` child to exit.
        private(set) var input: Int32
        /// Our end of its stdout.
        let output: Int32
        private var reaped = false

        init(pid: pid_t, input: Int32, output: Int32) {
            self.pid = pid
            self.input = input
            self.output = output
        }

        /// Reads one line of its stdout, waiting `limit` at most. - Returns: nil at end of file
        /// or when the time passed.
        func readLine(within limit: Duration) -> String? { Self.readLine(from: output, within: limit) }

        /// Reads one line of the pipe `output`, waiting `limit` at most (from any thread: the
        /// fd is all it touches). - Returns: nil at end of file or when the time passed.
        static func readLine(from output: Int32, within limit: Duration) -> String? {
            let deadline = ContinuousClock.now + limit
            var line: [UInt8] = []
            while true {
                let left = deadline - .now
                if left <= .zero { return nil }
                var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
                let milliseconds = Int32(
                    left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
                let ready = poll(&descriptor, 1, milliseconds)
                if ready < 0 && errno == EINTR { continue }
                if ready <= 0 { continue }
                var byte: UInt8 = 0
                let n = read(output, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return nil }
                if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
                line.append(byte)
            }
        }

        /// Sends `signal` and reaps it. - Returns: how it ended.
        @discardableResult
        func kill(_ signal: Int32) -> Ending {
            _ = Glibc.kill(pid, signal)
            return wait()
        }

        /// Waits for it to end (once). - Returns: how it ended.
        func wait() -> Ending {
            if input >= 0 { close(input); input = -1 }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            reaped = true
            return Ending(status)
        }

        deinit {
            if !reaped {
                _ = Glibc.kill(pid, SIGKILL)
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            }
            if input >= 0 { close(input) }
            close(output)
        }
    }

    /// How a child ended.
    struct Ending: Equatable, CustomStringConvertible {
        var exitCode: Int32?
        var signal: Int32?
        init(exitCode: Int32?, signal: Int32?) {
            self.exitCode = exitCode
            self.signal = signal
        }
        init(_ status: Int32) {
            let signal = status & 0x7f
            self.init(exitCode: signal == 0 ? (status >> 8) & 0xff : nil, signal: signal == 0 ? nil : signal)
        }
        static let success = Ending(exitCode: 0, signal: nil)
        var description: String { exitCode.map { "exit \($0)" } ?? "signal \(signal ?? -1)" }
    }

    /// Starts the helper with `arguments` (run by `launcher`, such as `ip netns exec NS`, when
    /// given), its stdin and stdout pipes to us, its stderr ours.
    static func spawn(_ arguments: [String], launcher: [String] = []) throws -> Child {
        try #require(access(path, X_OK) == 0, "helper not found at \(path); build with `swift build --build-tests`")
        var stdinPipe: [Int32] = [0, 0]
        var stdoutPipe: [Int32] = [0, 0]
        // Close-on-exec from the start (a child that another test spawns must not inherit
        // them); dup2 gives the child its own ends without the flag.
        try #require(
            closeOnExecPipe(&stdinPipe) && closeOnExecPipe(&stdoutPipe), "pipe2 failed: errno \(errno)")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        let command = launcher + [path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let rc = posix_spawnp(&pid, command[0], &actions, nil, argv, environ)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        if rc != 0 {
            close(stdinPipe[1])
            close(stdoutPipe[0])
        }
        try #require(rc == 0, "posix_spawn \(path) failed: \(String(cString: strerror(rc)))")
        return Child(pid: pid, input: stdinPipe[1], output: stdoutPipe[0])
    }
}

// MARK: - Shared state

/// A value read and written under Interlock's `Lock`, for state that threads share in these
/// tests: the library's own box. Not Synchronization.Mutex: its contended path is not
/// instrumented, so ThreadSanitizer misses the hand-off and reports the value as raced (seen in
/// a CI run).
typealias PGLocked<Value> = _PGProtected<Value>

/// A task executor with one OS thread of its own, for the async tests that bound a latency
/// (`waitUntilLost` within 10 s): on the 2-thread cooperative pool, the synchronous tests that
/// run beside them (servers starting, processes awaited) block both threads for seconds, and a
/// CI run measured 12.4 s for a loss noticed at once. Code run under
/// `withTaskExecutorPreference(executor)` resumes on this thread instead.
final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    // `jobs` and `stopping` are accessed only under `condition`.
    private let condition = Condition()
    private var jobs: [UnownedJob] = []
    private var stopping = false
    private var runner: PGThread<Void>? = nil

    init() {
        runner = PGThread { [self] in run() }
    }

    func enqueue(_ job: UnownedJob) {
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    /// Ends the thread once the jobs queued so far have run; call when no task uses it.
    func shutdown() {
        condition.withLock {
            stopping = true
            condition.signal()
        }
        _ = try? runner?.join().get()
    }

    /// The threads of the executors now running (`pthread_self()` of each), for the tests of
    /// the trait `.blocking`.
    private static let threads = PGLocked<Set<pthread_t>>([])

    /// Whether the calling thread is a `DedicatedThreadExecutor`'s.
    static var currentThreadIsDedicated: Bool {
        threads.withLock { $0.contains(pthread_self()) }
    }

    private func run() {
        Self.threads.withLock { _ = $0.insert(pthread_self()) }
        defer { Self.threads.withLock { _ = $0.remove(pthread_self()) } }
        while true {
            let next: UnownedJob? = condition.withLock {
                while jobs.isEmpty && !stopping { condition.wait() }
                return jobs.isEmpty ? nil : jobs.removeFirst()
            }
            guard let job = next else { return }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body` with its awaits resumed on a `DedicatedThreadExecutor` of its own (for the
/// measured parts of latency-bound async tests), and ends the thread after it.
func onDedicatedThread<R: Sendable>(_ body: () async throws -> R) async throws -> R {
    let executor = DedicatedThreadExecutor()
    defer { executor.shutdown() }
    return try await withTaskExecutorPreference(executor) { try await body() }
}
