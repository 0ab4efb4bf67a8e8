import FiregateModel
import Foundation
import Hummingbird
import Logging

/// The dashboard: files of the `Public/` folder served at `/` through Hummingbird's file
/// middleware, with ETag/Last-Modified validation and `Cache-Control: no-cache` (browsers
/// revalidate, so a new version shows on reload).
struct StaticFiles: Sendable {
    private let files: FileMiddleware<BasicRequestContext, LocalFileSystem>?

    init(directory: String?, logger: Logger) {
        files = directory.map {
            FileMiddleware($0, cacheControl: .init([(MediaType(type: .any), [.noCache])]), searchForIndexHtml: true, logger: logger)
        }
    }

    /// The file for a GET or HEAD, or a 404 in the Firestore error shape.
    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        let missing = ErrorResponse.firestore(.notFound("No route for \(request.method) \(request.uri.path)"))
        guard let files, request.method == .get || request.method == .head else { return missing }
        do {
            return try await files.handle(request, context: context) { _, _ in throw HTTPError(.notFound) }
        } catch let error as HTTPError where error.status == .badRequest {
            return ErrorResponse.firestore(.invalidArgument("Invalid path \(request.uri.path)."))
        } catch {
            return missing
        }
    }

    /// Where `Public/` is when no directory is configured: the working directory, else beside
    /// the executable or up to four folders above it (the repository of a `.build/…` binary).
    static func locate(executable: String = CommandLine.arguments.first ?? "") -> String? {
        var candidates = [FileManager.default.currentDirectoryPath + "/Public"]
        var folder = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(folder.appendingPathComponent("Public").path)
            folder = folder.deletingLastPathComponent()
        }
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/index.html") }
    }
}
