import HTTPTypes
import Hummingbird

/// Cross-origin access for pages (docs/web-apps.md): every surface answers a page on another
/// origin — the web SDK's REST calls and WebChannel streams, edge-client routes, the control
/// routes a Cypress test calls. Hummingbird's `CORSMiddleware` answers preflights and marks
/// answers; around it, the preflight also allows whatever headers the page asked for (the SDK
/// sends app-specific ones) and Chrome's private-network check, and answers expose their
/// `Firegate-*` headers and WebChannel's session headers.
///
/// The origin is echoed with `Access-Control-Allow-Credentials: true`: the web SDK's calls are
/// credentialed, and a credentialed call refuses `*`.
struct CrossOrigin: Sendable {
    /// What the Firebase SDKs send (the web SDK's REST and WebChannel headers, the Realtime
    /// Database REST headers) and what Firegate's own routes read.
    static let allowedHeaders: [HTTPField.Name] = [.accept, .authorization, .contentType, .origin, .cacheControl, .ifMatch, .ifNoneMatch]
        + ["X-Goog-Api-Client", "X-Firebase-GMPID", "X-Goog-Request-Params", "Google-Cloud-Resource-Prefix", "X-Firebase-AppCheck",
           "X-Goog-Api-Key", "X-Goog-AuthUser", "X-Goog-Iam-Authorization-Token", "X-Firebase-Client", "X-Firebase-ETag",
           "X-Firebase-Decoding", "X-HTTP-Method-Override", "Last-Event-ID"].compactMap { HTTPField.Name($0) }
    static let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]
    /// Headers a page may read besides `Firegate-*`.
    static let exposedHeaders = ["ETag", "X-HTTP-Session-Id", "X-Client-Wire-Protocol", "X-HTTP-Initial-Response"]

    static let exposeHeaders = HTTPField.Name("Access-Control-Expose-Headers")!
    static let requestHeaders = HTTPField.Name("Access-Control-Request-Headers")!
    static let requestPrivateNetwork = HTTPField.Name("Access-Control-Request-Private-Network")!
    static let allowPrivateNetwork = HTTPField.Name("Access-Control-Allow-Private-Network")!

    /// Answers a preflight, or runs `next` and marks its answer; requests without an `Origin`
    /// pass untouched.
    func handle<Context: RequestContext>(_ request: Request, context: Context,
                                         next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.headers[.origin] != nil else { return try await next(request, context) }
        if request.method == .options {
            let requested = (request.headers[CrossOrigin.requestHeaders] ?? "").split(separator: ",").compactMap {
                HTTPField.Name($0.trimmingCharacters(in: .whitespaces))
            }
            var allowed = CrossOrigin.allowedHeaders
            for name in requested where !allowed.contains(name) { allowed.append(name) }
            let middleware = CORSMiddleware<Context>(allowOrigin: .originBased, allowHeaders: allowed, allowMethods: CrossOrigin.methods,
                                                     allowCredentials: true, maxAge: .seconds(3600))
            var response = try await middleware.handle(request, context: context, next: next)
            if request.headers[CrossOrigin.requestPrivateNetwork] == "true" { response.headers[CrossOrigin.allowPrivateNetwork] = "true" }
            return response
        }
        let middleware = CORSMiddleware<Context>(allowOrigin: .originBased, allowCredentials: true)
        var response = try await middleware.handle(request, context: context, next: next)
        // The fast path's and the tree's `*` would make a credentialed call fail.
        var exposed = CrossOrigin.exposedHeaders
        for field in response.headers where field.name.canonicalName.lowercased().hasPrefix("firegate-") {
            if !exposed.contains(field.name.canonicalName) { exposed.append(field.name.canonicalName) }
        }
        response.headers[CrossOrigin.exposeHeaders] = exposed.joined(separator: ", ")
        return response
    }
}
