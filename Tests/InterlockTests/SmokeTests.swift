import Testing
import Interlock

@Test func smoke() {
    let a = AtomicInt32(5)
    #expect(a.increment() == 6)
}
