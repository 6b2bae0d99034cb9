// Misuse of Condition and ConditionLock traps with a message naming the primitive (and its
// name when set) and the mistake. Each case runs in a child process (a Swift Testing exit
// test) that must exit with a failure and print the message on standard error.

import Interlock
import Testing

@Suite("Condition and ConditionLock: misuse traps with a message")
struct ConditionTrapTests {
    @Test("Condition.wait() without holding the lock traps")
    func waitWithoutLock() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Condition().wait()
        }
        expectTrapMessage(
            result, contains: "Condition (unnamed)",
            "wait() called by a thread that does not hold the lock",
            "it is not locked")
    }

    @Test("Condition.wait(until:) without holding the lock traps, naming the condition")
    func waitUntilWithoutLock() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let condition = Condition()
            condition.name = "jobs"
            _ = condition.wait(until: .now + .seconds(1))
        }
        expectTrapMessage(
            result, contains: "Condition \"jobs\"",
            "wait(until:) called by a thread that does not hold the lock")
    }

    @Test("Condition.wait() while another thread holds the lock traps")
    func waitWhileOtherHolds() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let condition = Condition()
            condition.name = "shared"
            let locker = TestThread { condition.lock() }  // exits holding it
            locker.join()
            condition.wait()
        }
        expectTrapMessage(
            result, contains: "Condition \"shared\"",
            "wait() called by a thread that does not hold the lock",
            "another thread holds it")
    }

    @Test("Condition.unlock() of an unlocked condition traps")
    func unlockUnlocked() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let condition = Condition()
            condition.name = "queue"
            condition.unlock()
        }
        expectTrapMessage(
            result, contains: "Condition \"queue\"",
            "unlock() called by a thread that does not hold the lock",
            "it is not locked")
    }

    @Test("ConditionLock.unlock() of an unlocked lock traps")
    func conditionLockUnlockUnlocked() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            ConditionLock().unlock()
        }
        expectTrapMessage(
            result, contains: "ConditionLock (unnamed)",
            "unlock() called while it is not locked")
    }

    @Test("ConditionLock.unlock(withCondition:) of an unlocked lock traps, naming it")
    func conditionLockUnlockWithConditionUnlocked() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = ConditionLock(condition: 1)
            lock.name = "stage"
            lock.unlock(withCondition: 2)
        }
        expectTrapMessage(
            result, contains: "ConditionLock \"stage\"",
            "unlock(withCondition:) called while it is not locked")
    }
}
