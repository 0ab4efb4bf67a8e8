import FiregateBackend
import FiregateEdge
import FiregateExport
import FiregateModel
import Foundation
import Hummingbird

/// The Firebase CLI's export directory against the backend (docs/export-format.md): `--import
/// DIR`, `--export-on-exit DIR` under `exec`, and the Firestore emulator's own verbs
/// `POST /emulator/v1/projects/{p}:export` and `:import`, which the CLI's hub and users call.
enum ExportDirectoryFiles {
    /// Everything a directory holds, checked in full before anything changes: its documents go
    /// into `project`, its RTDB files each into the namespace the file is named after.
    static func contents(of directory: String, project: String, backend: Backend) throws(FiregateError) -> EmulatorArchive.Contents {
        let read = try ExportDirectory.read(directory, project: project, at: backend.clock.now())
        var contents = EmulatorArchive.Contents()
        var byDatabase: [String: [Document]] = [:]
        var order: [String] = []
        for (database, document) in read.documents {
            if byDatabase[database] == nil { order.append(database) }
            byDatabase[database, default: []].append(document)
        }
        contents.databases = order.map { (DatabaseID(project: project, database: $0), byDatabase[$0] ?? []) }
        // A namespace's own file first, then those of its other names laid over it.
        let ordered = read.namespaces.sorted { (backend.tree.canonicalName($0.name) != $0.name ? 1 : 0, $0.name) < (backend.tree.canonicalName($1.name) != $1.name ? 1 : 0, $1.name) }
        for (name, value) in ordered {
            let file = "\(directory)/…/\(name).json"
            do { try TreeBackend.validateNamespace(name) } catch { throw .invalidArgument("\(file): \(error.message)") }
            guard case .node(let node) = try TreeWriteValue.prepare(value, at: .root) else {
                throw .invalidArgument("\(file) holds server values; an export holds stored data only.")
            }
            // Exports often hold both `<project>.json` and `<project>-default-rtdb.json`; where
            // the two are one namespace, the alias's top-level keys are laid over the namespace's.
            let canonical = backend.tree.canonicalName(name)
            if let index = contents.namespaces.firstIndex(where: { $0.0 == canonical }) {
                var merged = contents.namespaces[index].1
                for (key, child) in node.children ?? TreeChildren() { merged.set(child, at: TreePath(keys: [key])) }
                contents.namespaces[index].1 = merged
            } else {
                contents.namespaces.append((canonical, node))
            }
        }
        return contents
    }

    /// Writes the project's documents (every database) and every namespace that holds data.
    static func write(to directory: String, project: String, backend: Backend) async throws {
        let started = backend.clock.now()
        let documents = backend.documents.exportAll().filter { $0.0.project == project }.map { (database: $0.0.database, documents: $0.1) }
        let namespaces = try await backend.tree.exportAll().map { (name: $0.0, value: $0.1.exportJSON) }
        try ExportDirectory.write(documents: documents, namespaces: namespaces, project: project, to: directory,
                                  started: started, ended: backend.clock.now())
    }

    /// `POST /emulator/v1/projects/{p}:export` `{"database","export_directory","export_name"}`:
    /// Firestore's part, into `<export_directory>/<export_name>/`, as the Firestore emulator writes it.
    static func export(_ request: Request, project: String, backend: Backend) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let database = try databaseName(body["database"], project: project)
        guard let directory = body["export_directory"]?.stringValue, !directory.isEmpty else {
            throw .invalidArgument("export_directory is required: the folder to write the export into.")
        }
        let name = body["export_name"]?.stringValue ?? "firestore_export"
        guard !name.isEmpty, !name.contains("/") else { throw .invalidArgument("export_name must be a folder name.") }
        let started = backend.clock.now()
        let documents = backend.documents.exportAll().filter { $0.0 == database }.map { (database: $0.0.database, documents: $0.1) }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isFolder), isFolder.boolValue else {
            // The emulator's words: the folder must be there already.
            throw FiregateError(.failedPrecondition, "export_directory must be a directory")
        }
        let folder = URL(fileURLWithPath: directory).appendingPathComponent(name)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try ExportDirectory.writeFirestore(documents: documents, project: project, to: folder, name: name, started: started, ended: backend.clock.now())
        } catch {
            throw FiregateError(.failedPrecondition, "Could not write the export into \(folder.path): \(error)")
        }
        return JSONResponse.make(["documents": .int(Int64(documents.reduce(0) { $0 + $1.documents.count })), "path": .string(folder.path)])
    }

    /// `POST /emulator/v1/projects/{p}:import` `{"database","export_directory"}`: the documents of
    /// an export (a folder with a `*.overall_export_metadata`, or a CLI export directory) replace
    /// the database's.
    static func `import`(_ request: Request, project: String, backend: Backend) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let database = try databaseName(body["database"], project: project)
        guard var directory = body["export_directory"]?.stringValue, !directory.isEmpty else {
            throw .invalidArgument("export_directory is required: the export's folder.")
        }
        if directory.hasSuffix(".overall_export_metadata") { directory = URL(fileURLWithPath: directory).deletingLastPathComponent().path }
        let read = try ExportDirectory.read(directory, project: project, at: backend.clock.now())
        let documents = read.documents.filter { $0.database == database.database }.map(\.document)
        do {
            try await backend.documents.database(database).replaceAll(with: documents)
        } catch {
            throw ErrorResponse.normalize(error)
        }
        return JSONResponse.make(["documents": .int(Int64(documents.count))])
    }

    private static func databaseName(_ value: JSON?, project: String) throws(FiregateError) -> DatabaseID {
        guard let name = value?.stringValue else { return DatabaseID(project: project) }
        let parts = name.split(separator: "/").map(String.init)
        guard parts.count == 4, parts[0] == "projects", parts[1] == project, parts[2] == "databases", !parts[3].isEmpty else {
            throw .invalidArgument("database must be projects/\(project)/databases/{database}, not \(name).")
        }
        return DatabaseID(project: project, database: parts[3])
    }
}

extension FiregateServer {
    /// `--import DIR` under `exec`: restores the CLI's export directory before serving.
    public static func importExportDirectory(from directory: String, project: String, backend: Backend, clients: EdgeClients) async throws {
        let contents = try ExportDirectoryFiles.contents(of: directory, project: project, backend: backend)
        try await EmulatorArchive.restore(contents, backend: backend, clients: clients)
    }

    /// `--export-on-exit DIR` under `exec`: the CLI's export directory, after the servers stopped.
    public static func writeExportDirectory(to directory: String, project: String, backend: Backend) async throws {
        try await ExportDirectoryFiles.write(to: directory, project: project, backend: backend)
    }
}
