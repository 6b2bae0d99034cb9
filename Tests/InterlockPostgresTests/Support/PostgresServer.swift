// A throwaway PostgreSQL server for the tests (scripts/postgres-throwaway.sh serve): a fresh
// cluster in a temporary directory on a Unix socket and 127.0.0.1, stopped and removed when
// `stop()` is called or this process exits (the script waits for the end of a pipe that only
// this process holds open).

import Foundation
import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#endif

final class PostgresServer: Sendable {
    /// `host=DIR port=PORT user=postgres dbname=postgres` (the Unix socket).
    let connectionString: String
    /// The cluster's directory (socket, data, server.log).
    let directory: String
    /// The TCP port on 127.0.0.1.
    let port: Int
    private let keepAlive: Int32
    private let pid: pid_t

    /// The repository's root, from this file's path.
    static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The server shared by the tests that do not restart or crash it.
    static let shared: Result<PostgresServer, any Error> = Result { try PostgresServer() }

    /// Starts a server of its own (about 1-2 s: initdb and start).
    init() throws {
        let (text, keepAlive, pid) = try startServing(script: "postgres-throwaway.sh", ["serve"])
        connectionString = text
        let fields = Dictionary(
            uniqueKeysWithValues: text.split(separator: " ").map {
                let pair = $0.split(separator: "=", maxSplits: 1)
                return (String(pair[0]), String(pair[1]))
            })
        directory = fields["host"]!
        port = Int(fields["port"]!)!
        self.keepAlive = keepAlive
        self.pid = pid
    }

    /// The same server over TCP on 127.0.0.1.
    var tcpConnectionString: String { "host=127.0.0.1 port=\(port) user=postgres dbname=postgres" }

    /// Stops the server and removes its directory; waits for the script to finish.
    func stop() {
        close(keepAlive)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// pg_ctl on the cluster: `stop-immediate` (a crash), `start`, `stop` (clean).
    ///
    /// posix_spawn and waitpid, not Foundation's Process: on Linux, Process learns that its
    /// child ended from the end of a socket that the child inherits, and `start` leaves the
    /// server running with that socket open, so waitUntilExit never returned.
    func control(_ mode: String) throws {
        let script = Self.root + "/scripts/postgres-throwaway.sh"
        let arguments = ["/bin/bash", script, "ctl", directory, mode]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, "/bin/bash", nil, nil, argv, environ)
        try #require(rc == 0, "posix_spawn \(script) failed: \(String(cString: strerror(rc)))")
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        try #require(status == 0, "postgres-throwaway.sh ctl \(mode) failed (wait status \(status))")
    }

    /// Makes the server listen on `address` too, trusting the client `client` (a restart).
    func listen(on address: String, allowing client: String) throws {
        try listen(on: [(address, client)])
    }

    /// Makes the server listen on each address too, trusting its client (one restart).
    func listen(on hosts: [(address: String, client: String)]) throws {
        let data = directory + "/data"
        let addresses = ["127.0.0.1"] + hosts.map(\.address)
        try appendLine("listen_addresses = '\(addresses.joined(separator: ","))'", to: data + "/postgresql.conf")
        for host in hosts { try appendLine("host all all \(host.client)/32 trust", to: data + "/pg_hba.conf") }
        try control("stop")
        try control("start")
    }

    private func appendLine(_ line: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        try #require(fd >= 0, "open \(path): errno \(errno)")
        defer { close(fd) }
        let bytes = Array((line + "\n").utf8)
        try #require(write(fd, bytes, bytes.count) == bytes.count, "write \(path): errno \(errno)")
    }

    /// Runs `sql` as the superuser on a session of its own. - Returns: the rows, as text.
    @discardableResult
    func execute(_ sql: String, database: String = "postgres") throws -> [[String?]] {
        let connection = try _PGConnection(
            connectionString: connectionString.replacingOccurrences(
                of: "dbname=postgres", with: "dbname=\(database)"))
        defer { connection.close() }
        return try connection.run(sql)
    }
}

/// Runs `scripts/SCRIPT ARGUMENTS...` (a `serve` that prints one line `host=...`, then serves
/// until its standard input ends) with its stdin a pipe that only this process holds.
/// - Returns: the line, our end of the pipe (closing it stops the server), the script's pid.
func startServing(script name: String, _ arguments: [String]) throws -> (line: String, keepAlive: Int32, pid: pid_t) {
    var control: [Int32] = [0, 0]
    var output: [Int32] = [0, 0]
    // Close-on-exec from the start (pipe2, not pipe + fcntl, which leaves a window for a
    // child spawned meanwhile by another test): no other child may inherit the keep-alive
    // end (the server would then outlive this process, and stop() would wait forever) or
    // the output's write end.
    try #require(closeOnExecPipe(&control) && closeOnExecPipe(&output), "pipe2 failed")
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, control[0], 0)
    posix_spawn_file_actions_adddup2(&actions, output[1], 1)
    let script = PostgresServer.root + "/scripts/" + name
    let argv: [UnsafeMutablePointer<CChar>?] = (["/bin/bash", script] + arguments).map { strdup($0) } + [nil]
    defer { for arg in argv { free(arg) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, "/bin/bash", &actions, nil, argv, environ)
    try #require(rc == 0, "posix_spawn \(script) failed: \(String(cString: strerror(rc)))")
    close(control[0])
    close(output[1])
    // The script's one line: the connection string (or nothing, when it failed: its
    // reasons went to stderr, which the test log shows).
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while read(output[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
    close(output[0])
    let text = String(decoding: line, as: UTF8.self)
    guard text.hasPrefix("host=") else {
        close(control[1])
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        throw PostgresServerError(
            message: "scripts/\(name) \(arguments.joined(separator: " ")) did not start (see its messages above)")
    }
    return (text, control[1], pid)
}

/// A throwaway PgBouncer in front of a server's TCP port (scripts/pgbouncer-throwaway.sh), in
/// pool mode `session`, `transaction` or `statement`; stopped by `stop()` or when this process
/// exits.
final class PgBouncerServer: Sendable {
    /// `host=127.0.0.1 port=PORT user=postgres dbname=postgres`: PgBouncer's own port.
    let connectionString: String
    private let keepAlive: Int32
    private let pid: pid_t
    private let stopped = PGLocked(false)

    init(proxying server: PostgresServer, mode: String, poolSize: Int = 4) throws {
        let started = try startServing(
            script: "pgbouncer-throwaway.sh", ["serve", String(server.port), mode, String(poolSize)])
        connectionString = started.line
        keepAlive = started.keepAlive
        pid = started.pid
    }

    /// Stops PgBouncer and removes its directory; waits for the script to finish. Once: later
    /// calls do nothing.
    func stop() {
        guard
            stopped.withLock({ done in
                defer { done = true }; return !done
            })
        else { return }
        close(keepAlive)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

struct PostgresServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
