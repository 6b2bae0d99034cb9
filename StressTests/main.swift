import Interlock
@inline(never) func inc(_ a: AtomicInt64) -> Int64 { a.increment() }
@inline(never) func casloop(_ a: AtomicInt64) { var v = a.load(ordering: .relaxed); while true { let r = a.compareExchange(expected: v, desired: v &+ 1); if r.exchanged { break }; v = r.original } }
@inline(never) func ld(_ a: AtomicInt32) -> Int32 { a.load(ordering: .acquire) }
@inline(never) func tas(_ a: AtomicUInt32) -> Bool { a.testAndSet(bit: 3) }
let a = AtomicInt64(1)
print(inc(a)); casloop(a); print(ld(AtomicInt32(3)), tas(AtomicUInt32(0)))
