import FiregateModel
import Hummingbird

/// The query of a `:listen` request: `?query=<structuredQuery JSON>` (bare or wrapped in
/// `{"structuredQuery":…}`) or, on POST, a body `{"structuredQuery":…}` — never both.
enum ListenQueryParameter {
    static func structuredQuery(_ params: QueryParameters, _ request: Request) async throws(FiregateError) -> JSON? {
        var queryJSON: JSON?
        if let text = params.first("query") {
            let parsed: JSON
            do { parsed = try JSONParser.parse(text) } catch { throw .invalidArgument("Invalid query parameter: \(error.description)") }
            queryJSON = parsed.member("structuredQuery") ?? parsed
        }
        if request.method == .post, let body = try await request.jsonBody() {
            if queryJSON != nil { throw .invalidArgument("Give the query either as ?query= or as the body, not both.") }
            queryJSON = body.member("structuredQuery")
        }
        return queryJSON
    }
}
