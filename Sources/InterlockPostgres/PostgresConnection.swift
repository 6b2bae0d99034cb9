// One libpq connection (a PostgreSQL session), as PostgresLock uses it: opened with TCP
// keepalives and timeouts by default, notices silenced, statements prepared once per session,
// and every failure turned into a `_PGFailure` carrying the server's SQLSTATE and message. Not
// thread-safe: PostgresLock touches it only under its mutex.

import CLibPQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failure of libpq or the server, before it is named for a lock and an operation.
struct _PGFailure: Error {
    /// The server's SQLSTATE, when the server answered with an error.
    var sqlState: String?
    /// The server's or libpq's message, one line.
    var message: String
    /// The session is gone (the connection broke, the backend was terminated, the server shut
    /// down): every session-level lock it held was released by the server.
    var sessionLost: Bool
}

/// A PostgreSQL session over libpq (see the file comment).
final class _PGConnection {
    /// The `PGconn *`; nil once closed.
    private var handle: OpaquePointer?

    /// Defaults that the caller's connection string overrides (libpq takes the last value of a
    /// repeated keyword, and the string, expanded from `dbname`, comes last): give up connecting
    /// after 10 s; probe an idle connection after 10 s, every 5 s, 3 times (a dead server or
    /// network is noticed in about 25 s instead of the kernel's 2 hours); fail a send that is not
    /// acknowledged within 30 s.
    static let defaults: [(String, String)] = [
        ("connect_timeout", "10"),
        ("keepalives", "1"),
        ("keepalives_idle", "10"),
        ("keepalives_interval", "5"),
        ("keepalives_count", "3"),
        ("tcp_user_timeout", "30000"),
        ("application_name", "interlock"),
    ]

    /// Checks `connectionString` without connecting. - Returns: libpq's reason when it cannot
    /// be parsed (as a key/value string or a URI), else nil.
    static func syntaxError(in connectionString: String) -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            defer { if let error { PQfreemem(error) } }
            let reason = error.map { Self.oneLine(String(cString: $0)) } ?? "libpq could not parse it (out of memory?)"
            return redactingPasswords(in: reason, of: connectionString)
        }
        PQconninfoFree(options)
        return nil
    }

    /// libpq quotes the part of a URI that it cannot parse, which may be the whole URI or the
    /// password itself (`invalid percent-encoded token: "secret%zz"`): `reason` with every
    /// password of `connectionString` (a URI's `user:password@`, any `password=` value) cut out.
    static func redactingPasswords(in reason: String, of connectionString: String) -> String {
        var passwords: [Substring] = []
        for scheme in ["postgresql://", "postgres://"] where connectionString.hasPrefix(scheme) {
            // As libpq reads it: the user information ends at the first "@" before any "/".
            let rest = connectionString.dropFirst(scheme.count)
            let userInformation = rest.prefix { $0 != "@" && $0 != "/" }
            if userInformation.endIndex < rest.endIndex, rest[userInformation.endIndex] == "@",
                let colon = userInformation.firstIndex(of: ":")
            {
                passwords.append(userInformation[userInformation.index(after: colon)...])
            }
        }
        var rest = connectionString[...]
        while let keyword = rest.firstRange(of: "password=") {
            rest = rest[keyword.upperBound...]
            passwords.append(rest.prefix { $0 != " " && $0 != "&" && $0 != "'" })
        }
        var redacted = reason
        for password in passwords where !password.isEmpty { redacted = redacted.replacing(password, with: "***") }
        return redacted
    }

    /// Opens a session. - Throws: `_PGFailure` with libpq's reason (it names the host and port
    /// it tried, never the password).
    init(connectionString: String) throws(_PGFailure) {
        let pairs = Self.defaults + [("dbname", connectionString)]
        let keys = pairs.map { strdup($0.0) }
        let values = pairs.map { strdup($0.1) }
        defer { for pointer in keys + values { free(pointer) } }
        let keyArray = keys.map { UnsafePointer($0) } + [nil]
        let valueArray = values.map { UnsafePointer($0) } + [nil]
        let connection = PQconnectdbParams(keyArray, valueArray, 1)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let reason = connection.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "out of memory"
            PQfinish(connection)
            throw _PGFailure(sqlState: nil, message: reason, sessionLost: true)
        }
        // Advisory-lock functions warn through notices (pg_advisory_unlock of a lock not held);
        // libpq would print them on stderr. The results say everything the lock needs.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        // Sends never block (the async forms wait for the socket in the reactor instead); PQexec
        // and its kin ignore the mode and block, as the blocking forms want.
        if PQsetnonblocking(connection, 1) != 0 {
            let reason = Self.oneLine(String(cString: PQerrorMessage(connection)))
            PQfinish(connection)
            throw _PGFailure(
                sqlState: nil, message: "cannot make the connection non-blocking: \(reason)", sessionLost: true)
        }
        handle = connection
    }

    deinit { close() }

    /// The socket, for the reactor; -1 when closed.
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Reads whatever arrived on an idle session (a notice, the server's last words before it
    /// ended the session, the end of the stream), without blocking. - Returns: whether the
    /// session is still usable.
    func consumeIdleInput() -> Bool {
        guard let handle else { return false }
        return PQconsumeInput(handle) == 1 && PQstatus(handle) == CONNECTION_OK
    }

    /// Ends the session (the server releases its session-level locks).
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// Whether the session may still be used: open and not known to be broken.
    var isUsable: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// The server's version as PQserverVersion gives it (150004 for 15.4).
    var serverVersion: Int32 { handle.map { PQserverVersion($0) } ?? 0 }

    /// The process ID that the server reported at startup (its cancel key data). A pooler
    /// reports one of its own there: PgBouncer a random number, in every pool mode.
    var reportedBackendProcessID: Int32 { handle.map { PQbackendPID($0) } ?? 0 }

    /// The value in use of a libpq connection option (`keepalives_idle`, say), or nil when it is
    /// unset.
    func option(_ keyword: String) -> String? {
        guard let handle, let options = PQconninfo(handle) else { return nil }
        defer { PQconninfoFree(options) }
        var entry = options
        while let name = entry.pointee.keyword {
            if String(cString: name) == keyword { return entry.pointee.val.map { String(cString: $0) } }
            entry += 1
        }
        return nil
    }

    /// Prepares `sql` as the statement `name` with `parameterCount` parameters.
    func prepare(_ name: String, _ sql: String, parameterCount: Int32) throws(_PGFailure) {
        let handle = try usableHandle()
        _ = try check(PQprepare(handle, name, sql, parameterCount, nil))
    }

    /// Runs the prepared statement `name` with text parameters. - Returns: the rows as text
    /// (nil for SQL NULL).
    func run(prepared name: String, _ parameters: [String]) throws(_PGFailure) -> [[String?]] {
        let handle = try usableHandle()
        let copies = parameters.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let values = copies.map { UnsafePointer($0) }
        return try rows(check(PQexecPrepared(handle, name, Int32(values.count), values, nil, nil, 0)))
    }

    /// `text` as an SQL string literal, quoted by libpq for this connection (PQescapeLiteral).
    func literal(_ text: String) throws(_PGFailure) -> String {
        let handle = try usableHandle()
        let utf8 = Array(text.utf8)
        guard
            let quoted = utf8.withUnsafeBufferPointer({ buffer in
                buffer.withMemoryRebound(to: CChar.self) { PQescapeLiteral(handle, $0.baseAddress, $0.count) }
            })
        else { throw connectionFailure() }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    /// Runs `sql`, one statement, with text parameters (`PQexecParams`: the unnamed statement,
    /// nothing left prepared on the session). - Returns: the rows, as text.
    func run(_ sql: String, parameters: [String]) throws(_PGFailure) -> [[String?]] {
        let handle = try usableHandle()
        let copies = parameters.map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let values = copies.map { UnsafePointer($0) }
        return try rows(check(PQexecParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)))
    }

    /// Runs `sql` (one or more statements, one implicit transaction). - Returns: the rows of the
    /// last statement, as text.
    func run(_ sql: String) throws(_PGFailure) -> [[String?]] {
        let handle = try usableHandle()
        return try rows(check(PQexec(handle, sql)))
    }

    // MARK: - Results and failures

    func usableHandle() throws(_PGFailure) -> OpaquePointer {
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            throw _PGFailure(sqlState: nil, message: "the connection to the server was lost", sessionLost: true)
        }
        return handle
    }

    /// Returns `result` when it reports success; else frees it and throws what went wrong.
    private func check(_ result: OpaquePointer?) throws(_PGFailure) -> OpaquePointer {
        let status = result.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR
        if let result, status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK { return result }
        defer { PQclear(result) }
        throw failure(from: result)
    }

    /// What a failed `result` (nil: no result at all) says went wrong; does not free it.
    func failure(from result: OpaquePointer?) -> _PGFailure {
        let field = { (code: Character) -> String? in
            guard let result, let text = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: text)
        }
        let sqlState = field("C")
        let message = field("M") ?? handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "no connection"
        // Class 08: connection exceptions; 57P01-57P03: the backend was terminated or the server
        // is shutting down or restarting; a broken connection has no SQLSTATE at all. PQstatus
        // alone misses one: a statement sent on a Unix socket whose server has died fails
        // ("server closed the connection unexpectedly", no SQLSTATE) while PQstatus still says
        // CONNECTION_OK, until the next call. An error without SQLSTATE is libpq's own, not the
        // server's answer: the session is not to be trusted after it.
        let brokenConnection = handle.map { PQstatus($0) != CONNECTION_OK } ?? true
        let lost =
            brokenConnection || sqlState == nil || sqlState?.hasPrefix("08") == true
            || ["57P01", "57P02", "57P03"].contains(sqlState ?? "")
        return _PGFailure(sqlState: sqlState, message: message, sessionLost: lost)
    }

    /// The failure of a call that libpq refused before any result (a send, PQconsumeInput).
    func connectionFailure() -> _PGFailure {
        let message = handle.map { Self.oneLine(String(cString: PQerrorMessage($0))) } ?? "no connection"
        return _PGFailure(
            sqlState: nil, message: message.isEmpty ? "the connection failed" : message, sessionLost: true)
    }

    func rows(_ result: OpaquePointer) -> [[String?]] {
        defer { PQclear(result) }
        let columns = PQnfields(result)
        return (0..<PQntuples(result)).map { row in
            (0..<columns).map { column in
                PQgetisnull(result, row, column) != 0 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }

    /// libpq's messages end in a newline and may span lines; errors carry one line.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingSpaces() }.joined(separator: " ")
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
