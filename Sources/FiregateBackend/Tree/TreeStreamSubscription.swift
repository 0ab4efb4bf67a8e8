import DequeModule
import FiregateModel
import Synchronization

/// One open stream: the frames waiting to be sent to its client, bounded in bytes.
///
/// A reader too slow to keep up never grows memory past the bound: when a frame does not fit,
/// everything queued is dropped and replaced by one `put` of the location's full current
/// value (a resync), after which events continue from there.
public final class TreeStreamSubscription: Sendable {
    private struct State {
        var frames: Deque<TreeStreamFrame> = []
        var bytes = 0
        var waiter: CheckedContinuation<TreeStreamFrame?, Never>?
        var finished = false
        var resyncs = 0
        /// A polling reader's wake-up, armed when its last poll found nothing.
        var waker: (@Sendable () -> Void)?

        /// The armed wake-up, disarmed: called once there is something to read.
        mutating func takeWaker() -> (@Sendable () -> Void)? {
            defer { waker = nil }
            return waker
        }
    }

    public let namespace: String
    public let key: TreeStreamKey
    /// Most bytes of frames kept for this stream while its client is not reading.
    public let maxBufferedBytes: Int
    /// For subscribers inside the server: frames go straight to this function, in the order the
    /// namespace produced them, instead of being queued for `next()`.
    let forward: (@Sendable (TreeStreamFrame) -> Void)?
    /// The namespace's write sequence when the stream started: the first frame already holds
    /// every write up to it, so their deferred events are not sent again.
    let startSequence: Mutex<Int64> = Mutex(0)
    /// Who reads: the stream is judged again with it when the rules change.
    public let identity: CallIdentity
    private let state = Mutex(State())

    init(namespace: String, key: TreeStreamKey, maxBufferedBytes: Int, identity: CallIdentity = .unauthenticated,
         forward: (@Sendable (TreeStreamFrame) -> Void)? = nil) {
        self.namespace = namespace
        self.identity = identity
        self.key = key
        self.maxBufferedBytes = maxBufferedBytes
        self.forward = forward
    }

    /// Queues `frame`; false (and nothing queued) when it would pass the bound.
    func offer(_ frame: TreeStreamFrame) -> Bool {
        if let forward {
            if !isFinished { forward(frame) }
            return true
        }
        var accepted = true
        var wake: (@Sendable () -> Void)?
        let waiter = state.withLock { state -> CheckedContinuation<TreeStreamFrame?, Never>? in
            if state.finished { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if !state.frames.isEmpty, state.bytes + frame.bytes.count > maxBufferedBytes {
                accepted = false
                return nil
            }
            state.frames.append(frame)
            state.bytes += frame.bytes.count
            wake = state.takeWaker()
            return nil
        }
        waiter?.resume(returning: frame)
        wake?()
        return accepted
    }

    /// Drops everything queued and queues `snapshot` (a full `put` at `/`) in its place.
    func resync(with snapshot: TreeStreamFrame) {
        var wake: (@Sendable () -> Void)?
        let waiter = state.withLock { state -> CheckedContinuation<TreeStreamFrame?, Never>? in
            if state.finished { return nil }
            state.resyncs += 1
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.frames = [snapshot]
            state.bytes = snapshot.bytes.count
            wake = state.takeWaker()
            return nil
        }
        waiter?.resume(returning: snapshot)
        wake?()
    }

    /// Ends the stream after what is queued, plus `last` (a `cancel`) if given; a subscriber
    /// inside the server gets `last` forwarded.
    public func finish(after last: TreeStreamFrame? = nil) {
        if let forward {
            let first = state.withLock { state -> Bool in
                defer { state.finished = true }
                return !state.finished
            }
            if first, let last { forward(last) }
            return
        }
        var wake: (@Sendable () -> Void)?
        let waiter = state.withLock { state -> CheckedContinuation<TreeStreamFrame?, Never>? in
            if state.finished { return nil }
            state.finished = true
            wake = state.takeWaker()
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if let last {
                state.frames.append(last)
                state.bytes += last.bytes.count
            }
            return nil
        }
        waiter?.resume(returning: last)
        wake?()
    }

    /// For a reader that is not a task (a stream served on its connection's event loop): the
    /// queued frames, or none after arming `wake` (called once, from the writing thread, when a
    /// frame comes or the stream ends); `finished` once it ended and nothing is left.
    public func poll(orWake wake: @escaping @Sendable () -> Void) -> (frames: [TreeStreamFrame], finished: Bool) {
        state.withLock { state in
            if !state.frames.isEmpty {
                let frames = Array(state.frames)
                state.frames.removeAll()
                state.bytes = 0
                return (frames, false)
            }
            if state.finished { return ([], true) }
            state.waker = wake
            return ([], false)
        }
    }

    /// The next frame to send, waiting for one; nil once the stream has ended.
    public func next() async -> TreeStreamFrame? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<TreeStreamFrame?, Never>) in
                let ready = state.withLock { state -> TreeStreamFrame?? in
                    if let frame = state.frames.popFirst() {
                        state.bytes -= frame.bytes.count
                        return .some(frame)
                    }
                    if state.finished { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Frames already queued, taken without waiting (so a writer can send them together).
    public func takeQueued() -> [TreeStreamFrame] {
        state.withLock { state in
            guard !state.frames.isEmpty else { return [] }
            let frames = Array(state.frames)
            state.frames.removeAll()
            state.bytes = 0
            return frames
        }
    }

    /// How many times this stream was resynced because its reader fell behind.
    public var resyncCount: Int { state.withLock { $0.resyncs } }

    /// Bytes queued and not yet taken by the reader.
    public var bufferedBytes: Int { state.withLock { $0.bytes } }

    public var isFinished: Bool { state.withLock { $0.finished } }
}

extension TreeStreamSubscription: AsyncSequence {
    public typealias Element = TreeStreamFrame

    /// Iterates the frames until the stream ends.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: TreeStreamSubscription

        public mutating func next() async -> TreeStreamFrame? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: self) }
}

/// What streams share work by: the location, the query (nil for the whole location) and the
/// output format.
public struct TreeStreamKey: Sendable, Hashable {
    public let path: TreePath
    public let query: TreeQuery?
    public let format: TreeFormat

    public init(path: TreePath, query: TreeQuery?, format: TreeFormat) {
        self.path = path
        self.query = query?.filters == true ? query : nil
        self.format = format
    }
}
