import FiregateBackend
import FiregateModel
import FiregateWebChannel

/// Which fast-path answer a simple request gets, from its method, target and query alone (see
/// `FastRouter.route`); `.fullPath` for everything the fast path leaves to the full HTTP/1.1 path.
enum FastRoute: Equatable {
    /// A bare GET of a document: its cached encoding, or the 404 error body.
    case documentGet(DocumentRequestPath)
    /// A `:commit` (whether its writes apply is decided on its body).
    case commit(DocumentRequestPath)
    /// A bare `:listen` of one document: an event stream on the event loop.
    case documentStream(DocumentRequestPath)
    /// A bare tree event stream (`Accept: text/event-stream`, no query but `ns=`).
    case treeStream(namespace: String, path: TreePath)
    /// A bare tree GET (no query but `ns=`).
    case treeRead(namespace: String, path: TreePath)
    /// A WebChannel session's streaming back channel (`TYPE=xmlhttp`, `CI=0`).
    case webChannelBackChannel(session: String, acknowledged: Int)
    case fullPath

    /// Whether it answers a page's request (`Origin`) as the full path would, CORS headers
    /// included; a page's other requests take the full path.
    var answersPages: Bool {
        if case .webChannelBackChannel = self { true } else { false }
    }
}

/// The fast path's routing: a pure function of the request line and the few flags that change
/// it. It remembers the last targets it parsed, since a connection's clients repeat theirs;
/// that never changes an answer.
struct FastRouter {
    /// The namespace of a tree request without `ns=`.
    let defaultNamespace: String
    /// The last targets parsed, out of line, so a connection that streams and forgets them keeps
    /// one empty reference (idle streams are many).
    private final class Memo {
        var document: (raw: String, parsed: DocumentRequestPath)?
        var tree: (raw: String, query: String?, namespace: String, path: TreePath)?
    }
    private var memo: Memo?

    init(defaultNamespace: String) {
        self.defaultNamespace = defaultNamespace
    }

    /// Forgets the remembered targets (a connection that streams from now on keeps none).
    mutating func forget() { memo = nil }

    /// `documentsLoaded`: until the start's load ends, document requests wait on the full path.
    /// `rulesActive`: while rules are loaded, streams and tree reads take the full path, which
    /// judges them; document GETs and commits are judged on the fast path.
    mutating func route(_ method: SimpleRequest.Method, target: String, query: String?, acceptsEventStream: Bool,
                        documentsLoaded: Bool, rulesActive: Bool) -> FastRoute {
        if method == .post {
            guard query == nil, documentsLoaded, target.hasSuffix(":commit"), let parsed = document(target),
                  parsed.verb == "commit", parsed.path.isEmpty else { return .fullPath }
            return .commit(parsed)
        }
        if let query, target.hasPrefix(WebChannelRoutes.pathPrefix) { return FastRouter.webChannel(method, target: target, query: query) }
        if query == nil, documentsLoaded, target.hasPrefix("/v1/"), let parsed = document(target), parsed.path.isDocument {
            if parsed.verb == "listen" { return rulesActive ? .fullPath : .documentStream(parsed) }
            if parsed.verb == nil, !acceptsEventStream { return .documentGet(parsed) }
            return .fullPath
        }
        guard !rulesActive, let (namespace, path) = tree(target, query: query) else { return .fullPath }
        return acceptsEventStream ? .treeStream(namespace: namespace, path: path) : .treeRead(namespace: namespace, path: path)
    }

    /// A streaming back channel of a Listen or Write channel; anything else (a long poll, a
    /// malformed query) is the full path's to answer.
    private static func webChannel(_ method: SimpleRequest.Method, target: String, query: String) -> FastRoute {
        guard method == .get, (try? WebChannelRoutes.kind(target)) != nil, let fields = try? WebChannelRequest.query(Substring(query)),
              case .backChannel(let session, let acknowledged, longPoll: false, _)? = try? WebChannelRequest.classify(method: "GET", query: fields)
        else { return .fullPath }
        return .webChannelBackChannel(session: session, acknowledged: acknowledged)
    }

    /// The parsed document target, from the last one when it repeats.
    private mutating func document(_ target: String) -> DocumentRequestPath? {
        if let last = memo?.document, last.raw == target { return last.parsed }
        guard let parsed = try? DocumentRequestPath.parse(target) else { return nil }
        if memo == nil { memo = Memo() }
        memo?.document = (target, parsed)
        return parsed
    }

    /// The namespace and location of a tree target with no query but `ns=`.
    private mutating func tree(_ target: String, query: String?) -> (String, TreePath)? {
        if let last = memo?.tree, last.raw == target, last.query == query { return (last.namespace, last.path) }
        guard Surface(path: target) == .tree else { return nil }
        var namespace = defaultNamespace
        if let query {
            guard query.hasPrefix("ns="), !query.contains("&") else { return nil }
            namespace = String(query.dropFirst(3))
        }
        guard (try? TreeBackend.validateNamespace(namespace)) != nil, let path = try? TreeRequest.location(target) else { return nil }
        if memo == nil { memo = Memo() }
        memo?.tree = (target, query, namespace, path)
        return (namespace, path)
    }
}
