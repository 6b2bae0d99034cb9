import InterlockCompat
import Testing

@Suite("InterlockCompat")
struct InterlockCompatSmokeTests {
    @Test("the module re-exports Interlock")
    func reexportsInterlock() {
        let lock = Lock()
        lock.lock()
        #expect(!lock.tryLock())
        lock.unlock()
    }
}
