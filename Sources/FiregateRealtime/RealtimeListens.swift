import FiregateBackend
import FiregateModel

/// One socket's listens, by location, query and format. Most sockets hold a few, and idle
/// sockets are many: up to `smallCount` live in an array searched in order (a dictionary's
/// first storage costs more than a socket's whole pipeline); past it, in a dictionary.
struct RealtimeListens {
    struct Listen {
        let generation: Int
        let tag: Int64?
        /// The query object as the client sent it, to name the listen if it is revoked.
        let query: JSON?
        var subscription: TreeStreamSubscription?
    }

    static let smallCount = 16
    private var small: [(key: TreeStreamKey, listen: Listen)] = []
    private var large: [TreeStreamKey: Listen]?

    var count: Int { large?.count ?? small.count }

    var subscriptions: [TreeStreamSubscription] {
        large.map { $0.values.compactMap(\.subscription) } ?? small.compactMap(\.listen.subscription)
    }

    subscript(key: TreeStreamKey) -> Listen? {
        get {
            if let large { return large[key] }
            return small.first { $0.key == key }?.listen
        }
        set {
            if large != nil {
                large![key] = newValue
                return
            }
            let index = small.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let i?, let listen?): small[i].listen = listen
            case (let i?, nil): small.remove(at: i)
            case (nil, let listen?):
                small.append((key, listen))
                if small.count > RealtimeListens.smallCount {
                    large = Dictionary(small, uniquingKeysWith: { _, last in last })
                    small = []
                }
            case (nil, nil): break
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: TreeStreamKey) -> Listen? {
        let listen = self[key]
        self[key] = nil
        return listen
    }

    mutating func removeAll() {
        small = []
        large = nil
    }
}
