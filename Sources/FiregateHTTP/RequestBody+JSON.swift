import FiregateModel
import Hummingbird
import NIOCore

extension Request {
    /// Largest request body accepted; larger bodies are refused before parsing.
    static let maxBodyBytes = 32 * 1024 * 1024

    /// The whole body, kept in the request for whoever reads it next (a forwarded request is
    /// served here after all when this replica turns out to own its data).
    mutating func collectedBody() async throws(FiregateError) -> ByteBuffer {
        do {
            return try await collectBody(upTo: Request.maxBodyBytes)
        } catch {
            throw FiregateError(.invalidArgument, "Request payload too large or unreadable.")
        }
    }

    /// The whole body as bytes, refusing bodies over `maxBodyBytes`.
    func bodyBytes() async throws(FiregateError) -> [UInt8] {
        do {
            let buffer = try await body.collect(upTo: Request.maxBodyBytes)
            return Array(buffer.readableBytesView)
        } catch {
            throw FiregateError(.invalidArgument, "Request payload too large or unreadable.")
        }
    }

    /// The body parsed as JSON whatever the Content-Type (Lite SDKs send text/plain);
    /// an empty body is `nil`.
    func jsonBody() async throws(FiregateError) -> JSON? {
        let bytes = try await bodyBytes()
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw FiregateError(.invalidArgument, "Invalid JSON payload received. \(error.description)")
        }
    }

    /// The body as a request message: a JSON object, `{}` when empty. Anything else is refused
    /// the way a proto3 JSON parser refuses it.
    func jsonObjectBody() async throws(FiregateError) -> JSON {
        guard let body = try await jsonBody() else { return [:] }
        guard case .object = body else {
            throw FiregateError(.invalidArgument, "Invalid JSON payload received. Root element must be a message (a JSON object).")
        }
        return body
    }

    /// Query parameters decoded, in order, repeats kept (`mask.fieldPaths=a&mask.fieldPaths=b`);
    /// INVALID_ARGUMENT when one does not decode to UTF-8.
    func queryItems() throws(FiregateError) -> [(name: String, value: String)] {
        guard let query = uri.query, !query.isEmpty else { return [] }
        return try query.split(separator: "&", omittingEmptySubsequences: true).map { pair throws(FiregateError) in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try PercentDecoding.decode(String(parts[0]), plusAsSpace: true)
            let value = parts.count > 1 ? try PercentDecoding.decode(String(parts[1]), plusAsSpace: true) : ""
            return (name, value)
        }
    }
}
