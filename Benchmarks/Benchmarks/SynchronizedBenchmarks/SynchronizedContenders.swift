// The contenders of the synchronized(object) benchmarks.

import Foundation
import Interlock

/// An object to synchronize on, with the plain counter its bodies increment (128-byte padded,
/// so that two threads' objects never share a line).
final class Guarded: @unchecked Sendable {
    var count = 0
    var padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
    )
}

/// synchronized(object) { body }, as each peer spells it.
protocol SynchronizedContender: AnyObject, Sendable {
    static var contenderName: String { get }
    init()
    func synchronized(_ object: AnyObject, _ body: () -> Void)
}

final class InterlockSynchronized: SynchronizedContender, @unchecked Sendable {
    static var contenderName: String { "Interlock synchronized" }
    @inline(__always) func synchronized(_ object: AnyObject, _ body: () -> Void) {
        Interlock.synchronized(object, body)
    }
}

/// What a Linux user writes today: an NSRecursiveLock per object, in a dictionary keyed by
/// identity under one NSLock (entries are never removed, as in most hand-written versions).
final class DictionaryOfRecursiveLocks: SynchronizedContender, @unchecked Sendable {
    static var contenderName: String { "NSRecursiveLock per object in a dictionary" }
    let tableLock = NSLock()
    var locks: [ObjectIdentifier: NSRecursiveLock] = [:]
    @inline(__always) func synchronized(_ object: AnyObject, _ body: () -> Void) {
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
final class GlobalRecursiveLock: SynchronizedContender, @unchecked Sendable {
    static var contenderName: String { "one global NSRecursiveLock" }
    let lock = NSRecursiveLock()
    @inline(__always) func synchronized(_ object: AnyObject, _ body: () -> Void) {
        lock.lock()
        body()
        lock.unlock()
    }
}
