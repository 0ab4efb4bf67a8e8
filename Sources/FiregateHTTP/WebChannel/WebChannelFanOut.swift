import FiregateModel
import FiregateWebChannel
import Synchronization

/// A commit's answer to the Listen sessions of one `ListenTargets.Shape` — a thousand pages on
/// one document are one shape — worked out by the first session the commit reaches and taken
/// by the others, which only move their targets on (docs/webchannel.md, "Fan-out").
final class WebChannelFanOut: Sendable {
    /// A commit (its sequence, and its time: a sequence alone could come again after a shared
    /// store's reset) and a shape.
    struct Key: Hashable, Sendable {
        let sequence: Int64
        let commitTime: Timestamp
        let shape: ListenTargets.Shape
    }

    struct Answer: Sendable {
        /// What the answer tells a stream's timeline.
        let steps: ListenTimeline.Steps
        let texts: [WebChannelMessage]
    }

    private let capacity: Int
    private let answers = Mutex<[Key: Answer]>([:])

    init(capacity: Int = 64) {
        self.capacity = capacity
    }

    /// The answer for `key`, and the shape it was stored with (for `ListenTargets.adopt`).
    func answer(_ key: Key) -> (answer: Answer, shape: ListenTargets.Shape)? {
        answers.withLock { answers in
            guard let index = answers.index(forKey: key) else { return nil }
            return (answers.values[index], answers.keys[index].shape)
        }
    }

    func store(_ key: Key, _ answer: Answer) {
        answers.withLock { answers in
            // Commits move on: old answers are of no more use, so all go at once.
            if answers.count >= capacity { answers.removeAll(keepingCapacity: true) }
            answers[key] = answer
        }
    }
}
