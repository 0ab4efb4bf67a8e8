import NIOCore
import Synchronization

/// Frames shared by listeners at the same position: every listener of one query whose result
/// reflected commit `a` gets the same bytes for the step to commit `b`, so a commit fanned out
/// to a thousand listeners is encoded once, not a thousand times.
final class ListenFrameCache: Sendable {
    private struct State {
        var frames: [String: ByteBuffer] = [:]
        var order: [String] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int = 512) {
        self.capacity = capacity
    }

    /// The cached frame for `key`, or the one `make` builds (and caches).
    func frame(_ key: String, make: () -> ByteBuffer) -> ByteBuffer {
        if let hit = state.withLock({ $0.frames[key] }) { return hit }
        let frame = make()
        state.withLock { state in
            guard state.frames.updateValue(frame, forKey: key) == nil else { return }
            state.order.append(key)
            if state.order.count > capacity {
                let evicted = state.order.removeFirst()
                state.frames[evicted] = nil
            }
        }
        return frame
    }
}
