// Semaphore's contended waits as contention profiling records them (ContentionRecorder.swift):
// as the semaphore's own, or, for the semaphores inside a BoundedChannel, as the channel's
// send or receive waits, keyed by the channel. Builds with the package trait
// ContentionProfiling only.
//
// `contentionOwner` (in _SemaphoreState, in place of one padding word): 0 for a plain
// semaphore; else the channel's address with bit 0 set for a sender's wait (spaces, acks) and
// clear for a receiver's (items). Written by the channel's init before the semaphore is shared;
// the address is never dereferenced (an identity in reports).
#if INTERLOCK_CONTENTION
import CInterlock

extension Semaphore {
    internal var _contentionOwner: UnsafeMutablePointer<UInt> { _field(\.contentionOwner, as: UInt.self) }

    /// Marks this semaphore as one of `channel`'s (BoundedChannel.init).
    internal func _serveChannel(_ channel: UnsafeRawPointer, sending: Bool) {
        _contentionOwner.pointee = UInt(bitPattern: channel) | (sending ? 1 : 0)
    }

    /// Records a contended wait that took a unit, as the semaphore's or its channel's.
    internal func _recordWait(_ probe: Int64, async: Bool) {
        let owner = _contentionOwner.pointee
        guard owner != 0, let channel = UnsafeRawPointer(bitPattern: owner & ~1) else {
            _Contention.end(probe, async ? .semaphoreAsync : .semaphore, self)
            return
        }
        let sending = owner & 1 != 0
        let kind: _ContentionKind =
            sending ? (async ? .channelSendAsync : .channelSend) : (async ? .channelReceiveAsync : .channelReceive)
        _Contention.end(probe, kind, address: channel, label: nil)
    }
}
#endif
