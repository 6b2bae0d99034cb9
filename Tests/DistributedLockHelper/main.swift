// interlock-dlock-helper: the child process of DistributedLock's multi-process tests and of
// the stress workload. Each run does one job against one lock and exits.
//
//   interlock-dlock-helper [--umask OCTAL] [--uid N] [--link-errors sshfs] COMMAND ARGS...
//
//   --link-errors sshfs makes acquisition's link(2) report EEXIST as EPERM, as sshfs does.
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
//   count LOCK COUNTER ITERATIONS    ITERATIONS times: lock (polling 2 ms, 60 s limit, exit 4),
//                                    read COUNTER (a decimal count, 20 digits and a newline),
//                                    write it back plus one in place, fsync, close, unlock.
//                                    A counter that does not read back as that format (a
//                                    stale or torn read) fails (exit 5). The many-hosts test
//                                    (scripts/test-hosts.sh) runs it in several "hosts" at once.
//   hold-wait LOCK                   lock (polling 2 ms, 60 s limit, exit 4), print "held PID
//                                    HOST" on stdout, then for each line on stdin unlock: print
//                                    "unlocked" and exit 0, or "unlock failed: ERROR" and wait
//                                    for the next line to retry while the object still holds
//                                    the lock ("still held by this object" follows), else exit
//                                    1 (also at the end of stdin).
//   wait-lock LOCK SECONDS           lock(before:) polling 2 ms: print "acquired" (then unlock,
//                                    "unlocked" or "unlock failed: ERROR"), "timed out", or
//                                    "lock failed: ERROR" (exit 1), on stdout.
//   recipe LOCK                      print which recipe a lock at LOCK uses: "recipe: local
//                                    (O_TMPFILE)" or "recipe: portable (link(2) of a named file)".
//   try LOCK                         tryLock once: print "acquired" (then unlock, printing
//                                    "unlocked" or "unlock failed: ERROR"), "busy", or
//                                    "tryLock failed: ERROR" (exit 1), on stdout.
//   break-stalling LOCK OUT          breakLockIfStale(), stopping itself (SIGSTOP) at each of the
//                                    breaker's test points; writes "true" or "false" to OUT.
//   probe OP PATH OUT                run OP (init, tryLock, lockInfo, breakLock) on PATH and
//                                    write "ok" or the error's description to OUT.
//
// Exit status: 0 done, 1 a DistributedLock error (printed to stderr), 2 bad arguments, 3 the lock
// was held (crash, hold), 4 timed out waiting for the lock, 5 a counter that is not a count.

@_spi(Testing) import Interlock
import InterlockTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

func fail(_ message: String, _ status: Int32) -> Never { exitFailing("interlock-dlock-helper", message, status) }

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

/// Prints `line` on stdout with one write(2), so that a reading script sees it at once.
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = write(1, bytes, bytes.count)
}

/// The counter file's format: the count in 20 decimal digits and a newline. A fixed size, so
/// that a reader whose file system caches the file's size (FUSE, NFS attribute caches) still
/// reads the whole of a newer count, and anything else is a stale or torn read, reported.
/// Rewritten in place (pwrite, fsync, close), not as a new file renamed over it: the name keeps
/// its file, so a client whose caches still map the name to the old file (an NFS client: ESTALE)
/// reads the same file, and close-to-open consistency makes the write visible to the next
/// holder, who opens it after taking the lock.
let counterWidth = 20

func readCounter(_ path: String) -> Int {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 { fail("open \(path): \(String(cString: strerror(errno))) (errno \(errno))", 1) }
    var buffer = [UInt8](repeating: 0, count: 64)
    var count = 0
    while count < buffer.count {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
        if n > 0 {
            count += n
        } else if n == 0 {
            break
        } else if errno != EINTR {
            fail("read \(path): \(String(cString: strerror(errno))) (errno \(errno))", 1)
        }
    }
    if close(fd) != 0 { fail("close \(path): \(String(cString: strerror(errno))) (errno \(errno))", 1) }
    let text = String(decoding: buffer[..<count], as: UTF8.self)
    guard count == counterWidth + 1, text.last == "\n", let value = Int(text.dropLast()) else {
        fail("counter \(path) holds \(count) bytes \(String(reflecting: text)), not a count: a stale or torn read", 5)
    }
    return value
}

func writeCounter(_ path: String, _ value: Int) {
    let digits = String(value)
    let bytes = Array((String(repeating: "0", count: counterWidth - digits.count) + digits + "\n").utf8)
    let fd = open(path, O_WRONLY | O_CLOEXEC)
    if fd < 0 { fail("open \(path) for writing: \(String(cString: strerror(errno))) (errno \(errno))", 1) }
    // pwrite at 0 of the whole fixed-size record, fsync (the server has it), then close, which
    // reports a failed write-back too.
    if pwrite(fd, bytes, bytes.count, 0) != bytes.count {
        fail("write \(path): \(String(cString: strerror(errno))) (errno \(errno))", 1)
    }
    if fsync(fd) != 0 { fail("fsync \(path): \(String(cString: strerror(errno))) (errno \(errno))", 1) }
    if close(fd) != 0 { fail("close \(path): \(String(cString: strerror(errno))) (errno \(errno))", 1) }
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
    case "--link-errors":
        // sshfs: link(2) onto an existing name fails with EPERM (its SFTP server answers a
        // generic failure for EEXIST), which acquisition must still read as "held".
        guard arguments[1] == "sshfs" else { fail("--link-errors knows only sshfs", 2) }
        DistributedLock.linkTestHook = { $0 == EEXIST ? EPERM : $0 }
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
    case ("count", 3):
        let lock = try DistributedLock(path: rest[0])
        for _ in 0..<integer(rest[2]) {
            guard try lock.lock(before: .now + .seconds(60), pollInterval: .milliseconds(2)) else {
                fail("timed out after 60 s waiting for \(rest[0])", 4)
            }
            writeCounter(rest[1], readCounter(rest[1]) + 1)
            try lock.unlock()
        }
    case ("hold-wait", 1):
        let lock = try DistributedLock(path: rest[0])
        guard try lock.lock(before: .now + .seconds(60), pollInterval: .milliseconds(2)) else {
            fail("timed out after 60 s waiting for \(rest[0])", 4)
        }
        var name = [CChar](repeating: 0, count: 256)
        _ = gethostname(&name, name.count - 1)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        say("held \(getpid()) \(host)")
        /// Reads stdin up to a newline; false at its end.
        func line() -> Bool {
            var byte: UInt8 = 0
            while true {
                let n = read(0, &byte, 1)
                if n == 1 && byte == UInt8(ascii: "\n") { return true }
                if n == 0 || (n < 0 && errno != EINTR) { return false }
            }
        }
        while line() {
            do {
                try lock.unlock()
                say("unlocked")
                exit(0)
            } catch let error as DistributedLockError {
                say("unlock failed: \(error)")
                // tryLock answers false at once, touching nothing, while this object holds it.
                guard error.code != .lockLost, error.code != .notHeld, try !lock.tryLock() else { exit(1) }
                say("still held by this object")
            }
        }
        exit(1)
    case ("wait-lock", 2):
        do {
            let lock = try DistributedLock(path: rest[0])
            guard
                try lock.lock(before: .now + .seconds(Int64(integer(rest[1]))), pollInterval: .milliseconds(2))
            else {
                say("timed out")
                break
            }
            say("acquired")
            do {
                try lock.unlock()
                say("unlocked")
            } catch {
                say("unlock failed: \(error)")
                exit(1)
            }
        } catch {
            say("lock failed: \(error)")
            exit(1)
        }
    case ("recipe", 1):
        let lock = try DistributedLock(path: rest[0])
        say(lock.usesLocalFileSystemRecipe ? "recipe: local (O_TMPFILE)" : "recipe: portable (link(2) of a named file)")
    case ("try", 1):
        do {
            let lock = try DistributedLock(path: rest[0])
            guard try lock.tryLock() else {
                say("busy")
                break
            }
            say("acquired")
            do {
                try lock.unlock()
                say("unlocked")
            } catch {
                say("unlock failed: \(error)")
                exit(1)
            }
        } catch {
            say("tryLock failed: \(error)")
            exit(1)
        }
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
