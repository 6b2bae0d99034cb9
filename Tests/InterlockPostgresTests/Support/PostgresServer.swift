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
        let script = Self.root + "/scripts/postgres-throwaway.sh"
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/bash"), strdup(script), strdup("serve"), nil]
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
                message: "scripts/postgres-throwaway.sh serve did not start a server (see its messages above)")
        }
        connectionString = text
        let fields = Dictionary(
            uniqueKeysWithValues: text.split(separator: " ").map {
                let pair = $0.split(separator: "=", maxSplits: 1)
                return (String(pair[0]), String(pair[1]))
            })
        directory = fields["host"]!
        port = Int(fields["port"]!)!
        keepAlive = control[1]
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

struct PostgresServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
