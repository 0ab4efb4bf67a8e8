/// The states of a client's writes by id, answering `GET …/pendingWrites/{id}` and
/// `?waitFor=ack`: every write still pending, and the last `capacity` settled ones — so a
/// long-running busy client's memory stays bounded.
struct WriteOutcomes<State> {
    /// How many settled outcomes are kept per client.
    static var capacity: Int { 1000 }

    private var states: [Int64: State] = [:]
    /// Settled ids, oldest first, from `head` on.
    private var settled: [Int64] = []
    private var head = 0

    subscript(id: Int64) -> State? { states[id] }

    /// A write was queued (or restored as queued).
    mutating func pending(_ id: Int64, _ state: State) {
        states[id] = state
    }

    /// A write was acknowledged or rejected: its state stays until `capacity` later writes have
    /// settled.
    mutating func settle(_ id: Int64, _ state: State) {
        states[id] = state
        settled.append(id)
        if settled.count - head > Self.capacity {
            states[settled[head]] = nil
            head += 1
            if head > Self.capacity {
                settled.removeFirst(head)
                head = 0
            }
        }
    }

    /// A write that never happened (it could not be saved).
    mutating func forget(_ id: Int64) {
        states[id] = nil
    }
}
