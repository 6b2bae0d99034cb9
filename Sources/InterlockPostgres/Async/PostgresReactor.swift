// The reactor of PostgresLock's async forms: one thread per process, started on first use, that
// waits in epoll for the sockets of libpq connections and resumes whoever waits for them.
//
// Why a reactor (and not a thread per waiting call): a task must never block a thread of the
// cooperative pool, and a server process may have thousands of tasks waiting for locks. libpq's
// asynchronous interface (PQsendQuery*, PQconsumeInput, PQisBusy, PQgetResult, PQflush on a
// connection in non-blocking mode) sends and reads without blocking; what is left is to wait for
// a socket to become readable or writable, which one epoll thread does for every connection at
// once. What libpq cannot do without blocking (opening a connection: name resolution and the
// start-up exchange; PQcancel, which opens a connection of its own) runs on a short-lived thread
// of its own (`offload`): once per session, or per cancellation.
//
// Registrations (state under `registrations`, a Mutex):
//
//   registered  kind          fires when the fd is           then
//   no          -             -                              ADD with EPOLLONESHOT
//   yes         continuation  readable / writable, or has    DEL, resume the task once
//                             an error or hang-up
//   yes         handler       readable, error or hang-up     DEL, call the handler once
//
// Invariants: (1) an fd is in the epoll set exactly while `registrations` holds an entry for it,
// and ADD, DEL and the entry's insertion and removal happen together under the mutex, so a
// registration never meets a stale one (EEXIST) and never outlives its entry; (2) each entry is
// removed exactly once, by the thread that fires it or by `cancel(fd:)`, so a continuation is
// resumed exactly once and a handler called at most once; (3) a connection's fd has at most one
// registration: the owner of the connection (the holder of its lock object's gate) waits on it,
// or the idle watcher does, never both (PostgresLock+Async.swift).
//
// Memory ordering: the mutex orders the map; epoll_ctl and epoll_wait are system calls, full
// barriers. A continuation's resume carries what the reactor thread saw to the task, and the
// task reads the connection only after it resumes.

import CLibPQ
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One epoll thread for every connection of the process (see the file comment).
final class _PGReactor: Sendable {
    /// The process's reactor; its thread starts with the first use.
    static let shared = _PGReactor()

    private enum Waiter {
        case task(UnsafeContinuation<Void, Never>, _PGResumption)
        case handler(@Sendable () -> Void)
    }

    private let epoll: Int32
    private let registrations = _PGProtected<[Int32: Waiter]>([:])

    private init() {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        if fd < 0 {
            fatalError("InterlockPostgres: epoll_create1 failed: \(String(cString: strerror(errno)))")
        }
        epoll = fd
        _PGThread.start { [self] in run() }
    }

    /// Suspends the calling task until `fd` is readable (or writable), or has an error or a
    /// hang-up; the caller then finds out which from libpq.
    func ready(_ fd: Int32, writable: Bool = false) async {
        await _PGResumption.suspend { continuation, resumption in
            let events = (writable ? EPOLLOUT.rawValue : EPOLLIN.rawValue | EPOLLRDHUP.rawValue)
            if !register(fd, events: events, .task(continuation, resumption)) {
                // Not watchable (closed under us): let the caller ask libpq, which fails.
                resumption.resume(continuation)
            }
        }
    }

    /// Calls `handler` once on the reactor's thread when `fd` becomes readable or fails, unless
    /// `cancel(fd:)` comes first. - Returns: false when `fd` cannot be watched.
    @discardableResult
    func watch(_ fd: Int32, _ handler: @escaping @Sendable () -> Void) -> Bool {
        register(fd, events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue, .handler(handler))
    }

    /// Removes `fd`'s handler registration, if it has one that has not fired. Call before the fd
    /// is closed. - Returns: whether a registration was removed.
    @discardableResult
    func cancel(fd: Int32) -> Bool {
        registrations.withLock { map in
            guard case .handler = map[fd] else { return false }
            map[fd] = nil
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
            return true
        }
    }

    private func register(_ fd: Int32, events: UInt32, _ waiter: Waiter) -> Bool {
        registrations.withLock { map in
            precondition(map[fd] == nil, "InterlockPostgres: internal error, fd \(fd) registered twice")
            var event = epoll_event()
            event.events = events | EPOLLONESHOT.rawValue
            event.data.fd = fd
            guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else { return false }
            map[fd] = waiter
            return true
        }
    }

    private func run() -> Never {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, 64, -1) }
            if count < 0 {
                if errno == EINTR { continue }
                fatalError("InterlockPostgres: epoll_wait failed: \(String(cString: strerror(errno)))")
            }
            for index in 0..<Int(count) {
                let fd = events[index].data.fd
                let waiter = registrations.withLock { map -> Waiter? in
                    guard let waiter = map.removeValue(forKey: fd) else { return nil }
                    _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
                    return waiter
                }
                switch waiter {
                case .task(let continuation, let resumption): resumption.resume(continuation)
                case .handler(let handler): handler()
                case nil: break  // cancelled just before it fired
                }
            }
        }
    }

    /// Runs `work` on a thread of its own and returns its result: for libpq calls that block
    /// (opening a connection, PQcancel), so that no thread of the cooperative pool waits in them.
    ///
    /// The result travels in a Mutex, not in the continuation: the thread's unlock and the
    /// task's lock after it resumes are an edge that ThreadSanitizer sees (it does not always
    /// see the one through the concurrency runtime's enqueue of the task), and they order
    /// whatever `work` wrote (the session it opened) before the task reads it.
    static func offload<R: Sendable>(_ work: @escaping @Sendable () -> R) async -> R {
        let outcome = _PGOutcome<R>()
        await _PGResumption.suspend { continuation, resumption in
            _PGThread.start {
                let result = work()
                outcome.value.withLock { $0 = result }
                resumption.resume(continuation)
            }
        }
        guard let result = outcome.value.withLock({ $0 }) else {
            fatalError("InterlockPostgres: internal error, offloaded work resumed without a result")
        }
        return result
    }
}

/// The result of offloaded work, handed from its thread to the task under a Mutex.
final class _PGOutcome<R: Sendable>: Sendable {
    let value = _PGProtected<R?>(nil)
}

/// A detached POSIX thread running a closure (the core library has no thread type to lend).
enum _PGThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    static func start(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Body(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, &attributes,
            { raw in
                Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, box)
        if rc != 0 {
            fatalError("InterlockPostgres: pthread_create failed: \(String(cString: strerror(rc)))")
        }
    }
}
