import FiregateModel
import Foundation
import Synchronization

/// The Firebase CLI's export directory, both ways (docs/export-format.md):
///
/// ```
/// firebase-export-metadata.json
/// firestore_export/firestore_export.overall_export_metadata
/// firestore_export/all_namespaces/all_kinds/all_namespaces_all_kinds.export_metadata
/// firestore_export/all_namespaces/all_kinds/output-0 …
/// database_export/<namespace>.json
/// ```
///
/// Reading also takes a production export (`gcloud firestore export`: a folder holding
/// `<name>.overall_export_metadata`) and a folder of RTDB `*.json` files, as `--import` does.
public struct ExportDirectory: Sendable {
    /// What a directory holds: documents by database name, and RTDB namespaces' values.
    public struct Contents: Sendable {
        public var documents: [(database: String, document: Document)] = []
        public var namespaces: [(name: String, value: JSON)] = []
        public init() {}
    }

    /// Records per `output-N` file, as the emulator writes them.
    static let recordsPerFile = 5_000
    /// The versions written into `firebase-export-metadata.json` (those of the CLI and emulators
    /// whose layout this is).
    static let cliVersion = "15.28.1", firestoreVersion = "1.22.0", databaseVersion = "4.11.2"

    // MARK: reading

    /// Reads an export directory. `project` is the project documents are imported into (the
    /// emulator's rule: the running project, whatever the keys say).
    public static func read(_ directory: String, project: String, at time: Timestamp) throws(FiregateError) -> Contents {
        let fileManager = FileManager.default
        var isFolder: ObjCBool = false
        guard fileManager.fileExists(atPath: directory, isDirectory: &isFolder) else {
            throw .invalidArgument("Directory \"\(directory)\" does not exist.")
        }
        guard isFolder.boolValue else { throw .invalidArgument("\"\(directory)\" is a file: --import takes an export directory.") }
        let root = URL(fileURLWithPath: directory)
        var contents = Contents()
        let metadataFile = root.appendingPathComponent("firebase-export-metadata.json")
        if fileManager.fileExists(atPath: metadataFile.path) {
            let metadata = try readJSON(metadataFile.path)
            if let overall = metadata["firestore"]?["metadata_file"]?.stringValue {
                let url = overall.hasPrefix("/") ? URL(fileURLWithPath: overall) : root.appendingPathComponent(overall)
                contents.documents = try readFirestore(overall: url, project: project, at: time)
            }
            if let path = metadata["database"]?["path"]?.stringValue {
                contents.namespaces = try readDatabase(root.appendingPathComponent(path))
            }
            return contents
        }
        let names = (try? fileManager.contentsOfDirectory(atPath: directory)) ?? []
        if let overall = names.sorted().first(where: { $0.hasSuffix(".overall_export_metadata") }) {
            contents.documents = try readFirestore(overall: root.appendingPathComponent(overall), project: project, at: time)
            return contents
        }
        if names.contains(where: { $0.hasSuffix(".json") }) {
            contents.namespaces = try readDatabase(root)
            return contents
        }
        throw .invalidArgument("\(directory): no firebase-export-metadata.json, *.overall_export_metadata or *.json here: not an export.")
    }

    private static func readFile(_ path: String) throws(FiregateError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw .invalidArgument("\(path): cannot be read.") }
        return [UInt8](data)
    }

    private static func readJSON(_ path: String) throws(FiregateError) -> JSON {
        do { return try JSONParser.parse(try readFile(path)) } catch let error as FiregateError { throw error } catch {
            throw .invalidArgument("\(path): not valid JSON (\(error)).")
        }
    }

    /// The partitions an overall metadata file lists, each a path relative to its folder.
    static func partitions(ofOverall records: [[UInt8]], file: String) throws(FiregateError) -> [String] {
        var paths: [String] = []
        for (index, record) in records.enumerated() where record != [0x33] {
            var reader = ProtoReader(record[...], context: "\(file): record \(index)")
            while let (field, value) = try reader.next() {
                guard field == 1, case .bytes(let partition) = value else { continue }
                var inner = ProtoReader(partition, context: reader.context)
                while let (innerField, innerValue) = try inner.next() {
                    if innerField == 2 { paths.append(try innerValue.string(inner, "a partition's path")) }
                }
            }
        }
        return paths
    }

    /// The output files a partition's `.export_metadata` (a `Backup` message) lists.
    static func outputFiles(ofPartition bytes: [UInt8], file: String) throws(FiregateError) -> [String] {
        var reader = ProtoReader(bytes[...], context: file)
        var files: [String] = []
        var sawKind = false
        while let (field, value) = try reader.next() {
            guard field == 2, case .bytes(let kindInfo) = value else { continue }
            var inner = ProtoReader(kindInfo, context: file)
            while let (innerField, innerValue) = try inner.next() {
                if innerField == 1 { sawKind = true }
                if innerField == 2 { files.append(try innerValue.string(inner, "an output file's name")) }
            }
        }
        guard sawKind || files.isEmpty else { throw .invalidArgument("\(file): a kind's files without its kind.") }
        return files
    }

    private static func relative(_ path: String, to folder: URL) -> URL {
        // Exports made on Windows wrote backslashes.
        folder.appendingPathComponent(path.replacingOccurrences(of: "\\", with: "/"))
    }

    static func readFirestore(overall: URL, project: String, at time: Timestamp) throws(FiregateError) -> [(database: String, document: Document)] {
        let folder = overall.deletingLastPathComponent()
        let records = try LevelDBLog.read(try readFile(overall.path), file: overall.path)
        var outputs: [String] = []
        for partition in try partitions(ofOverall: records, file: overall.path) {
            let partitionURL = relative(partition, to: folder)
            let partitionFolder = partitionURL.deletingLastPathComponent()
            for name in try outputFiles(ofPartition: try readFile(partitionURL.path), file: partitionURL.path) {
                outputs.append(relative(name, to: partitionFolder).path)
            }
        }
        // The files are read and decoded side by side (one per core); what they hold is then
        // checked in file order, so the error reported is the first in the export.
        let results = Mutex<[Int: Result<[(database: String, document: Document)], FiregateError>]>([:])
        let files = outputs
        DispatchQueue.concurrentPerform(iterations: files.count) { index in
            let result = Result { () throws(FiregateError) in try readOutput(files[index], project: project, at: time) }
            results.withLock { $0[index] = result }
        }
        var documents: [(database: String, document: Document)] = []
        var seen: [String: Set<ResourcePath>] = [:]
        for index in outputs.indices {
            let read = try results.withLock { $0[index] }!.get()
            for (record, item) in read.enumerated() {
                guard seen[item.database, default: []].insert(item.document.path).inserted else {
                    throw .invalidArgument("\(outputs[index]): record \(record): \(item.document.path.canonical) is in the export twice.")
                }
            }
            documents.append(contentsOf: read)
        }
        return documents
    }

    /// One `output-N` file's documents; an error names the file and the record.
    private static func readOutput(_ output: String, project: String, at time: Timestamp) throws(FiregateError) -> [(database: String, document: Document)] {
        let records = try LevelDBLog.read(try readFile(output), file: output)
        var documents: [(database: String, document: Document)] = []
        documents.reserveCapacity(records.count)
        for (index, record) in records.enumerated() {
            do throws(FiregateError) {
                // Errors say what is wrong after an empty context; the record is named here,
                // so the happy path builds no text.
                let entity = try Entity.decode(record[...], context: "")
                let (database, document) = try DocumentEntity.document(of: entity, project: project, at: time, context: "")
                do { try DocumentLimits.validate(path: document.path, fields: document.fields, database: database) } catch {
                    throw FiregateError.invalidArgument(": \(error.message)")
                }
                documents.append((database.database, document))
            } catch {
                throw .invalidArgument("\(output): record \(index)\(error.message)")
            }
        }
        return documents
    }

    static func readDatabase(_ folder: URL) throws(FiregateError) -> [(name: String, value: JSON)] {
        // A committed export may have lost its empty database_export folder.
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var namespaces: [(name: String, value: JSON)] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            namespaces.append((String(name.dropLast(5)), try readJSON(folder.appendingPathComponent(name).path)))
        }
        return namespaces
    }

    // MARK: writing

    /// Writes an export of `documents` (of `project`) and `namespaces` into `directory`, built
    /// beside it and moved into its place, so a failed export leaves what was there.
    public static func write(documents: [(database: String, documents: [Document])], namespaces: [(name: String, value: JSON)],
                             project: String, to directory: String, started: Timestamp, ended: Timestamp) throws {
        let fileManager = FileManager.default
        let target = URL(fileURLWithPath: directory).standardizedFileURL
        let parent = target.deletingLastPathComponent()
        try fileManager.createDirectory(at: parent, withIntermediateDirectories: true)
        let temporary = parent.appendingPathComponent(".\(target.lastPathComponent).firegate-export-\(UInt32.random(in: 0...UInt32.max))")
        try fileManager.createDirectory(at: temporary, withIntermediateDirectories: true)
        do {
            var metadata: [(String, JSON)] = [("version", .string(cliVersion))]
            let firestore = temporary.appendingPathComponent("firestore_export")
            try writeFirestore(documents: documents, project: project, to: firestore, name: "firestore_export", started: started, ended: ended)
            metadata.append(("firestore", .object([
                "version": .string(firestoreVersion), "path": .string("firestore_export"),
                "metadata_file": .string("firestore_export/firestore_export.overall_export_metadata"),
            ])))
            let database = temporary.appendingPathComponent("database_export")
            try fileManager.createDirectory(at: database, withIntermediateDirectories: true)
            for (name, value) in namespaces {
                try Data(JSONWriter.bytes(value)).write(to: database.appendingPathComponent("\(name).json"))
            }
            metadata.append(("database", .object(["version": .string(databaseVersion), "path": .string("database_export")])))
            try Data(JSONWriter.bytes(.object(.init(metadata, uniquingKeysWith: { $1 })), style: .pretty))
                .write(to: temporary.appendingPathComponent("firebase-export-metadata.json"))
            if fileManager.fileExists(atPath: target.path) { try fileManager.removeItem(at: target) }
            try fileManager.moveItem(at: temporary, to: target)
        } catch {
            try? fileManager.removeItem(at: temporary)
            throw error
        }
    }

    static let partitionPath = "all_namespaces/all_kinds/all_namespaces_all_kinds.export_metadata"

    /// Writes Firestore's part alone into `folder`: `<name>.overall_export_metadata` and its
    /// partition, as the Firestore emulator's `:export` writes it into `<export_directory>/<name>`.
    public static func writeFirestore(documents: [(database: String, documents: [Document])], project: String, to folder: URL,
                                      name exportName: String, started: Timestamp, ended: Timestamp) throws {
        let partitionFolder = folder.appendingPathComponent("all_namespaces/all_kinds")
        try FileManager.default.createDirectory(at: partitionFolder, withIntermediateDirectories: true)
        var files: [String] = []
        var current: [UInt8] = []
        var inFile = 0, count = 0, bytes = 0
        func flush() throws {
            let name = "output-\(files.count)"
            try Data(current).write(to: partitionFolder.appendingPathComponent(name))
            bytes += current.count
            files.append(name)
            current = []
            inFile = 0
        }
        for (database, list) in documents {
            let id = DatabaseID(project: project, database: database)
            for document in list {
                LevelDBLog.append(DocumentEntity.entity(of: document, database: id).encoded(), to: &current)
                inFile += 1
                count += 1
                if inFile == recordsPerFile { try flush() }
            }
        }
        if inFile > 0 || files.isEmpty { try flush() }
        var backup = ProtoWriter()
        backup.message(1) { info in
            info.string(1, exportName)
            info.int(2, started.microseconds)
            info.int(3, ended.microseconds)
        }
        backup.message(2) { kind in
            kind.string(1, "")
            for file in files { kind.string(2, file) }
        }
        try Data(backup.bytes).write(to: folder.appendingPathComponent(partitionPath))
        var overall = ProtoWriter()
        overall.message(1) { partition in
            partition.message(1) { selector in
                selector.int(1, 2)
                selector.int(3, 3)
            }
            partition.string(2, partitionPath)
            partition.int(3, Int64(count))
            partition.int(4, Int64(bytes))
        }
        try Data(LevelDBLog.write([[0x33], overall.bytes])).write(to: folder.appendingPathComponent("\(exportName).overall_export_metadata"))
    }
}
