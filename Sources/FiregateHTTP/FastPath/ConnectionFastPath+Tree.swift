import FiregateBackend
import FiregateModel
import HTTPTypes
import NIOCore

/// The fast path's tree answers: a location read off the event loop when it is not cached, and
/// a bare event stream, subscribed off the loop, then served on it.
extension ConnectionFastPath {
    /// If the namespace refuses the stream, the request goes the full way, which answers the refusal.
    func subscribeTree(_ namespace: String, _ location: TreePath, identity: CallIdentity, length: Int, path: String,
                       started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let tree = backend.tree
        whileInputWaits(context) {
            try? await tree.subscribe(namespace: namespace, key: TreeStreamKey(path: location, query: nil, format: .plain), identity: identity)
        } then: { handler, context, subscription in
            handler.treeSubscribed(subscription, length: length, path: path, started: started, context: context)
        }
    }

    private func treeSubscribed(_ subscription: TreeStreamSubscription?, length: Int, path: String,
                                started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        machine.answerReady()
        guard context.channel.isActive else {
            if let subscription { TreeStreamSource(subscription, tree: backend.tree).stop() }
            return
        }
        if let subscription, var buffer = unread {
            buffer.moveReaderIndex(forwardBy: length)
            unread = buffer.readableBytes > 0 ? buffer : nil
            listen(TreeStreamSource(subscription, tree: backend.tree), path: path, started: started, context: context)
        } else if handOver(context: context) {
            // The full path answers it (and everything after it) from here on.
            context.fireChannelReadComplete()
        }
        answered(context: context, goOn: false)
    }

    /// A location not in the cache: read from its namespace, then answered; the input that came
    /// meanwhile goes on after it.
    func readTree(_ namespace: String, _ location: TreePath, gzipAccepted: Bool, path: String,
                  started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let tree = backend.tree
        whileInputWaits(context) { () -> (Answer, Bool) in
            var answer: Answer
            do {
                let bytes = try await tree.readEncoded(namespace: namespace, path: location)
                answer = Answer(status: .ok, body: bytes, surface: .tree)
            } catch {
                let failure = ErrorResponse.normalize(error)
                answer = Answer(status: HTTPResponse.Status(code: failure.httpStatus),
                                body: JSONWriter.bytes(["error": .string(failure.message)], style: .pretty), surface: .tree)
            }
            // Compressed here, not on the event loop.
            let gzipped = gzipAccepted && answer.body.count >= FiregateResponder.gzipThreshold
            if gzipped { answer.body = Gzip.compress(answer.body) }
            return (answer, gzipped)
        } then: { handler, context, answered in
            handler.finishAnswering(answered.0, gzipped: answered.1, path: path, started: started, context: context)
        }
    }
}
