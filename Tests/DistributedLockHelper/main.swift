// interlock-dlock-helper: the child process of DistributedLock's multi-process tests and of
// the stress workload. Each run does one job against one lock and exits.
//
//   interlock-dlock-helper [--umask OCTAL] [--uid N] COMMAND ARGS...
//
//   steps LOCK LOG ROUNDS STEPS      ROUNDS times: lock (polling 1 ms, 60 s limit), append
//                                    STEPS lines "<pid> <round> <step>" to LOG, one write(2)
//                                    each with a yield between, unlock.
//   crash LOCK                       tryLock (exit 3 if held), then SIGKILL itself, holding.
//   recover LOCK LOG STEPS abandon|unlock
//                                    until it holds the lock: tryLock, else breakLockIfStale()
//                                    and sleep ~1 ms (60 s limit, exit 4). Append STEPS lines,
//                                    then exit holding the lock (abandon) or unlock first.
//   recover-rounds LOCK LOG STEPS ROUNDS
//                                    ROUNDS times, run "recover LOCK LOG STEPS abandon" as a
//                                    child of its own and reap it: one abandoned lock per round.
//   hold LOCK                        tryLock (exit 3 if held) and exit holding the lock.
//   noop                             exit 0 at once.
//   break-stalling LOCK OUT          breakLockIfStale(), stopping itself (SIGSTOP) at each of the
//                                    breaker's test points; writes "true" or "false" to OUT.
//   probe OP PATH OUT                run OP (init, tryLock, lockInfo, breakLock) on PATH and
//                                    write "ok" or the error's description to OUT.
//
// Exit status: 0 done, 1 a DistributedLock error (printed to stderr), 2 bad arguments.

@_spi(Testing) import Interlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

func fail(_ message: String, _ status: Int32) -> Never {
    let bytes = Array("interlock-dlock-helper: \(message)\n".utf8)
    _ = write(2, bytes, bytes.count)
    exit(status)
}

/// Appends one line to `log` with a single O_APPEND write.
func append(_ log: String, _ line: String) {
    let fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    if fd < 0 { fail("open \(log): errno \(errno)", 1) }
    let bytes = Array((line + "\n").utf8)
    if write(fd, bytes, bytes.count) != bytes.count { fail("write \(log): errno \(errno)", 1) }
    close(fd)
}

/// Appends `count` step lines for `round`, yielding between them so that a second holder, if
/// there were one, would interleave.
func writeSteps(_ log: String, round: Int, count: Int) {
    for step in 0..<count {
        append(log, "\(getpid()) \(round) \(step)")
        sched_yield()
        if step % 2 == 1 { usleep(200) }
    }
}

func integer(_ text: String) -> Int {
    guard let value = Int(text), value >= 0 else { fail("not a count: \(text)", 2) }
    return value
}

var arguments = Array(CommandLine.arguments.dropFirst())
while let option = arguments.first, option.hasPrefix("--") {
    guard arguments.count >= 2 else { fail("\(option) needs a value", 2) }
    switch option {
    case "--umask":
        guard let mask = mode_t(arguments[1], radix: 8) else { fail("bad umask \(arguments[1])", 2) }
        umask(mask)
    case "--uid":
        let id = UInt32(integer(arguments[1]))
        if setgroups(0, nil) != 0 || setgid(id) != 0 || setuid(id) != 0 {
            fail("cannot become uid \(id): errno \(errno)", 1)
        }
    default:
        fail("unknown option \(option)", 2)
    }
    arguments.removeFirst(2)
}
guard let command = arguments.first else { fail("no command", 2) }
let rest = Array(arguments.dropFirst())

do {
    switch (command, rest.count) {
    case ("steps", 4):
        let lock = try DistributedLock(path: rest[0])
        for round in 0..<integer(rest[2]) {
            guard try lock.lock(before: .now + .seconds(60), pollInterval: .milliseconds(1)) else {
                fail("timed out", 4)
            }
            writeSteps(rest[1], round: round, count: integer(rest[3]))
            try lock.unlock()
        }
    case ("crash", 1):
        let lock = try DistributedLock(path: rest[0])
        guard try lock.tryLock() else { fail("lock already held", 3) }
        kill(getpid(), SIGKILL)
    case ("recover", 4):
        let lock = try DistributedLock(path: rest[0])
        let deadline = ContinuousClock.now + .seconds(60)
        while try !lock.tryLock() {
            guard ContinuousClock.now < deadline else { fail("timed out", 4) }
            if try !lock.breakLockIfStale() { usleep(UInt32.random(in: 500...1500)) }
        }
        writeSteps(rest[1], round: 0, count: integer(rest[2]))
        if rest[3] == "unlock" { try lock.unlock() }
    case ("recover-rounds", 4):
        // ROUNDS times, a child of our own runs "recover LOCK LOG STEPS abandon" and is reaped
        // at once, so that its abandoned lock is stale (a zombie would still look alive).
        for _ in 0..<integer(rest[3]) {
            let me = "/proc/self/exe"
            let argv: [UnsafeMutablePointer<CChar>?] =
                [me, "recover", rest[0], rest[1], rest[2], "abandon"].map { (text: String) in strdup(text) } + [nil]
            var child = pid_t()
            let rc = posix_spawn(&child, me, nil, nil, argv, environ)
            for pointer in argv { free(pointer) }
            if rc != 0 { fail("posix_spawn: error \(rc)", 1) }
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            if status != 0 { fail("recover child ended with status \(status)", 1) }
        }
    case ("noop", 0):
        break
    case ("break-stalling", 2):
        DistributedLock.breakerTestHook = { _ in raise(SIGSTOP) }
        let lock = try DistributedLock(path: rest[0])
        let broke = try lock.breakLockIfStale()
        let fd = open(rest[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        if fd < 0 { fail("open \(rest[1]): errno \(errno)", 1) }
        let bytes = Array((broke ? "true" : "false").utf8)
        _ = write(fd, bytes, bytes.count)
        close(fd)
    case ("hold", 1):
        let lock = try DistributedLock(path: rest[0])
        guard try lock.tryLock() else { fail("lock already held", 3) }
    case ("probe", 3):
        var outcome = "ok"
        do {
            let lock = try DistributedLock(path: rest[1])
            switch rest[0] {
            case "init": break
            case "tryLock": outcome = try lock.tryLock() ? "ok" : "held"
            case "lockInfo": _ = try lock.lockInfo()
            case "breakLock": try lock.breakLock()
            default: fail("unknown probe \(rest[0])", 2)
            }
        } catch {
            outcome = "\(error)"
        }
        let fd = open(rest[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        if fd < 0 { fail("open \(rest[2]): errno \(errno)", 1) }
        let bytes = Array(outcome.utf8)
        _ = write(fd, bytes, bytes.count)
        close(fd)
    default:
        fail("unknown command or wrong argument count: \(arguments)", 2)
    }
} catch {
    fail("\(error)", 1)
}
exit(0)
