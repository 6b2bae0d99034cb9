// The PostgreSQL server of PostgresBenchmarks: a throwaway cluster on this machine, started with
// the repository's scripts/postgres-throwaway.sh serve (found from this file's path) the first
// time a benchmark's setup asks for it — not at registration, which also runs when the plugin
// only lists the benchmarks — and kept for the life of the process. The script stops the server
// and removes its directory when its standard input reaches end of file: that input is a pipe
// whose write end this process holds and never closes, so it closes when the process exits,
// however it exits. package-benchmark runs each benchmark in a process of its own, so each one
// that needs the server starts a fresh one (initdb and start, a few seconds, in its setup: not
// measured).
//
// The server listens on a Unix socket in its temporary directory (and on 127.0.0.1); the
// connection string the script prints names that directory as its host, so every contender
// talks to it over the Unix socket. No other server is ever contacted.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The throwaway server of this process (see the file comment).
enum ThrowawayServer {
    /// `host=DIR port=PORT user=postgres dbname=postgres`; starts the server on first use.
    static var connectionString: String { server.connectionString }

    /// Started once, on first use (a static let's initialization is thread-safe and lazy).
    private static let server = ServerProcess()
}

/// The running script and the pipe that keeps it (and the server) alive.
private final class ServerProcess: @unchecked Sendable {
    let connectionString: String
    // Held, never used again: closing `input`'s write end (at exit) stops the server.
    private let process: Process
    private let input: Pipe
    private let output: Pipe

    init() {
        // .../Benchmarks/Benchmarks/PostgresBenchmarks/ThrowawayServer.swift -> the repository root.
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/postgres-throwaway.sh").path
        guard access(script, X_OK) == 0 else {
            fatalError("PostgresBenchmarks: \(script) is missing or not executable")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, "serve"]
        input = Pipe()
        output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        // Standard error is inherited: the script's own messages (a missing server package).
        do {
            try process.run()
        } catch {
            fatalError("PostgresBenchmarks: cannot run \(script) serve: \(error)")
        }
        // The one line the script prints once the server accepts connections.
        var line: [UInt8] = []
        var byte: UInt8 = 0
        let fd = output.fileHandleForReading.fileDescriptor
        while true {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("host=") else {
            fatalError(
                "PostgresBenchmarks: \(script) serve started no server (printed \"\(text)\"; see its messages above; "
                    + "Debian/Ubuntu: apt-get install postgresql)")
        }
        connectionString = text
    }
}
