// PostgresSemaphore: at most `permits` holders of a name at once, across processes on many hosts
// that share a PostgreSQL server; the seeds' dispatch semaphore, across machines. Each object
// holds at most one permit, on a session of its own: PostgresLock's session (its claim against
// poolers, its server-side keepalives, its fencing tokens), with the semaphore's statements
// (PostgresSemaphoreSQL.swift: permits as advisory-lock slots, waiting by LISTEN/NOTIFY).
//
// The object's state is PostgresLock's table (PostgresLock.swift), with "the lock" read as "a
// permit": the session, touched only by the holder of `gate` (a binary Semaphore; async calls
// wait for it as tasks), holds no slot, holds one (`heldKey`, token published in `token`), or held
// one and died (release throws lockLost). Invariants (1)-(4) of PostgresLock hold as stated.
//
// Memory ordering: `token` as in PostgresLock (release store after the acquisition, acquire
// load in `fencingToken`).

import Interlock
import Synchronization

/// At most `permits` holders of a name at once, across processes on any number of hosts that
/// share a PostgreSQL server: a counting semaphore on session-level advisory locks.
///
/// ```swift
/// let exports = try PostgresSemaphore(connectionString: "host=db.internal dbname=jobs",
///                                     name: "exports", permits: 3)
/// guard try await exports.acquire(before: .now + .seconds(30)) else { return }  // busy
/// defer { try? exports.release() }
/// try await runExport(fencingToken: exports.fencingToken!)
/// ```
///
/// - A permit is one of `permits` advisory locks (slots) whose keys derive from `name`; every
///   process must pass the same `permits` for a name (one that passes more lets in as many
///   holders as it passes).
/// - Each object holds at most one permit: give each concurrent holder its own object.
/// - ``acquire(before:)`` suspends the task (no thread waits) until a release wakes it: a
///   release notifies the name's waiters (`NOTIFY`, only when someone waits), and they try
///   again; a permit freed by a holder's death (a crash, a partition) is found within 0.5 s of the
///   server's noticing. Waiters are not served in arrival order: one can be overtaken.
/// - Each acquisition gets a ``fencingToken``, drawn from the same sequence as
///   ``PostgresLock``'s: unique and increasing in acquisition order across holders, restarts and
///   crashes (`interlock.fence` does not record them: it speaks of a single holder).
/// - Deployment rules as for ``PostgresLock``: its own server session (a pooler that shares
///   sessions is refused with ``PostgresLockError/Code/unsupportedPooler``), released by the
///   server within about 30 s when its holder's host vanishes, the schema `interlock` for the
///   tokens. Errors are ``PostgresLockError``s naming the semaphore.
public final class PostgresSemaphore: Sendable {
    /// The semaphore's name, as given to ``init(connectionString:name:permits:)``.
    public let name: String
    /// How many holders the semaphore admits at once.
    public let permits: Int

    /// Who may use the session now: one call at a time (the holder of the single unit).
    let gate = Semaphore(value: 1)
    /// The session, touched only by the gate's holder.
    let box: _PGSessionBox
    /// The current permit's token; 0 when no permit is held (or it is known lost).
    let token = Atomic<Int64>(0)
    /// The engine over a connection pool's leases (PostgresLockEngine.swift); nil for a
    /// semaphore on its own libpq session.
    let engine: (any _PGLockEngine)?

    /// The most permits a semaphore may have (each is a slot that an acquisition may try).
    public static let maximumPermits = 10_000

    /// Connects to the server and prepares the semaphore's statements.
    ///
    /// - Parameters:
    ///   - connectionString: a libpq connection string or URI, as for
    ///     ``PostgresLock/init(connectionString:name:)``, with the same defaults.
    ///   - name: the semaphore's name; every process that uses the same name and database
    ///     shares its permits.
    ///   - permits: how many holders at once, 1 through ``maximumPermits``; every process must
    ///     pass the same number. Anything else is a programmer error and traps.
    /// - Throws: what ``PostgresLock/init(connectionString:name:)`` throws.
    public init(connectionString: String, name: String, permits: Int) throws(PostgresLockError) {
        Self.checkPermits(permits, name)
        self.name = name
        self.permits = permits
        if let reason = _PGConnection.syntaxError(in: connectionString) {
            throw PostgresLockError(
                code: .invalidConnectionString, lockName: name, operation: "init",
                message: "the connection string cannot be parsed", serverMessage: reason
            ).naming(Self.self)
        }
        let session = _PostgresSession(
            connectionString: connectionString, name: name, key: _PostgresSemaphoreSQL.waitKey(name: name),
            probingPoolers: true, slots: _PostgresSemaphoreSQL.slotKeys(name: name, permits: permits))
        do {
            _ = try session.connection(for: "init")
        } catch {
            throw error.naming(Self.self)
        }
        self.box = _PGSessionBox(session)
        self.engine = nil
    }

    /// A semaphore whose round trips go through `engine` (a connection pool's leases).
    init(name: String, permits: Int, engine: any _PGLockEngine) {
        Self.checkPermits(permits, name)
        self.name = name
        self.permits = permits
        // Never opened: every call goes to the engine.
        self.box = _PGSessionBox(
            _PostgresSession(connectionString: "", name: name, key: 0, probingPoolers: false, slots: []))
        self.engine = engine
    }

    /// Traps unless `permits` is 1 through ``maximumPermits`` (a programmer error). - Returns: it.
    @discardableResult
    static func checkPermits(_ permits: Int, _ name: String) -> Int {
        guard (1...maximumPermits).contains(permits) else {
            fatalError(
                "PostgresSemaphore \"\(name)\": permits must be between 1 and \(maximumPermits), got \(permits)")
        }
        return permits
    }

    /// Acquires through the engine and publishes the token (the gate held by the caller).
    private func engineAcquire(_ engine: any _PGLockEngine, _ operation: String, _ deadline: ContinuousClock.Instant?)
        async throws -> Bool
    {
        guard !engine.isHeld else { return false }
        let acquired: Int64?
        do {
            acquired = try await engine.acquire(operation: operation, before: deadline)
        } catch let error as PostgresLockError {
            throw error.naming(Self.self)
        }
        guard let acquired else { return false }
        // Release: pairs with fencingToken's acquire load.
        token.store(acquired, ordering: .releasing)
        return true
    }

    /// Releases through the engine; the token is cleared first.
    private func engineRelease(_ engine: any _PGLockEngine) async throws {
        try await gate.wait()
        defer { gate.signal() }
        // Relaxed: the token is only cleared; nothing is published with the zero.
        token.store(0, ordering: .relaxed)
        do {
            try await engine.release()
        } catch let error as PostgresLockError {
            throw error.naming(Self.self)
        }
    }

    /// Asks the engine whether the permit is still held; a loss clears the token.
    private func engineCheck(_ engine: any _PGLockEngine) async throws -> Bool {
        try await gate.wait()
        defer { gate.signal() }
        let held: Bool
        do {
            held = try await engine.checkHeld()
        } catch let error as PostgresLockError {
            throw error.naming(Self.self)
        }
        // Relaxed: the token is only cleared; nothing is published with the zero.
        if !held { token.store(0, ordering: .relaxed) }
        return held
    }

    /// Runs `body` with the gate held (suspending for its turn).
    private func gateAsync<R>(_ body: () async throws -> R) async throws -> R {
        try await gate.wait()
        defer { gate.signal() }
        return try await body()
    }

    /// Takes a permit if one is free, without waiting: one round trip, blocking the calling
    /// thread.
    ///
    /// - Returns: `true` when this call took a permit (``fencingToken`` is then its token);
    ///   `false` when all are held, or this object holds one already (or held one and has not
    ///   yet acknowledged its loss through ``release()-60sb6``).
    /// - Throws: what ``PostgresLock/tryLock()-9dozi`` throws.
    public func tryAcquire() throws(PostgresLockError) -> Bool {
        if let engine {
            return try _PGBlocking.run(name, "tryAcquire") { [self] in
                try await gateAsync { try await engineAcquire(engine, "tryAcquire", nil) }
            }
        }
        gate.wait()
        defer { gate.signal() }
        let session = box.session
        guard !session.held,
            let acquired = try naming({ () throws(PostgresLockError) in
                try session.tryPermit(operation: "tryAcquire")
            })
        else { return false }
        // Release: pairs with fencingToken's acquire load.
        token.store(acquired, ordering: .releasing)
        return true
    }

    /// Takes a permit, waiting until `deadline` at most, with the task suspended (no thread
    /// waits).
    ///
    /// Tries at once; then waits for a release to wake it (or 0.5 s, for permits freed by a
    /// holder's death) and tries again, until the deadline. A deadline in the past makes it one
    /// try.
    /// - Returns: `true` when a permit was taken; `false` when the deadline passed first (never
    ///   before it), or this object holds a permit already.
    /// - Throws: what ``tryAcquire()-4wgvp`` throws; `CancellationError` when the task is cancelled
    ///   while it waits: then it holds nothing (a permit granted as the cancellation came is given
    ///   back first).
    public func acquire(before deadline: ContinuousClock.Instant) async throws -> Bool {
        if let engine { return try await gateAsync { try await engineAcquire(engine, "acquire(before:)", deadline) } }
        try await gate.wait()
        defer { gate.signal() }
        let session = box.session
        let acquired: Int64?
        do {
            acquired =
                session.held
                ? nil : try await session.acquirePermitAsync(operation: "acquire(before:)", before: deadline, box: box)
        } catch let error as PostgresLockError {
            throw error.naming(Self.self)
        }
        guard let acquired else { return false }
        // Release: as in tryAcquire().
        token.store(acquired, ordering: .releasing)
        return true
    }

    /// Gives the permit back: one round trip, which also wakes the semaphore's waiters when
    /// there are any.
    ///
    /// Afterwards the object holds no permit, whatever the outcome.
    /// - Throws: ``PostgresLockError`` with code `notHeld` when this object holds no permit;
    ///   `lockLost` when its session died while holding it (the server had freed the permit);
    ///   `serverError` when the server refused (the session is then closed, which frees it).
    public func release() throws(PostgresLockError) {
        if let engine { return try _PGBlocking.run(name, "release") { [self] in try await engineRelease(engine) } }
        gate.wait()
        defer { gate.signal() }
        // Relaxed: the token is only cleared; nothing is published with the zero.
        token.store(0, ordering: .relaxed)
        try naming { () throws(PostgresLockError) in try box.session.release() }
    }

    /// The current permit's fencing token: unique, and greater than the token of every earlier
    /// acquisition of any ``PostgresLock`` or ``PostgresSemaphore`` on the server; `nil` when this
    /// object holds no permit (or ``checkHeld()-7m3pb`` found it lost). Read without a round trip.
    public var fencingToken: Int64? {
        // Acquire: pairs with the release stores in tryAcquire() and acquire(before:).
        let value = token.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    /// Asks the server whether this object's session still holds its permit: one round trip.
    ///
    /// - Returns: `true` when it does; `false` when the object holds no permit, or its session
    ///   died (``fencingToken`` is then `nil`, and ``release()-60sb6`` throws
    ///   ``PostgresLockError/Code/lockLost``).
    /// - Throws: ``PostgresLockError`` when the server answered with an error.
    public func checkHeld() throws(PostgresLockError) -> Bool {
        if let engine { return try _PGBlocking.run(name, "checkHeld") { [self] in try await engineCheck(engine) } }
        gate.wait()
        defer { gate.signal() }
        let held = try naming { () throws(PostgresLockError) in try box.session.checkHeld() }
        if !held {
            // Relaxed: the token is only cleared; nothing is published with the zero.
            token.store(0, ordering: .relaxed)
        }
        return held
    }

    // MARK: - Async forms of the round trips

    /// Takes a permit if one is free, without waiting: one round trip, during which the task is
    /// suspended and its thread free.
    ///
    /// - Returns: as ``tryAcquire()-4wgvp``.
    /// - Throws: what ``tryAcquire()-4wgvp`` throws; `CancellationError` when the task was
    ///   cancelled while it waited for another call on this object to end.
    public func tryAcquire() async throws -> Bool {
        if let engine { return try await gateAsync { try await engineAcquire(engine, "tryAcquire", nil) } }
        return try await acquire(before: .now - .seconds(1))
    }

    /// Gives the permit back, as ``release()-60sb6`` does, with the task suspended during the
    /// round trip.
    ///
    /// - Throws: what ``release()-60sb6`` throws; `CancellationError` only when the task was
    ///   cancelled before its turn came (another call on this object was running): then
    ///   nothing changed.
    public func release() async throws {
        if let engine { return try await engineRelease(engine) }
        try await gate.wait()
        defer { gate.signal() }
        // Relaxed: the token is only cleared; nothing is published with the zero.
        token.store(0, ordering: .relaxed)
        do {
            try await box.session.releaseAsync()
        } catch {
            throw error.naming(Self.self)
        }
    }

    /// Asks the server whether this object's session still holds its permit, as
    /// ``checkHeld()-7m3pb`` does, with the task suspended during the round trip.
    public func checkHeld() async throws -> Bool {
        if let engine { return try await engineCheck(engine) }
        return try await gateAsync {
            let held: Bool
            do throws(PostgresLockError) {
                held = try await box.session.checkHeldAsync()
            } catch {
                throw error.naming(Self.self)
            }
            // Relaxed: the token is only cleared; nothing is published with the zero.
            if !held { token.store(0, ordering: .relaxed) }
            return held
        }
    }

    /// Runs `body`, naming this type in the error it throws (the session's errors name
    /// PostgresLock).
    private func naming<R>(_ body: () throws(PostgresLockError) -> R) throws(PostgresLockError) -> R {
        do { return try body() } catch { throw error.naming(Self.self) }
    }
}

extension PostgresLockError {
    /// The same error, thrown by `type`.
    func naming(_ type: Any.Type) -> PostgresLockError {
        var error = self
        error.primitive = "\(type)"
        return error
    }
}
