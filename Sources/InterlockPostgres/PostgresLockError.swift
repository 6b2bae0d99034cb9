// PostgresLockError: every failure of a PostgresLock, as a value naming the lock, the operation,
// what went wrong and, when the server said no, its message and SQLSTATE. PostgresLock never
// traps, and never puts the connection string (which may hold a password) in an error.

/// An error thrown by `PostgresLock` or `PostgresSemaphore`.
///
/// Its ``description`` reads, for example:
/// `PostgresLock.init "nightly-report": cannot create the schema interlock: permission denied for database jobs (SQLSTATE 42501)`.
public struct PostgresLockError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is.
    public enum Code: Sendable, Equatable {
        /// libpq cannot parse the connection string (neither `key=value` pairs nor a URI).
        case invalidConnectionString
        /// The server could not be reached, or refused the connection (authentication, an
        /// unknown database, too many clients): ``message`` has libpq's reason.
        case connectionFailed
        /// The session broke while no lock was held (the server restarted, the backend was
        /// terminated); the next call opens a new one.
        case connectionLost
        /// `unlock` found that the session holding the lock died meanwhile (connection lost,
        /// server restarted, backend terminated): the server released the lock, and someone
        /// else may hold it now, with a larger fencing token.
        case lockLost
        /// `unlock` was called on an object that does not hold the lock.
        case notHeld
        /// The server refused for lack of a privilege (SQLSTATE 42501): creating the schema
        /// `interlock`, or using its objects. See `PostgresLock`'s setup notes.
        case permissionDenied
        /// The connection passes through a pooler that lets other clients use the lock's server
        /// session (PgBouncer in transaction or statement mode, or a session pooler that does
        /// not reset sessions between clients): a session-level advisory lock would then be
        /// held for whichever client lands on that session next, and released by nobody. Connect
        /// directly, or through a pool in session mode; ``message`` says how.
        case unsupportedPooler
        /// The server is older than PostgreSQL 15, which introduced the unlogged sequences that
        /// the fencing tokens use.
        case unsupportedServer
        /// The fencing token's fields would overflow (2^43 acquisitions since the server's last
        /// crash, or 2^20 crashes); see `PostgresLock.fencingToken`.
        case tokensExhausted
        /// Any other error from the server: see ``sqlState`` and ``serverMessage``.
        case serverError
    }

    /// What kind of failure this is.
    public let code: Code
    /// The lock's name, as given to `PostgresLock.init(connectionString:name:)` (or the
    /// semaphore's).
    public let lockName: String
    /// The type that threw: `PostgresLock` or `PostgresSemaphore`.
    public var primitive = "PostgresLock"
    /// The operation that failed: `init`, `tryLock`, `lock(before:)`, `unlock`, `checkHeld`,
    /// `holderInfo`.
    public let operation: String
    /// What went wrong, in words.
    public let message: String
    /// The server's SQLSTATE (for example `42501`, insufficient privilege), when it answered.
    public let sqlState: String?
    /// The server's or libpq's own words, when there were any.
    public let serverMessage: String?

    /// Creates an error.
    public init(
        code: Code, lockName: String, operation: String, message: String, sqlState: String? = nil,
        serverMessage: String? = nil
    ) {
        self.code = code
        self.lockName = lockName
        self.operation = operation
        self.message = message
        self.sqlState = sqlState
        self.serverMessage = serverMessage
    }

    /// `<primitive>.<operation> "<name>": <message>[: <server message>][ (SQLSTATE XXXXX)]`.
    public var description: String {
        var text = "\(primitive).\(operation) \"\(lockName)\": \(message)"
        if let serverMessage { text += ": \(serverMessage)" }
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        return text
    }

    /// Names a libpq or server failure for a lock and an operation. `lost` is the code for a
    /// session that died (`connectionLost`, or `lockLost` while the lock was held).
    init(_ failure: _PGFailure, lockName: String, operation: String, doing what: String, lost: Code = .connectionLost) {
        let code: Code =
            failure.sessionLost ? lost : failure.sqlState == "42501" ? .permissionDenied : .serverError
        self.init(
            code: code, lockName: lockName, operation: operation, message: what, sqlState: failure.sqlState,
            serverMessage: failure.message)
    }
}
