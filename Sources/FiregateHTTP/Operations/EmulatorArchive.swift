import FiregateBackend
import FiregateEdge
import FiregateModel
import Foundation

/// One archive of everything the emulator holds (`/emulator/v1/export`, `/import`,
/// `--import`, `--export-on-exit`):
///
/// `{"firegate":"archive","version":1,"exportedAt","documents":[{"project","database",
/// "documents":[Document…]}],"tree":[{"namespace","value":<format=export JSON>}],"clients":[…]}`
///
/// Documents keep their create and update times, tree values their priorities. `clients`
/// is there only when asked for; an archive without it leaves the clients as they are.
enum EmulatorArchive {
    static let format = "archive"
    static let version: Int64 = 1
    /// Largest archive accepted, compressed or not.
    static let maxBytes = 512 * 1024 * 1024

    static func export(backend: Backend, clients: EdgeClients, includeClients: Bool) async throws -> [UInt8] {
        var archive: [(String, JSON)] = [
            ("firegate", .string(format)), ("version", .int(version)), ("exportedAt", .string(backend.clock.now().rfc3339)),
        ]
        archive.append(("documents", .array(backend.documents.exportAll().map { id, documents in
            ["project": .string(id.project), "database": .string(id.database),
             "documents": .array(documents.map { $0.json(database: id) })]
        })))
        var namespaces: [JSON] = []
        for (name, node) in try await backend.tree.exportAll() {
            namespaces.append(["namespace": .string(name), "value": node.exportJSON])
        }
        archive.append(("tree", .array(namespaces)))
        if includeClients { archive.append(("clients", .array(await clients.archives()))) }
        return JSONWriter.bytes(.object(.init(archive, uniquingKeysWith: { $1 })))
    }

    /// What an import restores, parsed and checked in full before anything changes.
    struct Contents {
        var databases: [(DatabaseID, [Document])] = []
        var namespaces: [(String, TreeNode)] = []
        var clients: [ClientArchive]?

        var documentCount: Int { databases.reduce(0) { $0 + $1.1.count } }
    }

    /// Parses archive bytes (JSON, or gzip of it); a damaged, truncated or foreign archive is
    /// refused with a message naming what is wrong.
    static func parse(_ bytes: [UInt8], defaultProject: String) throws(FiregateError) -> Contents {
        var bytes = bytes
        if Gzip.isCompressed(bytes) {
            guard let inflated = Gzip.decompress(bytes, limit: maxBytes) else {
                throw .invalidArgument("The archive is not valid gzip (damaged or truncated), or larger than \(maxBytes) bytes.")
            }
            bytes = inflated
        }
        let json: JSON
        do {
            json = try JSONParser.parse(bytes)
        } catch {
            throw .invalidArgument("The archive is not valid JSON (damaged or truncated): \(error.description)")
        }
        guard json["firegate"]?.stringValue == format else {
            throw .invalidArgument("Not a Firegate archive: the member \"firegate\": \"archive\" is missing.")
        }
        guard json["version"]?.integerLike == version else {
            throw .invalidArgument("Unsupported archive version \(json["version"].map { JSONWriter.string($0) } ?? "none"); this server reads version \(version).")
        }
        var contents = Contents()
        var seenDatabases = Set<DatabaseID>()
        for (i, item) in try array(json, "documents").enumerated() {
            let at = "documents[\(i)]"
            guard let project = item["project"]?.stringValue, let database = item["database"]?.stringValue else {
                throw .invalidArgument("\(at) needs project and database.")
            }
            let id = DatabaseID(project: project, database: database)
            guard seenDatabases.insert(id).inserted else { throw .invalidArgument("\(at) repeats database \(id.name).") }
            var documents: [Document] = []
            var seenPaths = Set<ResourcePath>()
            for (j, doc) in try array(item, "documents", at: at).enumerated() {
                let document = try Document(json: doc, database: id, at: "\(at).documents[\(j)]")
                guard seenPaths.insert(document.path).inserted else {
                    throw .invalidArgument("\(at).documents[\(j)] repeats \(id.resourceName(document.path)).")
                }
                documents.append(document)
            }
            contents.databases.append((id, documents))
        }
        var seenNamespaces = Set<String>()
        for (i, item) in try array(json, "tree").enumerated() {
            let at = "tree[\(i)]"
            guard let name = item["namespace"]?.stringValue else { throw .invalidArgument("\(at) needs namespace.") }
            try TreeBackend.validateNamespace(name)
            guard seenNamespaces.insert(name).inserted else { throw .invalidArgument("\(at) repeats namespace \(name).") }
            guard case .node(let node) = try TreeWriteValue.prepare(item["value"] ?? .null, at: .root) else {
                throw .invalidArgument("\(at).value holds server values; an archive holds stored data only.")
            }
            contents.namespaces.append((name, node))
        }
        if let clients = json["clients"], clients != .null {
            contents.clients = try array(json, "clients").enumerated().map { i, item throws(FiregateError) in
                try ClientArchive(json: item, defaultProject: defaultProject, field: "clients[\(i)]")
            }
        }
        return contents
    }

    private static func array(_ json: JSON, _ member: String, at: String? = nil) throws(FiregateError) -> [JSON] {
        guard let value = json[member], value != .null else { return [] }
        guard let items = value.arrayValue else { throw .invalidArgument("\(at.map { $0 + "." } ?? "")\(member) must be an array.") }
        return items
    }

    /// Restores parsed contents: documents, tree, and clients when the archive has them.
    static func restore(_ contents: Contents, backend: Backend, clients: EdgeClients) async throws {
        try await backend.documents.replaceAll(contents.databases)
        try await backend.tree.replaceAll(contents.namespaces)
        if let archived = contents.clients {
            try await clients.replaceAll(with: archived, reason: FiregateError(.aborted, "The emulator's data was replaced by an import."))
        }
        backend.operations.record(.imported(documents: contents.documentCount, namespaces: contents.namespaces.count,
                                            clients: contents.clients?.count ?? 0))
    }
}

extension FiregateServer {
    /// `--import PATH`: restores an archive file before serving.
    public static func importArchive(from path: String, backend: Backend, clients: EdgeClients) async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let contents = try EmulatorArchive.parse(Array(data), defaultProject: backend.defaultProject)
        try await EmulatorArchive.restore(contents, backend: backend, clients: clients)
    }

    /// `--export-on-exit PATH`: writes everything, clients included, after the server stopped.
    public static func exportArchive(to path: String, backend: Backend, clients: EdgeClients) async throws {
        let bytes = try await EmulatorArchive.export(backend: backend, clients: clients, includeClients: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
