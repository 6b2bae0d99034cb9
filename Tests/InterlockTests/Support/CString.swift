// Text that C wrote into a buffer of the tests (fgets, mkstemp's template).

extension String {
    /// The UTF-8 text of `buffer` up to its first NUL (all of it when it has none).
    init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
