// PostgresLock and privileges: a role that may not create the schema `interlock` gets
// permissionDenied (SQLSTATE 42501) at init; once an administrator ran PostgresLock.setupSQL and
// granted what PostgresLock's documentation lists, the same kind of role locks and unlocks.

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, privileges", .blocking)
struct PostgresLockPermissionTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    /// Creates a LOGIN role (no superuser, no CREATEDB) and a database it may connect to but not
    /// create schemas in. - Returns: a connection string for that role and database.
    func weakRole(_ role: String, database: String) throws -> String {
        try server.execute("CREATE ROLE \(role) LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        try server.execute("CREATE DATABASE \(database)")
        // PUBLIC has CONNECT and TEMPORARY on a new database, never CREATE.
        #expect(try server.execute("SELECT has_database_privilege('\(role)', '\(database)', 'CREATE')")[0][0] == "f")
        return server.connectionString
            .replacing("user=postgres", with: "user=\(role)")
            .replacing("dbname=postgres", with: "dbname=\(database)")
    }

    @Test("a role without CREATE on the database: init throws permissionDenied (42501), without its password")
    func withoutCreatePrivilege() throws {
        let connectionString = try weakRole("perm_no_create", database: "perm_no_create_db")
        let error = try #require(throws: PostgresLockError.self) {
            _ = try PostgresLock(connectionString: connectionString + " password=secret123", name: "perm-denied")
        }
        #expect(error.code == .permissionDenied)
        #expect(error.sqlState == "42501")
        #expect(error.operation == "init")
        #expect(error.lockName == "perm-denied")
        #expect(error.description.contains("(SQLSTATE 42501)"))
        #expect(!error.description.contains("secret123"))
        // Nothing was created.
        #expect(
            try server.execute(
                "SELECT count(*) FROM pg_namespace WHERE nspname = 'interlock'", database: "perm_no_create_db")[0][0]
                == "0")
    }

    @Test("setupSQL without the grants: still permissionDenied for the weak role")
    func setupWithoutGrants() throws {
        let connectionString = try weakRole("perm_no_grants", database: "perm_no_grants_db")
        try server.execute(PostgresLock.setupSQL, database: "perm_no_grants_db")
        let error = try #require(throws: PostgresLockError.self) {
            _ = try PostgresLock(connectionString: connectionString, name: "perm-no-grants")
        }
        #expect(error.code == .permissionDenied)
        #expect(error.sqlState == "42501")
    }

    @Test("after setupSQL and the documented grants, a role without CREATE locks and unlocks")
    func documentedGrantsAreSufficient() throws {
        let database = "perm_granted_db"
        let connectionString = try weakRole("perm_granted", database: database)
        try server.execute(PostgresLock.setupSQL, database: database)
        // Exactly the grants PostgresLock's documentation lists.
        try server.execute(
            """
            GRANT USAGE ON SCHEMA interlock TO perm_granted;
            GRANT SELECT, INSERT ON interlock.fencing_current TO perm_granted;
            GRANT SELECT, UPDATE ON interlock.fencing_epoch TO perm_granted;
            GRANT USAGE ON SEQUENCE interlock.fencing_counter TO perm_granted;
            """, database: database)
        #expect(try server.execute("SELECT count(*) FROM interlock.fencing_current", database: database)[0][0] == "0")

        // No epoch yet: the weak role's first session or acquisition starts it (UPDATE
        // fencing_epoch, INSERT fencing_current), and the acquisitions take nextval.
        let first = try PostgresLock(connectionString: connectionString, name: "perm-granted")
        let second = try PostgresLock(
            connectionString: connectionString.replacing("host=\(server.directory)", with: "host=127.0.0.1"),
            name: "perm-granted")
        #expect(try first.tryLock())
        let firstToken = try #require(first.fencingToken)
        #expect(try first.checkHeld())
        #expect(try !second.tryLock())
        #expect(try !second.lock(before: .now + .milliseconds(50)))
        let holder = try #require(try second.holderInfo())
        #expect(!holder.isThisObject)
        try first.unlock()
        #expect(try second.lock(before: .now + .seconds(5)))
        #expect(try #require(second.fencingToken) > firstToken)
        try second.unlock()
        #expect(try first.holderInfo() == nil)
        #expect(try server.execute("SELECT epoch FROM interlock.fencing_current", database: database).count == 1)

        // A superuser's lock of the same name in that database excludes the weak role's; what
        // the weak role may read of the superuser's session is its pid.
        let admin = try PostgresLock(
            connectionString: server.connectionString.replacing("dbname=postgres", with: "dbname=\(database)"),
            name: "perm-granted")
        #expect(try admin.tryLock())
        #expect(try !first.tryLock())
        let seen = try #require(try first.holderInfo())
        #expect(seen.backendProcessID == (try #require(try admin.holderInfo())).backendProcessID)
        #expect(!seen.isThisObject)
        #expect(seen.sessionStart == nil)  // hidden from a role that is not a member of postgres
        try admin.unlock()
        #expect(try first.tryLock())
        try first.unlock()
    }
}
