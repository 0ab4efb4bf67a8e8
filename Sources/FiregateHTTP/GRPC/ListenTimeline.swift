import FiregateBackend
import FiregateModel
import FiregateProto

/// What a Listen stream (gRPC or WebChannel) tells its client, as timeline steps
/// (docs/timeline.md): a target added or removed, and at each consistent snapshot (the global
/// NO_CHANGE the SDKs raise events on) the documents changed since the last one. The snapshot's
/// time is the server's as it is sent (its read time is in the stream, not repeated here).
struct ListenTimeline {
    let recorder: TimelineRecorder
    private var changes = 0
    private var changed: [TimelineChange] = []

    init(_ recorder: TimelineRecorder) {
        self.recorder = recorder
    }

    /// What a sequence of responses tells the timeline, worked out once: a commit's answer
    /// shared by many streams is told to each of their timelines (docs/webchannel.md, "Fan-out").
    struct Steps: Sendable {
        fileprivate enum Step: Sendable {
            case closed(String, reason: String?)
            /// What the step records when the changes noted since the last snapshot are those
            /// in these steps (the stream carried none in): worked out once for every stream.
            case snapshot(SharedSnapshot)
            case noted(TimelineChange)
        }

        fileprivate struct SharedSnapshot: Sendable {
            let changes: Int
            let fields: [(String, JSON)]
            let changed: [TimelineChange]
        }

        fileprivate var steps: [Step] = []

        init(_ responses: [ListenResponse]) {
            var changed: [TimelineChange] = []
            var changes = 0
            func note(_ kind: String, _ name: String) {
                let change = TimelineChange(kind, ListenTimeline.path(name))
                steps.append(.noted(change))
                changes += 1
                if changed.count < TimelineEvent.listedChanges { changed.append(change) }
            }
            for response in responses {
                switch response.responseType {
                case .targetChange(let change)?:
                    switch change.targetChangeType {
                    case .remove:
                        for id in change.targetIds { steps.append(.closed(String(id), reason: change.hasCause ? change.cause.message : nil)) }
                    case .noChange where change.targetIds.isEmpty:
                        let fields = TimelineRecorder.snapshotFields("stream", fromCache: false, hasPendingWrites: nil, documents: nil, changes: changes)
                        steps.append(.snapshot(SharedSnapshot(changes: changes, fields: fields, changed: changed)))
                        (changes, changed) = (0, [])
                    default: break
                    }
                case .documentChange(let change)?: note("changed", change.document.name)
                case .documentDelete(let delete)?: note("removed", delete.document)
                case .documentRemove(let remove)?: note("removed", remove.document)
                default: break
                }
            }
        }
    }

    mutating func observe(_ responses: [ListenResponse]) {
        observe(Steps(responses))
    }

    mutating func observe(_ steps: Steps) {
        for step in steps.steps {
            switch step {
            case .closed(let id, let reason): recorder.listenClosed(id, reason: reason)
            case .snapshot(let shared):
                // Nothing carried in from earlier responses: the shared record is this one.
                if changes == shared.changes {
                    recorder.recordSnapshot(fields: shared.fields, changed: shared.changed)
                } else {
                    recorder.snapshot("stream", fromCache: false, hasPendingWrites: nil, documents: nil, changes: changes, changed: changed)
                }
                changes = 0
                changed = []
            case .noted(let change):
                // Counted; the first ones are listed.
                changes += 1
                if changed.count < TimelineEvent.listedChanges { changed.append(change) }
            }
        }
    }

    /// `cities/SF` of `projects/p/databases/d/documents/cities/SF`.
    static func path(_ name: String) -> String {
        // A byte search over the name's own bytes: Foundation's `range(of:)` cost a fan-out more
        // than the rest of its step.
        var name = name
        name.makeContiguousUTF8()
        let marker: StaticString = "/documents/"
        let markerBytes = UnsafeBufferPointer(start: marker.utf8Start, count: marker.utf8CodeUnitCount)
        return name.utf8.withContiguousStorageIfAvailable { bytes -> String? in
            guard bytes.count >= markerBytes.count else { return nil }
            for start in 0...(bytes.count - markerBytes.count)
            where bytes[start] == markerBytes[0] && UnsafeBufferPointer(rebasing: bytes[start..<start + markerBytes.count]).elementsEqual(markerBytes) {
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[(start + markerBytes.count)...]), as: UTF8.self)
            }
            return nil
        }.flatMap { $0 } ?? name
    }
}
