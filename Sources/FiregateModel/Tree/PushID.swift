/// Generates push ids as the Realtime Database does: 20 characters of the alphabet
/// `-0-9A-Z_a-z` (in ASCII order), 8 encoding the time in ms (most significant first) and 12
/// random. Within one millisecond — or if the clock steps back — the random part of the
/// previous id is incremented, so ids are strictly increasing in creation order.
public struct PushIDGenerator: Sendable {
    public static let alphabet: [UInt8] = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    private var lastTime: Int64 = -1
    private var lastRandom = [Int](repeating: 0, count: 12)

    public init() {}

    public mutating func next(nowMillis: Int64) -> String {
        var time = nowMillis
        if time <= lastTime {
            time = lastTime
            var i = 11
            while i >= 0, lastRandom[i] == 63 {
                lastRandom[i] = 0
                i -= 1
            }
            if i >= 0 {
                lastRandom[i] += 1
            } else {
                time += 1  // all 72 random bits used up in this ms: move to the next ms
            }
        } else {
            var rng = SystemRandomNumberGenerator()
            for i in 0..<12 { lastRandom[i] = Int(rng.next() % 64) }
        }
        lastTime = time
        var chars = [UInt8](repeating: 0, count: 20)
        var t = time
        for i in stride(from: 7, through: 0, by: -1) {
            chars[i] = PushIDGenerator.alphabet[Int(t % 64)]
            t /= 64
        }
        for i in 0..<12 { chars[8 + i] = PushIDGenerator.alphabet[lastRandom[i]] }
        return String(decoding: chars, as: UTF8.self)
    }

    /// The creation time in ms encoded in a push id, or nil if `id` is not one.
    public static func timestamp(of id: String) -> Int64? {
        let bytes = Array(id.utf8)
        guard bytes.count == 20 else { return nil }
        var t: Int64 = 0
        for byte in bytes.prefix(8) {
            guard let index = alphabet.firstIndex(of: byte) else { return nil }
            t = t * 64 + Int64(index)
        }
        return t
    }
}
