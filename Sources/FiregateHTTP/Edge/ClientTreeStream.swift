import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird
import NIOCore
import ServiceLifecycle

/// A tree listener through a client as Server-Sent Events: one event per SDK event
/// (`event: child_added`, `id: n`, `data: {"key","value","previousChildKey"}`), `sync` for
/// `gates:sync`, `cancel` when the listen is revoked. `?events=child_added,value` picks the
/// types, as `observe(.childAdded)` does.
enum ClientTreeStream {
    /// `closed` runs when the stream ends, however it ends.
    static func open(_ tree: TreeSync, key: TreeViewKey, request: Request, ticker: KeepAliveTicker,
                     closed: @escaping @Sendable () async -> Void) async throws(FiregateError) -> Response {
        let kinds = try kinds(try QueryParameters(request).first("events"))
        let format: TreeFormat = try QueryParameters(request).first("format") == "export" ? .export : .plain
        let events = await tree.listen(key, kinds: kinds)
        var headers = ServerSentEvents.headers
        headers[TreeResponses.allowOrigin] = "*"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (ticks, tick) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let keepAlive = ticker.register { tick.yield() }
            defer {
                ticker.unregister(keepAlive)
                tick.finish()
            }
            defer { Task { await closed() } }
            await InboundClose.cancelling(request) {
                do {
                    try await withGracefulShutdownHandler {
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            let (merged, output) = AsyncStream.makeStream(of: ByteBuffer?.self)
                            group.addTask {
                                for await item in events { output.yield(frame(item, format: format)) }
                                output.yield(nil)
                            }
                            group.addTask {
                                for await _ in ticks { output.yield(ServerSentEvents.keepAlive) }
                            }
                            for await buffer in merged {
                                guard let buffer else { break }
                                try await writer.write(buffer)
                            }
                            group.cancelAll()
                        }
                    } onGracefulShutdown: {}
                    try await writer.finish(nil)
                } catch {
                    // The client went away.
                }
            }
        })
    }

    static func kinds(_ parameter: String?) throws(FiregateError) -> Set<TreeEvent.Kind> {
        guard let parameter, !parameter.isEmpty else { return Set(TreeEvent.Kind.allCases) }
        var kinds = Set<TreeEvent.Kind>()
        for name in parameter.split(separator: ",") {
            guard let kind = TreeEvent.Kind(rawValue: String(name.filter { $0 != " " })) else {
                throw .invalidArgument("Unknown event type \"\(name)\": use value, child_added, child_changed, child_removed or child_moved.")
            }
            kinds.insert(kind)
        }
        return kinds
    }

    static func frame(_ item: TreeListenerOutput, format: TreeFormat) -> ByteBuffer {
        switch item {
        case .events(let events, let firstID):
            var buffer = ByteBuffer()
            for (offset, event) in events.enumerated() {
                var frame = ServerSentEvents.frame(event: event.kind.rawValue, id: String(firstID + Int64(offset)), data: event.json(format: format))
                buffer.writeBuffer(&frame)
            }
            return buffer
        case .sync(let token):
            return ServerSentEvents.frame(event: "sync", json: ["token": .string(token)])
        case .cancel(let error):
            return ServerSentEvents.frame(event: "cancel", json: .string(error.message))
        }
    }
}
