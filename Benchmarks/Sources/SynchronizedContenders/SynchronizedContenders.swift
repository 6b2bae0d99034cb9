// The contenders of the synchronized(object) benchmarks, shared by SynchronizedBenchmarks
// (package-benchmark) and Interleaved (interleaved rounds): package-visible, every hot member
// inlinable.

import Foundation
import Interlock

/// An object to synchronize on, with the plain counter its bodies increment (128-byte padded,
/// so that two threads' objects never share a line).
package final class Guarded: @unchecked Sendable {
    package init() {}
    package var count = 0
    var padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
}

/// synchronized(object) { body }, as each peer spells it.
package protocol SynchronizedContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func synchronized(_ object: AnyObject, _ body: () -> Void)
}

package final class InterlockSynchronized: SynchronizedContender, @unchecked Sendable {
    package init() {}
    package static var contenderName: String { "Interlock synchronized" }
    @inlinable @inline(__always) package func synchronized(_ object: AnyObject, _ body: () -> Void) {
        Interlock.synchronized(object, body)
    }
}

/// What a Linux user writes today: an NSRecursiveLock per object, in a dictionary keyed by
/// identity under one NSLock (entries are never removed, as in most hand-written versions).
package final class DictionaryOfRecursiveLocks: SynchronizedContender, @unchecked Sendable {
    package init() {}
    package static var contenderName: String { "NSRecursiveLock per object in a dictionary" }
    @usableFromInline let tableLock = NSLock()
    @usableFromInline var locks: [ObjectIdentifier: NSRecursiveLock] = [:]
    @inlinable @inline(__always) package func synchronized(_ object: AnyObject, _ body: () -> Void) {
        tableLock.lock()
        let lock: NSRecursiveLock
        if let found = locks[ObjectIdentifier(object)] {
            lock = found
        } else {
            lock = NSRecursiveLock()
            locks[ObjectIdentifier(object)] = lock
        }
        tableLock.unlock()
        lock.lock()
        body()
        lock.unlock()
    }
}

/// One NSRecursiveLock for every object.
package final class GlobalRecursiveLock: SynchronizedContender, @unchecked Sendable {
    package init() {}
    package static var contenderName: String { "one global NSRecursiveLock" }
    @usableFromInline let lock = NSRecursiveLock()
    @inlinable @inline(__always) package func synchronized(_ object: AnyObject, _ body: () -> Void) {
        lock.lock()
        body()
        lock.unlock()
    }
}
