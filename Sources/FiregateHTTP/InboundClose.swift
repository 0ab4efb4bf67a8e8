import Hummingbird

/// Ends a long response as soon as its client hangs up, instead of at the next write.
enum InboundClose {
    /// Runs `operation`, cancelling it when the client closes its side of the connection.
    /// Only for GET: the request body must not have been read before (Hummingbird's rule).
    static func cancelling(_ request: Request, _ operation: () async -> Void) async {
        guard request.method == .get else {
            await operation()
            return
        }
        _ = try? await request.body.consumeWithCancellationOnInboundClose { _ in
            await operation()
        }
    }
}
