import FiregateBackend
import FiregateModel
import HTTPTypes
import Hummingbird

/// A tree request read from HTTP: the effective method (after `X-HTTP-Method-Override`), the
/// namespace and location, and every parameter and header that shapes the answer.
struct TreeRequest {
    enum Method: String {
        case get = "GET", put = "PUT", post = "POST", patch = "PATCH", delete = "DELETE", options = "OPTIONS"
    }

    enum Print { case compact, pretty, silent }

    var method: Method
    var namespace: String
    var path: TreePath
    var print: Print = .compact
    var format: TreeFormat = .plain
    var shallow = false
    var query: TreeQuery?
    var wantsETag = false
    var ifMatch: String?
    var ifNoneMatch: String?
    var wantsStream = false
    var callback: String?
    var download: String?
    /// `?auth=` (or `access_token=`): the caller's token, as REST clients send it.
    var authToken: String?

    /// Parameters that may come with `shallow=true`.
    static let shallowCompatible: Set<String> = ["shallow", "ns", "auth", "access_token", "print", "x-http-method-override", "ac", "timeout"]

    /// `location` replaces the request's URL path (a tree location under an edge client's
    /// prefix).
    init(_ request: Request, defaultNamespace: String, location: String? = nil) throws(FiregateError) {
        var parameters: [String: String] = [:]
        for (name, value) in try request.queryItems() { parameters[name] = value }

        let override = request.headers[HTTPField.Name("X-HTTP-Method-Override")!] ?? parameters["x-http-method-override"]
        let methodName = (override ?? request.method.rawValue).uppercased()
        guard let method = methodName == "HEAD" ? .get : Method(rawValue: methodName) else {
            throw FiregateError.invalidArgument("Unsupported method \(methodName).")
        }
        self.method = method

        namespace = parameters["ns"] ?? defaultNamespace
        try TreeBackend.validateNamespace(namespace)
        path = try TreeRequest.location(location ?? request.uri.path)

        switch parameters["print"] {
        case nil: break
        case "pretty": print = .pretty
        case "silent": print = .silent
        case let other?: throw FiregateError.invalidArgument("Invalid print argument: \(other). Use pretty or silent.")
        }
        switch parameters["format"] {
        case nil: break
        case "export": format = .export
        case let other?: throw FiregateError.invalidArgument("Invalid format argument: \(other). Use export.")
        }
        switch parameters["shallow"] {
        case nil, "false": break
        case "true": shallow = true
        case let other?: throw FiregateError.invalidArgument("Invalid shallow argument: \(other). Use true or false.")
        }
        if shallow, let other = parameters.keys.first(where: { !TreeRequest.shallowCompatible.contains($0) }) {
            throw FiregateError.invalidArgument("Mixing 'shallow' and other query parameters (\(other)) is not allowed")
        }
        if let timeout = parameters["timeout"] { try TreeRequest.validateTimeout(timeout) }
        if let limit = parameters["writeSizeLimit"], !["tiny", "small", "medium", "large", "unlimited"].contains(limit) {
            throw FiregateError.invalidArgument("Invalid writeSizeLimit: \(limit). Use tiny, small, medium, large or unlimited.")
        }
        query = try TreeQueryParser.parse(parameters)
        callback = parameters["callback"]
        download = parameters["download"]
        authToken = parameters["auth"] ?? parameters["access_token"]

        wantsETag = request.headers[HTTPField.Name("X-Firebase-ETag")!]?.lowercased() == "true"
        ifMatch = request.headers[.ifMatch]
        ifNoneMatch = request.headers[.ifNoneMatch]
        wantsStream = method == .get && (request.headers[.accept]?.contains("text/event-stream") ?? false)

        if let ifMatch {
            guard method == .put || method == .delete else {
                throw FiregateError.invalidArgument("if-match is not supported for \(method.rawValue) requests; use it with PUT or DELETE.")
            }
            guard !ifMatch.contains(",") else {
                throw FiregateError.invalidArgument("if-match takes a single ETag.")
            }
        }
        if let callback, !callback.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "$")
            || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) {
            throw FiregateError.invalidArgument("Invalid callback name.")
        }
    }

    /// The tree location named by a URL path ending in `.json` (`/a/b.json`, `/a/b/.json`).
    static func location(_ rawPath: String) throws(FiregateError) -> TreePath {
        var path = Substring(rawPath)
        while path.hasSuffix("/") && path.count > 1 { path = path.dropLast() }
        guard path.hasSuffix(".json") else { throw TreePath.invalidPathError }
        path = path.dropLast(5)
        let decoded = try PercentDecoding.decode(String(path))
        return try TreePath(validating: decoded)
    }

    /// `timeout=3ms|3s|3min`, positive and at most 15 minutes.
    static func validateTimeout(_ text: String) throws(FiregateError) {
        let invalid = FiregateError.invalidArgument("Invalid timeout: \(text). Use a positive number of ms, s or min, at most 15min.")
        var unitMillis: Double = 0
        var number = Substring(text)
        if number.hasSuffix("ms") { unitMillis = 1; number = number.dropLast(2) }
        else if number.hasSuffix("min") { unitMillis = 60_000; number = number.dropLast(3) }
        else if number.hasSuffix("s") { unitMillis = 1000; number = number.dropLast(1) }
        guard unitMillis > 0, let value = Double(number), value > 0, value * unitMillis <= 900_000 else { throw invalid }
    }
}
