// The held-before graph of lock-order checking (LockOrderChecking.swift), as Linux's lockdep
// and Abseil's deadlock detection keep it, per lock instance.
//
// State:
//   per thread  the stack of locks it holds (ilk_lockorder.h: address and kind, at most 64)
//   global      nodes, one per lock that has been on an edge, keyed by the lock's address;
//               each has a serial number, a weak reference to its lock (an object used with
//               `synchronized` is not ours to hook: its node is dead when the reference is),
//               and its outgoing edges, keyed by the target's address, each with the target's
//               serial number and where the edge was first seen (thread and backtrace)
//   reported    the cycles already printed (their nodes' serial numbers, sorted)
//
// Algorithm: a blocking acquisition of B by a thread holding A1..An adds each missing edge
// Ai -> B; before adding one, it looks for a path B -> ... -> Ai (depth-first, over live
// edges): one found is a cycle, a potential deadlock, reported with every edge's first sighting.
// A thread taking a non-recursive lock it holds is reported before it blocks (it would hang).
//
// Invariants: (1) an edge is live iff its target's node has the serial number recorded in the
// edge: an address used again by a new lock gets a new node and a new serial, so no edge of
// the old lock reaches the new one (no false cycle through a reused address); (2) a lock's
// deinit removes its node and every edge into it (no growth); dead `synchronized` nodes are
// swept when the graph has doubled since the last sweep; (3) the graph is touched only under
// `guardWord`, a bare mutex word that no hook watches (the checker never checks itself); (4) a
// strong reference loaded from a node's weak one under `guardWord` is released only after it
// (`loadedObjects`): releasing the last reference to a lock runs its deinit, whose `forget`
// takes `guardWord`, and would wait for itself for ever.
//
// Costs when on: a global mutex per blocking acquisition while the thread holds a lock, plus a
// depth-first search per new edge; a debugging tool, measured in Benchmarks/README.md.

// Compiled only with the package trait LockOrderChecking: without it nothing refers to the graph,
// and clients do not carry its code.
#if INTERLOCK_LOCK_ORDER

import CInterlock

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The global held-before graph (see the file comment).
@usableFromInline
internal final class _LockOrderGraph: @unchecked Sendable {
    // Every mutable field is touched only while holding `guardWord` (invariant 3).
    @usableFromInline static let shared = _LockOrderGraph()

    private struct Edge {
        let targetSerial: UInt64
        let thread: UInt32
        let frames: [UnsafeMutableRawPointer?]
    }

    private final class Node {
        let serial: UInt64
        let kind: _LockOrderKind
        weak var object: AnyObject?
        var edges: [UnsafeRawPointer: Edge] = [:]
        init(serial: UInt64, kind: _LockOrderKind, object: AnyObject) {
            self.serial = serial
            self.kind = kind
            self.object = object
        }
    }

    private let guardWord: UnsafeMutablePointer<UInt32> = {
        let word = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        word.initialize(to: 0)
        return word
    }()
    private var nodes: [UnsafeRawPointer: Node] = [:]
    private var nextSerial: UInt64 = 1
    private var reported: Set<[UInt64]> = []
    private var sweepAt = 1024
    /// Objects loaded from nodes' weak references under `guardWord`, kept until it is released
    /// (invariant 4).
    private var loadedObjects: [AnyObject] = []

    // MARK: - The thread's held stack

    @usableFromInline
    static func address(_ lock: AnyObject) -> UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(lock).toOpaque())
    }

    /// The locks the calling thread holds, oldest first (the first 64).
    private static func held() -> [(address: UnsafeRawPointer, kind: _LockOrderKind)] {
        let state = ilk_lockorder_thread_held()!
        let count = Int(state.pointee.count)
        return withUnsafeBytes(of: &state.pointee.lock) { locks in
            withUnsafeBytes(of: &state.pointee.kind) { kinds in
                (0..<count).map { index in
                    (
                        locks.load(
                            fromByteOffset: index * MemoryLayout<UnsafeRawPointer>.stride, as: UnsafeRawPointer.self),
                        _LockOrderKind(rawValue: kinds[index]) ?? .lock
                    )
                }
            }
        }
    }

    @usableFromInline
    func didLock(_ lock: AnyObject, _ kind: _LockOrderKind) {
        let state = ilk_lockorder_thread_held()!
        let count = Int(state.pointee.count)
        guard count < Int(ILK_LOCKORDER_MAX_HELD) else {
            state.pointee.overflow += 1
            return
        }
        withUnsafeMutableBytes(of: &state.pointee.lock) { locks in
            locks.storeBytes(
                of: Self.address(lock), toByteOffset: count * MemoryLayout<UnsafeRawPointer>.stride,
                as: UnsafeRawPointer.self)
        }
        withUnsafeMutableBytes(of: &state.pointee.kind) { $0[count] = kind.rawValue }
        state.pointee.count += 1
    }

    @usableFromInline
    static func didUnlock(_ lock: AnyObject) {
        if !removeLatestHeld(address(lock)) {
            // Taken beyond the 64 checked ones (or before checking was on).
            let state = ilk_lockorder_thread_held()!
            if state.pointee.overflow > 0 { state.pointee.overflow -= 1 }
        }
    }

    /// Removes the latest entry of `target` from the calling thread's held stack. - Returns:
    /// whether there was one.
    private static func removeLatestHeld(_ target: UnsafeRawPointer) -> Bool {
        let state = ilk_lockorder_thread_held()!
        let count = Int(state.pointee.count)
        let stride = MemoryLayout<UnsafeRawPointer>.stride
        return withUnsafeMutableBytes(of: &state.pointee.lock) { locks in
            withUnsafeMutableBytes(of: &state.pointee.kind) { kinds in
                guard
                    let index = (0..<count).last(where: {
                        locks.load(fromByteOffset: $0 * stride, as: UnsafeRawPointer.self) == target
                    })
                else { return false }
                for next in index..<(count - 1) {
                    let moved = locks.load(fromByteOffset: (next + 1) * stride, as: UnsafeRawPointer.self)
                    locks.storeBytes(of: moved, toByteOffset: next * stride, as: UnsafeRawPointer.self)
                    kinds[next] = kinds[next + 1]
                }
                state.pointee.count -= 1
                return true
            }
        }
    }

    // MARK: - Acquisitions

    @usableFromInline
    func willLock(_ lock: AnyObject, _ kind: _LockOrderKind) {
        let target = Self.address(lock)
        let held = Self.held()
        if held.isEmpty { return }
        if !kind.isRecursive, held.contains(where: { $0.address == target }) {
            let message =
                "thread \(ilk_current_thread_id()) locks \(Self.describe(lock, kind, target)), which it already holds "
                + "(\(kind.typeName) is not recursive: this would hang)"
            report(message, sightings: [])
            return
        }
        var violations: [(summary: String, sightings: [Sighting])] = []
        var frames: [UnsafeMutableRawPointer?]? = nil
        let thread = ilk_current_thread_id()
        _MutexWord.lock(guardWord, for: .lock)
        let targetNode = node(for: lock, kind, at: target)
        var seen: Set<UnsafeRawPointer> = []
        for (address, heldKind) in held where address != target && seen.insert(address).inserted {
            let heldObject = Unmanaged<AnyObject>.fromOpaque(address).takeUnretainedValue()
            let heldNode = node(for: heldObject, heldKind, at: address)
            if let edge = heldNode.edges[target], edge.targetSerial == targetNode.serial { continue }
            if let path = path(from: target, to: heldNode.serial) {
                let key = ([heldNode.serial] + path.map { nodes[$0.from]!.serial }).sorted()
                if reported.insert(key).inserted {
                    violations.append(
                        (
                            cycleSummary(holding: address, heldKind, taking: lock, kind, path),
                            path.map { sighting($0.from, $0.edge) }
                        ))
                }
            }
            if frames == nil { frames = Self.backtrace() }
            heldNode.edges[target] = Edge(targetSerial: targetNode.serial, thread: thread, frames: frames!)
        }
        sweepIfGrown()
        let loaded = loadedObjects
        loadedObjects = []
        _ = _MutexWord.unlock(guardWord, for: .lock)
        withExtendedLifetime(loaded) {}  // released here, after guardWord (invariant 4)
        for violation in violations {
            report(violation.summary, sightings: violation.sightings, here: frames)
        }
    }

    /// A lock's deinit: it leaves the graph, and the calling thread's held stack if it is there.
    /// A lock freed while held is a misuse; left on the stack, its entry would be read as a live
    /// object by the thread's next acquisition (freed memory).
    @usableFromInline
    func forget(_ address: UnsafeRawPointer) {
        while Self.removeLatestHeld(address) {}
        _MutexWord.lock(guardWord, for: .lock)
        if nodes.removeValue(forKey: address) != nil {
            for node in nodes.values { node.edges.removeValue(forKey: address) }
        }
        _ = _MutexWord.unlock(guardWord, for: .lock)
    }

    // MARK: - The graph (under guardWord)

    /// The node's lock, or nil when it was deallocated; kept alive until `guardWord` is released
    /// (invariant 4).
    private func object(of node: Node) -> AnyObject? {
        guard let object = node.object else { return nil }
        loadedObjects.append(object)
        return object
    }

    /// The live node of `lock`, made anew when there is none or the address's node is dead.
    private func node(for lock: AnyObject, _ kind: _LockOrderKind, at address: UnsafeRawPointer) -> Node {
        if let node = nodes[address], object(of: node) === lock { return node }
        let node = Node(serial: nextSerial, kind: kind, object: lock)
        nextSerial += 1
        nodes[address] = node
        return node
    }

    /// A path of live edges from `start` to the node with serial `goal`, as (from, edge) steps.
    private func path(from start: UnsafeRawPointer, to goal: UInt64) -> [(from: UnsafeRawPointer, edge: Edge)]? {
        var visited: Set<UnsafeRawPointer> = [start]
        var stack: [(address: UnsafeRawPointer, steps: [(from: UnsafeRawPointer, edge: Edge)])] = [(start, [])]
        while let (address, steps) = stack.popLast() {
            guard let node = nodes[address] else { continue }
            for (next, edge) in node.edges {
                guard let target = nodes[next], target.serial == edge.targetSerial, object(of: target) != nil else {
                    continue
                }
                let walked = steps + [(address, edge)]
                if target.serial == goal { return walked }
                if visited.insert(next).inserted { stack.append((next, walked)) }
            }
        }
        return nil
    }

    /// Removes dead nodes (objects used with `synchronized` that were deallocated) and the edges
    /// into them, once the graph has doubled since the last sweep (invariant 2).
    private func sweepIfGrown() {
        guard nodes.count > sweepAt else { return }
        let dead = Set(nodes.filter { object(of: $0.value) == nil }.map(\.key))
        for address in dead { nodes.removeValue(forKey: address) }
        // One pass over the edges (not one lookup per node and dead address: quadratic).
        for node in nodes.values where !node.edges.isEmpty {
            node.edges = node.edges.filter { !dead.contains($0.key) }
        }
        sweepAt = max(1024, nodes.count * 2)
    }

    // MARK: - Reports

    private func cycleSummary(
        holding heldAddress: UnsafeRawPointer, _ heldKind: _LockOrderKind, taking lock: AnyObject,
        _ kind: _LockOrderKind, _ path: [(from: UnsafeRawPointer, edge: Edge)]
    ) -> String {
        let heldObject = Unmanaged<AnyObject>.fromOpaque(heldAddress).takeUnretainedValue()
        let taking = Self.describe(lock, kind, Self.address(lock))
        let holding = Self.describe(heldObject, heldKind, heldAddress)
        return "thread \(ilk_current_thread_id()) locks \(taking) while holding \(holding), "
            + "closing a cycle of \(path.count + 1) locks (a potential deadlock):\n"
            + "  \(holding) -> \(taking)   here"
    }

    /// An edge of a cycle as a report shows it: its line, and where it was first seen.
    private struct Sighting {
        let text: String
        let frames: [UnsafeMutableRawPointer?]
    }

    private func sighting(_ from: UnsafeRawPointer, _ edge: Edge) -> Sighting {
        let source = nodes[from].flatMap { node in object(of: node).map { Self.describe($0, node.kind, from) } }
        let target = nodes.first { $0.value.serial == edge.targetSerial }.flatMap { entry in
            object(of: entry.value).map { Self.describe($0, entry.value.kind, entry.key) }
        }
        return Sighting(
            text: "  \(source ?? "a lock") -> \(target ?? "a lock")   first seen on thread \(edge.thread):\n",
            frames: edge.frames)
    }

    /// Prints a violation with the backtrace of `here` and of each edge's first sighting, then
    /// traps when the mode is `trap`.
    private func report(_ summary: String, sightings: [Sighting], here: [UnsafeMutableRawPointer?]? = nil) {
        let mode = _LockOrder.mode
        Self.write(
            "Interlock lock-order violation (INTERLOCK_LOCK_ORDER=\(mode == .trap ? "trap" : "report")): \(summary)\n")
        Self.printFrames(here ?? Self.backtrace())
        for sighting in sightings {
            Self.write(sighting.text)
            Self.printFrames(sighting.frames)
        }
        Self.write(
            "  (function names in these backtraces: link with -Xlinker --export-dynamic, and pipe the report through swift demangle)\n"
        )
        if mode == .trap {
            // fatalError, not preconditionFailure: -O builds drop a precondition's message.
            fatalError("LockOrderChecking: lock-order violation: \(summary.prefix { $0 != "\n" })")
        }
    }

    private static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = Glibc.write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }

    private static func printFrames(_ frames: [UnsafeMutableRawPointer?]) {
        frames.withUnsafeBufferPointer { buffer in
            ilk_lockorder_print_frames(buffer.baseAddress, Int32(buffer.count), "      ")
        }
    }

    static func backtrace() -> [UnsafeMutableRawPointer?] {
        var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 32)
        let count = frames.withUnsafeMutableBufferPointer { Int(ilk_lockorder_backtrace($0.baseAddress, 32)) }
        return Array(frames.prefix(count))
    }

    /// `Lock "cache" (0x…)`, or `SpinLock at 0x…` for a lock without a name.
    static func describe(_ lock: AnyObject, _ kind: _LockOrderKind, _ address: UnsafeRawPointer) -> String {
        let name = (lock as? _NamedLock)?.name
        let hex = "0x" + String(UInt(bitPattern: address), radix: 16)
        if kind == .synchronized { return "synchronized(\(type(of: lock)) at \(hex))" }
        if let name { return "\(kind.typeName) \"\(name)\" (\(hex))" }
        return "\(kind.typeName) at \(hex)"
    }
}

#endif
