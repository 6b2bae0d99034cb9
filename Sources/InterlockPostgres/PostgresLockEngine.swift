// The other way a PostgresLock can reach its server: an engine that leases a connection from a
// pool for each hold (PostgresLock(client:name:), the package trait PostgresNIO: NIO/). A lock
// made with a connection string has no engine and uses its own libpq session (PostgresSession).
//
// The engine is async throughout; PostgresLock's blocking forms wait for it on the calling
// thread (`_PGBlocking`). Calls on one object still run one at a time: PostgresLock holds its
// gate around every engine call, as around every session call.

import Interlock

/// A lock's engine over leased connections (see the file comment). Every call but
/// `waitUntilLost` is made with the object's gate held.
protocol _PGLockEngine: AnyObject, Sendable {
    /// Whether the engine holds the lock (from a granted acquisition until release, also after
    /// its connection was lost: the loss is acknowledged by release).
    var isHeld: Bool { get }
    /// Held, and its connection not known lost.
    var isHeldAndAlive: Bool { get }
    /// Takes the lock, waiting until `deadline` when there is one. - Returns: the acquisition's
    /// fencing token, or nil when the lock was not taken.
    func acquire(operation: String, before deadline: ContinuousClock.Instant?) async throws -> Int64?
    /// Releases the lock (and the connection leased for the hold).
    func release() async throws
    /// Whether the hold's connection still holds the lock (one round trip while held).
    func checkHeld() async throws -> Bool
    /// Who holds the lock, as the server sees it.
    func holder() async throws -> PostgresLock.Holder?
    /// Returns once the lock held now is lost, released, or the task is cancelled.
    func waitUntilLost() async
}

/// Runs async work to its end on the calling thread, which blocks meanwhile (the blocking forms
/// of an engine-backed lock). Never call it on a thread that the work itself needs.
enum _PGBlocking {
    static func run<R: Sendable>(
        _ name: String, _ operation: String, _ work: @escaping @Sendable () async throws -> R
    ) throws(PostgresLockError) -> R {
        let done = Semaphore(value: 0)
        let outcome = _PGProtected<Result<R, any Error>?>(nil)
        Task {
            let result = await Result { () async throws(any Error) -> R in try await work() }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch outcome.withLock({ $0 }) {
        case .success(let value)?: return value
        case .failure(let error as PostgresLockError)?: throw error
        case .failure(let error)?:
            throw PostgresLockError(
                code: .serverError, lockName: name, operation: operation, message: "\(error)")
        case nil:
            fatalError("InterlockPostgres: internal error, blocking work ended without an outcome")
        }
    }
}
