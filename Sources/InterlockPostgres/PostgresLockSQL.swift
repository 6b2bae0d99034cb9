// The SQL of PostgresLock: the lock's key, the schema of the fencing tokens, and the statements.
//
// Key. The lock is the session-level advisory lock whose bigint key is the 64-bit FNV-1a hash of
// the name's UTF-8 bytes (`key(for:)`), in the database the connection string names (advisory
// locks are per database). Two names with the same key (a collision; for n names in use, a
// chance of about n^2 / 2^65) share one lock: they exclude each other, which is safe but makes
// one wait for the other; their fencing tokens are unaffected. Another application's advisory
// locks on the same bigint keys would collide the same way; the two-int4 key space
// (`pg_advisory_lock(int, int)`) is separate and never collides.
//
// Fencing tokens. A token must be strictly greater than every token handed out before it for
// the same name, across holders, sessions, server restarts and crashes. A row per name
// incremented at every acquisition would do, but an update of a logged table makes the commit
// wait for a WAL flush (an fsync, 0.1-10 ms) on every tryLock, where the advisory lock itself
// takes one round trip (tens of microseconds). So the token is two fields:
//
//     token = epoch << 43 | counter          (epoch: 20 bits, counter: 43 bits; token > 0)
//
//   counter  nextval of `interlock.fencing_counter`, an UNLOGGED sequence: no WAL, no flush,
//            never repeats while the server runs, kept by a clean shutdown, reset to 1 by
//            crash recovery (as every unlogged relation is).
//   epoch    the value of `interlock.fencing_current`, an UNLOGGED one-row table, reset to empty
//            by the same recovery. The acquiring statement reads it beside nextval, so both come
//            from one life of the server: a statement cannot span a crash. When it is empty, the
//            session takes a new epoch from `interlock.fencing_epoch` (a logged one-row table,
//            incremented, the commit flushed before any token carries it) and stores it there:
//            once per crash. An acquisition stays one round trip (the advisory lock, nextval and
//            the epoch in one statement). The epoch is read in the statement, never cached by
//            the client: a client connected through a pooler can outlive the server session it
//            read an epoch on, and a cached epoch would then give a token smaller than tokens
//            already issued after a crash.
//
// Invariants: (1) the counter and the current epoch are reset together and only together (crash
// recovery, before any session starts); (2) an epoch is durable before any token carries it, and
// every new epoch is larger than every earlier one; (3) between two resets the counter only
// grows; (4) the epoch and the counter of one token are read by one statement, and no reset
// happens while a statement runs. A token taken after a crash has a larger epoch than every token before
// it (2, 4); between crashes, the epoch is constant and the counter grows (3). Counter values
// taken after a reset and before the new epoch is stored belong to that new epoch (1): every
// statement that takes one reads an empty epoch, and its session then starts or reads that
// epoch (4). Acquisitions in the same
// session are ordered by the session, and acquisitions of one name by different sessions are
// ordered by the advisory lock (the holder's nextval happens after it was granted): tokens
// follow acquisition order.
//
// Not covered: a failover to an asynchronously replicated standby may lose the latest epoch
// increment (as it loses any recent commit), and a restore from an older backup brings an older
// epoch back; in both cases have an administrator raise `interlock.fencing_epoch.epoch` past
// every epoch used (the top 20 bits of the largest token a resource has seen). Nothing else may
// write the three objects.

/// The SQL text of PostgresLock and its key derivation (see the file comment).
enum _PostgresLockSQL {
    /// The advisory-lock key of `name`: FNV-1a (64-bit) over its UTF-8 bytes, as a bigint.
    static func key(for name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    static let counterBits = 43
    static let epochBits = 20

    /// The token of `counter` in `epoch`, or nil when a field would overflow.
    static func token(epoch: Int64, counter: Int64) -> Int64? {
        guard epoch > 0, epoch < 1 << epochBits, counter > 0, counter < 1 << counterBits else { return nil }
        return epoch << counterBits | counter
    }

    /// Creates the schema `interlock` and its three objects when missing. Concurrent setups
    /// queue on a transaction-level advisory lock in the two-int4 key space, which never meets
    /// a lock's bigint key.
    static let setup = """
        BEGIN;
        SET LOCAL lock_timeout = 0;
        SELECT pg_advisory_xact_lock(1768712046, 1);
        CREATE SCHEMA IF NOT EXISTS interlock;
        CREATE TABLE IF NOT EXISTS interlock.fencing_epoch (
            only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
            epoch bigint NOT NULL);
        INSERT INTO interlock.fencing_epoch (epoch) VALUES (0) ON CONFLICT DO NOTHING;
        CREATE UNLOGGED TABLE IF NOT EXISTS interlock.fencing_current (
            only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
            epoch bigint NOT NULL);
        CREATE UNLOGGED SEQUENCE IF NOT EXISTS interlock.fencing_counter;
        DO $setup$ BEGIN
            IF to_regprocedure('interlock.note_token(text,bigint)') IS NULL THEN
                CREATE FUNCTION interlock.note_token(name text, token bigint) RETURNS bigint
                    LANGUAGE sql IMMUTABLE AS 'SELECT $2';
            END IF;
        END $setup$;
        COMMIT;
        """

    /// Fencing at the resource (PostgresLock.fencingSQL): the newest token issued per name, and
    /// `interlock.fence(name, token)`, true only while `token` is it.
    ///
    /// Every acquiring statement passes its token to `interlock.note_token(name, token)`; the
    /// schema's own version (`setup`) returns it and does nothing else (IMMUTABLE: the planner
    /// inlines it, so an acquisition without fencing costs nothing more). This script replaces it
    /// with one that records the token in `interlock.fencing_latest`, an UNLOGGED table: no WAL
    /// flush per acquisition, and emptied by crash recovery, after which `fence` is false for
    /// every token issued before the crash (their sessions died with it) until the next
    /// acquisition records one. Replacing the function invalidates the prepared plans of every
    /// session that inlined the old one: sessions opened before the script record from their
    /// next acquisition on, so no acquisition after it goes unrecorded.
    ///
    /// `fence` reads the name's row FOR SHARE: a protected write in flight with the old token
    /// makes the next acquisition's record wait until that write's transaction ends (so the
    /// next holder reads the resource after it), and a write that starts after the record was
    /// made sees the new token (READ COMMITTED follows the row to its newest version) and is
    /// refused. A tryLock that comes while the previous holder's protected write is in flight
    /// therefore waits for that transaction: keep protected transactions short.
    static let fencing = """
        BEGIN;
        SET LOCAL lock_timeout = 0;
        SELECT pg_advisory_xact_lock(1768712046, 1);
        CREATE UNLOGGED TABLE IF NOT EXISTS interlock.fencing_latest (
            name text PRIMARY KEY,
            token bigint NOT NULL);
        CREATE OR REPLACE FUNCTION interlock.note_token(name text, token bigint) RETURNS bigint
            LANGUAGE sql VOLATILE AS $note$
                INSERT INTO interlock.fencing_latest AS latest (name, token) VALUES ($1, $2)
                ON CONFLICT (name) DO UPDATE SET token = EXCLUDED.token
                RETURNING latest.token
            $note$;
        CREATE OR REPLACE FUNCTION interlock.fence(name text, token bigint) RETURNS boolean
            LANGUAGE sql VOLATILE AS $fence$
                SELECT coalesce(
                    (SELECT latest.token = $2 FROM interlock.fencing_latest AS latest
                     WHERE latest.name = $1 FOR SHARE),
                    false)
            $fence$;
        COMMIT;
        """

    /// The own-session test, true only on the server session that this client claimed
    /// (`claim`); `nonce` is the SQL of the client's nonce (a parameter or a literal). Every
    /// statement that takes, releases or asks about the lock carries it, so that a statement
    /// that a pooler sent to another client's session (PgBouncer in transaction or statement
    /// mode) changes nothing and says so.
    static func mine(_ nonce: String) -> String {
        "current_setting('\(clientSetting)', true) IS NOT DISTINCT FROM \(nonce)"
    }
    /// The session-level setting that marks a server session as claimed by one client.
    static let clientSetting = "interlock.client"

    /// The prepared statements: name, text, parameter count. `$1` is the key, `$2` the nonce,
    /// `$3` the lock's name (`counter`: the nonce and the name; `note`: the name and a token).
    /// Every statement but `note` returns `mine` first: false
    /// means that the pooler ran it on a session that this client does not own, and then it
    /// did nothing.
    static let statements: [(name: String, sql: String, parameters: Int32)] = [
        // One round trip: the lock, then (granted) the counter, beside the epoch; NULL counter
        // when not granted. CASE evaluates its conditions in order and a result only when it is
        // chosen: the lock is tried only on the client's own session, nextval only once granted.
        (
            tryLock,
            """
            SELECT a.mine, a.counter, a.epoch, \(noted("$3"))
            FROM (SELECT \(mine("$2")) AS mine,
                         CASE WHEN NOT \(mine("$2")) THEN NULL
                              WHEN pg_try_advisory_lock($1::bigint) THEN nextval('interlock.fencing_counter') END
                             AS counter,
                         (SELECT epoch FROM interlock.fencing_current) AS epoch
                  OFFSET 0) AS a
            """, 3
        ),
        (
            unlock,
            "SELECT \(mine("$2")), CASE WHEN \(mine("$2")) THEN pg_advisory_unlock($1::bigint) END", 2
        ),
        (
            counter,
            """
            SELECT a.mine, a.counter, a.epoch, \(noted("$2"))
            FROM (SELECT \(mine("$1")) AS mine,
                         CASE WHEN \(mine("$1")) THEN nextval('interlock.fencing_counter') END AS counter,
                         (SELECT epoch FROM interlock.fencing_current) AS epoch
                  OFFSET 0) AS a
            """, 2
        ),
        (note, "SELECT interlock.note_token($1, $2::bigint)", 2),
        (
            check,
            """
            SELECT \(mine("$2")), count(*) FROM pg_locks
            WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND (classid::bigint << 32 | objid::bigint) = $1::bigint
            """, 2
        ),
        (
            holder,
            """
            SELECT l.pid, host(a.client_addr), a.application_name,
                   extract(epoch FROM a.backend_start)::float8, l.pid = pg_backend_pid() AND \(mine("$2"))
            FROM pg_locks AS l LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND (l.classid::bigint << 32 | l.objid::bigint) = $1::bigint
            """, 2
        ),
    ]
    static let tryLock = "interlock_try_lock"
    static let unlock = "interlock_unlock"
    static let counter = "interlock_counter"
    static let check = "interlock_check_held"
    static let holder = "interlock_holder"
    static let note = "interlock_note_token"

    /// The acquiring statements' last column: the granted token noted for fencing (the subquery
    /// `a` has `counter` and `epoch`; with no epoch yet, the session notes it once it started one).
    static func noted(_ name: String) -> String {
        """
        CASE WHEN a.counter IS NOT NULL AND a.epoch IS NOT NULL
             THEN interlock.note_token(\(name), a.epoch << \(counterBits) | a.counter) END
        """
    }

    /// Claims the server session for this client and sets what the server needs to release the
    /// lock of a client that vanished; run once when the session opens, with `PQexecParams`
    /// (one round trip). Parameters: `$1` the client's nonce; `$2`-`$5` the server side's
    /// `tcp_keepalives_idle`, `_interval`, `_count` and `tcp_user_timeout` (ms), mirrored from
    /// the client's libpq settings. libpq's keepalives act on the client's socket only, and the
    /// backend keeps a session-level lock until its own socket fails (the kernel's default:
    /// over two hours). `client_connection_check_interval` makes a backend that waits in
    /// `pg_advisory_lock` for a vanished client leave the queue within seconds of its socket
    /// failing, instead of being granted the lock for nobody.
    ///
    /// Returns the setting's earlier value (NULL, or empty after a `RESET`/`DISCARD ALL`, on a
    /// session that no client holds) and the backend's pid. The subquery (OFFSET 0: evaluated
    /// first, on its own) reads the earlier value before the outer list sets it; CASE sets it
    /// only on a session that no other client claimed.
    static let claim = """
        SELECT p.prior, pg_backend_pid(),
               CASE WHEN coalesce(p.prior, '') = '' THEN set_config('\(clientSetting)', $1, false) END,
               set_config('tcp_keepalives_idle', $2, false),
               set_config('tcp_keepalives_interval', $3, false),
               set_config('tcp_keepalives_count', $4, false),
               set_config('tcp_user_timeout', $5, false),
               set_config('client_connection_check_interval', '\(connectionCheckMilliseconds)', false)
        FROM (SELECT current_setting('\(clientSetting)', true) AS prior OFFSET 0) AS p
        """
    /// How often a backend that runs a statement (a waiting `pg_advisory_lock`) checks that its
    /// client is still connected, in ms.
    static let connectionCheckMilliseconds = 5000

    /// A second client's look at the setting, when the first client's session seems to pass
    /// through a pooler (libpq's backend pid, from the startup's key data, differs from the
    /// backend's own): a pooler in transaction or statement mode hands the server session that
    /// the first client just used to the next client (PgBouncer reuses its idle server
    /// connections last-in first-out), which then sees the first client's nonce.
    static let probe = "SELECT current_setting('\(clientSetting)', true)"

    /// The waiting acquisition, as one simple query (one round trip): the server queues the
    /// session on the lock until it is granted or `lock_timeout` passes (SQLSTATE 55P03).
    /// `lock_timeout` stays set on the session afterwards: nothing else the session runs waits
    /// for a lock but `newEpoch`, which sets its own. Returns `mine`, the counter and the epoch,
    /// as `tryLock` does; the scalar subquery that waits is evaluated only when CASE reaches it
    /// (an InitPlan runs when first needed), so a statement on another client's session waits
    /// for nothing, and nextval runs on the row that the lock's function scan produced, after
    /// the grant. The key is a quoted literal: unquoted, `-9223372036854775808::bigint` parses
    /// as the negation of a cast of 9223372036854775808 to bigint, which overflows.
    /// `nameLiteral` is the lock's name as a string literal, quoted by libpq (PQescapeLiteral).
    static func waitingLock(key: Int64, nonce: String, nameLiteral: String, timeoutMilliseconds: Int64) -> String {
        """
        SET lock_timeout = \(timeoutMilliseconds);
        SELECT a.mine, a.counter, a.epoch, \(noted(nameLiteral))
        FROM (SELECT \(mine("'\(nonce)'")) AS mine,
                     CASE WHEN \(mine("'\(nonce)'"))
                          THEN (SELECT nextval('interlock.fencing_counter') FROM pg_advisory_lock('\(key)'::bigint))
                     END AS counter,
                     (SELECT epoch FROM interlock.fencing_current) AS epoch
              OFFSET 0) AS a
        """
    }

    /// The waiting acquisition's SELECT with parameters (`$1` the key, `$2` the nonce, `$3` the
    /// name), for a connection that runs one statement at a time (a leased postgres-nio
    /// connection); the caller sets `lock_timeout` before it. Same row as `waitingLock`.
    static let waitingLockParameterized = """
        SELECT a.mine, a.counter, a.epoch, \(noted("$3"))
        FROM (SELECT \(mine("$2")) AS mine,
                     CASE WHEN \(mine("$2"))
                          THEN (SELECT nextval('interlock.fencing_counter') FROM pg_advisory_lock($1::bigint))
                     END AS counter,
                     (SELECT epoch FROM interlock.fencing_current) AS epoch
              OFFSET 0) AS a
        """

    /// The statements of `script`, one by one, for a connection that runs one at a time: split
    /// at ";" ending a line, except inside a dollar-quoted body (`$tag$ ... $tag$`).
    static func statements(of script: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var openQuote: Substring?
        for line in script.split(separator: "\n", omittingEmptySubsequences: false) {
            current += (current.isEmpty ? "" : "\n") + line
            for quote in line.matches(of: /\$[A-Za-z_]*\$/).map({ line[$0.range] }) {
                openQuote = openQuote == quote ? nil : (openQuote ?? quote)
            }
            if openQuote == nil, line.hasSuffix(";") {
                statements.append(trimmed(current.dropLast()))
                current = ""
            }
        }
        let rest = trimmed(current[...])
        if !rest.isEmpty { statements.append(rest) }
        return statements
    }

    private static func trimmed(_ text: Substring) -> String {
        let start = text.drop(while: \.isWhitespace)
        return String(start.reversed().drop(while: \.isWhitespace).reversed())
    }

    /// A new epoch, when `fencing_current` is empty (after a crash, or at first use); the
    /// commit is flushed before the result is returned. Two sessions racing here may both
    /// increment `fencing_epoch`; one insert wins and both read its epoch (epochs only need to
    /// grow, not to be consecutive).
    /// `synchronous_commit` is forced on for it: a server, database or role that turned it off
    /// would let a crash lose the increment, and tokens go backwards. The last statement reads
    /// the epoch, after the commit.
    static let newEpoch = """
        BEGIN;
        SET LOCAL synchronous_commit = on;
        SET LOCAL lock_timeout = 0;
        WITH bumped AS (
            UPDATE interlock.fencing_epoch SET epoch = epoch + 1
            WHERE NOT EXISTS (SELECT 1 FROM interlock.fencing_current) RETURNING epoch)
        INSERT INTO interlock.fencing_current (epoch) SELECT epoch FROM bumped ON CONFLICT DO NOTHING;
        COMMIT;
        SELECT epoch FROM interlock.fencing_current
        """
}
