// Running a closure in the child of a plain fork() (no exec), for tests of what survives a fork:
// the child runs the closure on the one thread it has and _exits with the closure's status, so
// it never returns into the test runner; the parent waits for it with a time limit and kills it
// when the limit passes (a hang in the child fails the test instead of stalling the run).
//
// Swift Testing runs tests in parallel, so the process forks while other threads run: the
// child has only the forking thread, the situation a real program that forks is in. The child
// must not need any other thread: no Swift concurrency, no waiting on locks that threads of
// other tests might have held at the fork. Whatever generic types the child uses should have
// been used by the parent before the fork (their metadata is then built and cached).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a forked child ended.
enum ForkedChildEnd: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    /// Still running when the time limit passed; it was killed.
    case hung

    var description: String {
        switch self {
        case .exited(let status): return "exited with status \(status)"
        case .signaled(let signal): return "killed by signal \(signal)"
        case .hung: return "still running at the time limit (killed)"
        }
    }
}

/// A page shared between a parent and the children it forks afterwards (MAP_SHARED), where a
/// child leaves figures for the parent's failure messages.
final class SharedFigures: @unchecked Sendable {
    let figures: UnsafeMutablePointer<Int>
    static let count = 16

    init() {
        let page = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
        precondition(page != MAP_FAILED, "SharedFigures: mmap failed with errno \(errno)")
        figures = page!.bindMemory(to: Int.self, capacity: Self.count)
        figures.initialize(repeating: 0, count: Self.count)
    }

    deinit { munmap(figures, 4096) }

    subscript(index: Int) -> Int {
        get { figures[index] }
        set { figures[index] = newValue }
    }
}

/// Forks a child that runs `body` and _exits with its result; waits for the child at most
/// `limit` and returns how it ended. `afterFork` runs in the parent right after fork() returns
/// there, before the wait (to let threads the child must not need go on or stop).
func runInForkedChild(limit: Duration, afterFork: () -> Void = {}, _ body: () -> Int32) -> ForkedChildEnd {
    let pid = fork()
    if pid == 0 { _exit(body()) }
    precondition(pid > 0, "runInForkedChild: fork failed with errno \(errno)")
    afterFork()
    return waitForChild(pid, limit: limit)
}

/// Waits for child `pid` at most `limit` (polling every 10 ms: the time limit, not a
/// synchronization, is what the polling serves); kills and reaps it if it is still running.
func waitForChild(_ pid: pid_t, limit: Duration) -> ForkedChildEnd {
    let deadline = ContinuousClock.now + limit
    var status: Int32 = 0
    while true {
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid { break }
        precondition(reaped == 0, "waitForChild: waitpid failed with errno \(errno)")
        if ContinuousClock.now >= deadline {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            return .hung
        }
        var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
        nanosleep(&pause, nil)
    }
    // WIFEXITED / WTERMSIG, which Swift does not import (they are macros).
    let signal = status & 0x7f
    return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
}

/// Set in the environment of a process that `rerunTestsInNewProcess` started.
let rerunMarker = "INTERLOCK_TEST_RERUN"

/// Whether this process was started by `rerunTestsInNewProcess` (which must not start another).
var isRerun: Bool { getenv(rerunMarker) != nil }

/// Runs the tests matching `filter` in a new process of this test executable, with `extra`
/// appended to the environment variable `variable` (e.g. TSAN_OPTIONS); waits at most `limit`.
/// - Returns: how the process ended, and what it printed (standard output and error).
func rerunTestsInNewProcess(
    filter: String, appending extra: String, to variable: String,
    limit: Duration
) -> (end: ForkedChildEnd, output: String) {
    var template = Array("/tmp/interlock-rerun-XXXXXX".utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    precondition(descriptor >= 0, "rerunTestsInNewProcess: mkstemp failed with errno \(errno)")
    let outputPath = String(nulTerminated: template)
    defer { unlink(outputPath) }

    var fileActions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fileActions)
    defer { posix_spawn_file_actions_destroy(&fileActions) }
    posix_spawn_file_actions_adddup2(&fileActions, descriptor, 1)
    posix_spawn_file_actions_adddup2(&fileActions, descriptor, 2)

    let arguments = ["/proc/self/exe", "--testing-library", "swift-testing", "--filter", filter]
    var environment: [String] = []
    var previous = ""
    var entry = environ
    while let pointer = entry.pointee {
        let text = String(cString: pointer)
        if text.hasPrefix(variable + "=") {
            previous = String(text.dropFirst(variable.count + 1))
        } else {
            environment.append(text)
        }
        entry += 1
    }
    environment.append("\(variable)=\(previous.isEmpty ? extra : previous + " " + extra)")
    environment.append("\(rerunMarker)=1")

    func cStrings(_ strings: [String]) -> [UnsafeMutablePointer<CChar>?] { strings.map { strdup($0) } + [nil] }
    let argv = cStrings(arguments)
    let envp = cStrings(environment)
    defer { for pointer in argv + envp { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/proc/self/exe", &fileActions, nil, argv, envp)
    close(descriptor)
    precondition(spawned == 0, "rerunTestsInNewProcess: posix_spawn failed with error \(spawned)")
    let end = waitForChild(pid, limit: limit)

    var output = ""
    if let file = fopen(outputPath, "r") {
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, Int32(buffer.count), file) != nil { output += String(nulTerminated: buffer) }
        fclose(file)
    }
    return (end, output)
}
