// PostgresLock's calls on an engine-backed lock (PostgresLockEngine.swift): each with the gate
// held, the token published or cleared as on the lock's own session.

extension PostgresLock {
    /// Runs `body` with the gate held (suspending for its turn).
    func gateAsync<R>(_ body: () async throws -> R) async throws -> R {
        try await gate.wait()
        defer { gate.signal() }
        return try await body()
    }

    /// Acquires through the engine and publishes the token (the gate held by the caller).
    func engineAcquire(_ engine: any _PGLockEngine, _ operation: String, _ deadline: ContinuousClock.Instant?)
        async throws -> Bool
    {
        guard !engine.isHeld, let acquired = try await engine.acquire(operation: operation, before: deadline) else {
            return false
        }
        // Release: pairs with fencingToken's acquire load.
        token.store(acquired, ordering: .releasing)
        return true
    }

    /// Releases through the engine; the token is cleared first, whatever the outcome.
    func engineRelease(_ engine: any _PGLockEngine) async throws {
        try await gateAsync {
            // Relaxed: the token is only cleared; nothing is published with the zero.
            token.store(0, ordering: .relaxed)
            try await engine.release()
        }
    }

    /// Asks the engine whether the lock is still held; a loss clears the token.
    func engineCheck(_ engine: any _PGLockEngine) async throws -> Bool {
        try await gateAsync {
            let held = try await engine.checkHeld()
            // Relaxed: the token is only cleared; nothing is published with the zero.
            if !held { token.store(0, ordering: .relaxed) }
            return held
        }
    }
}
