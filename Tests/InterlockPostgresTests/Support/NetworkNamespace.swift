// A network namespace as a second host for PostgresLock's partition test: a veth pair with one
// end in the namespace, addresses on a /30 of 10.232.0.0/16 of this run's own, nothing routed
// beyond it. Needs root and iproute2's `ip`; `NetworkNamespace.available` says whether this
// machine can make one. Only the server that the test itself started listens on the host's end.

import Testing

@testable import InterlockPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

final class NetworkNamespace: Sendable {
    /// The namespace's name (`ip netns`).
    let name: String
    /// The address of the host's end of the link (this process's namespace).
    let hostAddress: String
    /// The address of the namespace's end.
    let address: String
    private let inside: String
    private let removed = PGLocked(false)

    /// Whether namespaces can be made here: root, `ip`, and a namespace made and removed.
    static let available: Bool = {
        guard getuid() == 0 else { return false }
        let probe = "ilk-probe-\(getpid())"
        guard run(["ip", "netns", "add", probe]) == 0 else { return false }
        _ = run(["ip", "netns", "delete", probe])
        return true
    }()

    /// Makes the namespace and its link, up. `index` picks the /30 (0-16383) of this run.
    init(index: Int) throws {
        let tag = "\(getpid() % 100_000)"
        name = "ilk-pg-\(tag)-\(index)"
        let outside = "ilkh\(tag)x\(index)"
        inside = "ilkn\(tag)x\(index)"
        let subnet = (Int(getpid()) &* 7 &+ index) % 16384
        let prefix = "10.232.\(subnet / 64)"
        let last = subnet % 64 * 4
        hostAddress = "\(prefix).\(last + 1)"
        address = "\(prefix).\(last + 2)"
        _ = Self.run(["ip", "netns", "delete", name])  // a leftover of an earlier, killed run
        let steps: [[String]] = [
            ["ip", "netns", "add", name],
            ["ip", "link", "add", outside, "type", "veth", "peer", "name", inside],
            ["ip", "link", "set", inside, "netns", name],
            ["ip", "addr", "add", "\(hostAddress)/30", "dev", outside],
            ["ip", "link", "set", outside, "up"],
            ["ip", "netns", "exec", name, "ip", "addr", "add", "\(address)/30", "dev", inside],
            ["ip", "netns", "exec", name, "ip", "link", "set", inside, "up"],
            ["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"],
        ]
        for step in steps {
            let status = Self.run(step)
            if status != 0 {
                _ = Self.run(["ip", "link", "delete", outside])
                _ = Self.run(["ip", "netns", "delete", name])
                throw PostgresServerError(message: "\(step.joined(separator: " ")) failed (status \(status))")
            }
        }
    }

    /// Cuts the link on the namespace's side: whatever the host's side sends is lost, as when
    /// a host loses power or a network partitions; nothing is reset or refused.
    func cut() throws {
        let status = Self.run(["ip", "netns", "exec", name, "ip", "link", "set", inside, "down"])
        try #require(status == 0, "cutting \(name)'s link failed (status \(status))")
    }

    /// The command to run `arguments` inside the namespace.
    func command(_ arguments: [String]) -> [String] { ["ip", "netns", "exec", name] + arguments }

    /// Removes the namespace (and with it the link). Once.
    func remove() {
        guard
            removed.withLock({ done in
                defer { done = true }; return !done
            })
        else { return }
        _ = Self.run(["ip", "netns", "delete", name])
    }

    deinit { remove() }

    /// Runs a command found on PATH, its output discarded. - Returns: its exit status (-1 when
    /// it could not be run or was killed).
    @discardableResult
    static func run(_ arguments: [String]) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        guard posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -1
    }
}
