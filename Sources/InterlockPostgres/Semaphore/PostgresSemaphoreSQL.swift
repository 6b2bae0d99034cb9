// The SQL of PostgresSemaphore: its keys, and the statements that take, release and wait for a
// permit. The session, its claim and its fencing tokens are PostgresLock's (PostgresLockSQL.swift).
//
// Permits. A semaphore of `permits` is `permits` session-level advisory locks, its slots, whose
// bigint keys are the FNV-1a hashes of "interlock.semaphore", the name and the slot's index
// (`slotKeys`): a session that holds one slot holds a permit, and the server lets at most one
// session hold each slot. An acquisition tries every slot in one statement, in an order the
// client shuffles each time (so that acquirers do not all fight over slot 0), and stops at the
// first it gets: the slot scan is a function scan under LIMIT 1, which the executor pulls one row
// at a time, so pg_try_advisory_lock runs on slots up to the first granted one and no further.
// Every process must pass the same `permits` for a name: one that passes more uses slots the
// others never try, and lets in that many holders.
//
// Waiting. The server cannot queue one session on "any of N locks", so a waiter sleeps until a
// release tells it to try again, with NOTIFY on the semaphore's channel (`channel`):
//
//   waiter                                     releaser
//   W1 LISTEN channel (committed)              R1 pg_advisory_unlock(slot)
//   W2 pg_advisory_lock_shared(waitKey)        R2 pg_try_advisory_xact_lock(waitKey) fails:
//   W3 try every slot; granted: done              someone waits, so R3
//   W4 sleep until a notification arrives,     R3 pg_notify(channel), sent when R's statement
//      or 500 ms pass; then W3                    commits
//   W5 (done, or gave up) unlock waitKey, UNLISTEN
//
// No lost wake-up: for every release R that W's W3 does not see (R1 after W3), R2 comes after
// W2, finds the shared lock and notifies; the notification is committed after R1, so after W3,
// and W1 was committed before W2: W is listening and the socket wakes W4 (or, if it arrived while
// W3 ran, it waits in libpq's list, which W4 reads before it sleeps). An uncontended release pays
// only R2 (no notification: NOTIFY needs a transaction ID, and so a commit record). A release by
// a session's death (a crashed holder, a partition) notifies nobody: W4's 500 ms timeout retries,
// which costs each waiter one round trip per 500 ms; the death itself takes up to 30 s to notice.
// Every waiter wakes at each release and tries; one wins (not FIFO: a waiter can be overtaken,
// as a dispatch_semaphore's waiters on Linux can).

/// The keys and statements of PostgresSemaphore (see the file comment).
enum _PostgresSemaphoreSQL {
    /// FNV-1a (64-bit) over `parts` joined with NUL bytes.
    static func hash(_ parts: [String]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (index, part) in parts.enumerated() {
            if index > 0 { hash = (hash ^ 0) &* 0x0000_0100_0000_01b3 }
            for byte in part.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
        }
        return hash
    }

    /// The advisory-lock keys of the semaphore's slots, one per permit.
    static func slotKeys(name: String, permits: Int) -> [Int64] {
        (0..<permits).map { Int64(bitPattern: hash(["interlock.semaphore", name, String($0)])) }
    }

    /// The key that waiters hold shared while they wait, so that a release notifies only when
    /// someone waits.
    static func waitKey(name: String) -> Int64 {
        Int64(bitPattern: hash(["interlock.semaphore.waiting", name]))
    }

    /// The semaphore's notification channel: an identifier of 36 characters (the limit is 63).
    static func channel(name: String) -> String {
        let digits = String(hash(["interlock.semaphore.channel", name]), radix: 16)
        return "interlock_semaphore_" + String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The slots as a bigint[] parameter, in the order to try them.
    static func slotArray(_ keys: [Int64]) -> String { "{" + keys.map(String.init).joined(separator: ",") + "}" }

    static let tryAcquire = "interlock_semaphore_try"
    static let release = "interlock_semaphore_release"

    /// The prepared statements (name, text, parameter count).
    ///
    /// `tryAcquire`: `$1` the slots (bigint[], in the order to try), `$2` the nonce. Returns
    /// `mine, counter, epoch, NULL, slot` as PostgresLock's tryLock returns its first four
    /// (a semaphore's tokens are not noted for `interlock.fence`, which speaks of one holder).
    ///
    /// `release`: `$1` the slot, `$2` the nonce, `$3` the channel, `$4` the wait key. Returns
    /// `mine, unlocked`; notifies the channel when a waiter holds the wait key (the subquery,
    /// OFFSET 0, runs first: the slot is free before the waiters are looked for).
    static let statements: [(name: String, sql: String, parameters: Int32)] = [
        (
            tryAcquire,
            """
            SELECT a.mine, a.counter, a.epoch, NULL::bigint, a.slot
            FROM (SELECT s.mine, s.slot,
                         CASE WHEN s.slot IS NOT NULL THEN nextval('interlock.fencing_counter') END AS counter,
                         (SELECT epoch FROM interlock.fencing_current) AS epoch
                  FROM (SELECT \(_PostgresLockSQL.mine("$2")) AS mine,
                               CASE WHEN \(_PostgresLockSQL.mine("$2"))
                                    THEN (SELECT k FROM unnest($1::bigint[]) AS k WHERE pg_try_advisory_lock(k) LIMIT 1)
                               END AS slot
                        OFFSET 0) AS s
                  OFFSET 0) AS a
            """, 2
        ),
        (
            release,
            """
            SELECT u.mine, u.unlocked,
                   CASE WHEN u.unlocked AND NOT pg_try_advisory_xact_lock($4::bigint) THEN pg_notify($3, '') END
            FROM (SELECT \(_PostgresLockSQL.mine("$2")) AS mine,
                         CASE WHEN \(_PostgresLockSQL.mine("$2")) THEN pg_advisory_unlock($1::bigint) END AS unlocked
                  OFFSET 0) AS u
            """, 4
        ),
    ]

    /// The session setting of a semaphore's session, once, after the claim: its commits need not
    /// wait for a WAL flush (a notifying release writes a commit record; nothing the session
    /// writes is logged data but the epoch, whose transaction forces synchronous_commit on).
    static let sessionSettings = "SET synchronous_commit = off"

    /// W1 and W2 (the file comment): LISTEN commits before the shared lock is taken, by
    /// running as a statement of its own first.
    static func beginWaiting(channel: String, waitKey: Int64) -> [String] {
        ["LISTEN \(channel)", "SELECT pg_advisory_lock_shared('\(waitKey)'::bigint)"]
    }

    /// W5: the waiter is no longer waiting.
    static func endWaiting(channel: String, waitKey: Int64) -> String {
        "SELECT pg_advisory_unlock_shared('\(waitKey)'::bigint); UNLISTEN \(channel)"
    }

    /// How long a waiter sleeps at most before it tries again without a notification (a
    /// permit freed by a session's death notifies nobody).
    static let recheckInterval = Duration.milliseconds(500)
}
