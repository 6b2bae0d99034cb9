// PostgresLock's errors at init: a connection string libpq cannot parse, a server that cannot
// be reached, an unknown database; and no error ever repeats the password of the connection
// string it failed with.

import Interlock
import InterlockPostgres
import Testing

@Suite("PostgresLock, errors", .blocking)
struct PostgresLockErrorTests {
    let server: PostgresServer
    init() throws { server = try PostgresServer.shared.get() }

    static let password = "secret123"

    /// The error that `PostgresLock.init` throws for `connectionString`.
    func initError(_ connectionString: String, name: String = "errors") throws -> PostgresLockError {
        try #require(throws: PostgresLockError.self) {
            _ = try PostgresLock(connectionString: connectionString, name: name)
        }
    }

    @Test(
        "a connection string libpq cannot parse: invalidConnectionString",
        arguments: [
            "host=localhost port",  // a keyword without "="
            "host=localhost no_such_option=1",  // an unknown keyword
            "host='localhost",  // an unterminated quote
            "postgresql://localhost/db?no_such_option=1",  // an unknown URI parameter
        ])
    func invalidConnectionString(connectionString: String) throws {
        let error = try initError(connectionString, name: "errors-invalid")
        #expect(error.code == .invalidConnectionString)
        #expect(error.operation == "init")
        #expect(error.lockName == "errors-invalid")
        #expect(error.serverMessage != nil)  // libpq's reason
        #expect(error.description.hasPrefix("PostgresLock.init \"errors-invalid\": "))
    }

    @Test("a closed port on 127.0.0.1: connectionFailed, naming the host and the port")
    func unreachableServer() throws {
        let port = try PGTest.closedPort()
        let clock = ContinuousClock()
        let start = clock.now
        let error = try initError("host=127.0.0.1 port=\(port) user=postgres dbname=postgres connect_timeout=2")
        #expect(clock.now - start < .seconds(10))
        #expect(error.code == .connectionFailed)
        #expect(error.operation == "init")
        #expect(error.description.contains("127.0.0.1"), "\(error)")
        #expect(error.description.contains("\(port)"), "\(error)")
    }

    @Test("an unknown database: connectionFailed with the server's reason")
    func unknownDatabase() throws {
        let error = try initError(
            server.connectionString.replacing("dbname=postgres", with: "dbname=errors_no_such_db"))
        #expect(error.code == .connectionFailed)
        #expect(error.description.contains("errors_no_such_db"), "\(error)")
    }

    // Regression: libpq quotes the URI it cannot parse (or its password, when that is the token
    // it cannot percent-decode), and the error carried libpq's words as they were.
    @Test(
        "no error description repeats the connection string's password",
        arguments: [
            // Unparsable key/value strings and URIs (libpq quotes a URI it cannot parse).
            "password=\(password) host",
            "password=\(password) no_such_option=1",
            "postgresql://app:\(password)@[::1/postgres",
            "postgresql://app:\(password)@localhost/postgres?bogus",
            "postgresql://app:\(password)%zz@localhost/postgres",
            "postgresql://app@localhost/postgres?password=\(password)%zz",
            "postgresql://app:\(password)@localhost:port/postgres",
        ])
    func passwordsNeverAppearInUnparsableStrings(connectionString: String) throws {
        let error = try initError(connectionString, name: "errors-password")
        #expect(error.code == .invalidConnectionString || error.code == .connectionFailed)
        #expect(!error.description.contains(Self.password), "\(error)")
        #expect(!(error.serverMessage ?? "").contains(Self.password))
        #expect(!error.message.contains(Self.password))
    }

    @Test("no error description repeats the password of a string that fails to connect")
    func passwordsNeverAppearInConnectionFailures() throws {
        let port = try PGTest.closedPort()
        let failing = [
            "host=127.0.0.1 port=\(port) user=postgres password=\(Self.password) connect_timeout=2",
            "postgresql://postgres:\(Self.password)@127.0.0.1:\(port)/postgres?connect_timeout=2",
            server.connectionString.replacing("dbname=postgres", with: "dbname=errors_none password=\(Self.password)"),
            "postgresql://postgres:\(Self.password)@127.0.0.1:\(server.port)/errors_none_uri",
        ]
        for connectionString in failing {
            let error = try initError(connectionString, name: "errors-password")
            #expect(error.code == .connectionFailed, "\(error)")
            #expect(!error.description.contains(Self.password), "\(error)")
        }
    }
}
