import FiregateBackend
import FiregateEdge
import FiregateModel
import FiregateStore
import OrderedCollections
import Hummingbird

/// Health and emulator operations: `/healthz`, `/emulator/v1/…` (reset, clock, the operations
/// event stream, what databases and namespaces exist, export and import).
struct OperationRoutes: Sendable {
    let backend: Backend
    let clients: EdgeClients
    let ticker: KeepAliveTicker
    let connections: ConnectionRegistry
    /// On replicas: how a tree write forwarded by another replica is recognised.
    var forwarding: OwnerForwarding?

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        let path = request.uri.path
        if path == "/healthz" {
            return JSONResponse.make(["status": "ok"])
        }
        do {
            return try await emulator(request, path: path)
        } catch {
            return ErrorResponse.firestore(error)
        }
    }

    func emulator(_ request: Request, path: String) async throws(FiregateError) -> Response {
        let segments = try path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { segment throws(FiregateError) in try PercentDecoding.decode(String(segment)) }
        guard segments.count >= 3, segments[0] == "emulator", segments[1] == "v1" else { throw OperationRoutes.noRoute(request) }
        // DELETE /emulator/v1/projects/{p}/databases/{d}/documents: clear one database.
        if segments.count == 7, segments[2] == "projects", segments[4] == "databases", segments[6] == "documents" {
            guard request.method == .delete else { throw .notFound("No route for \(request.method) \(path): only DELETE is served here.") }
            return try await resetDatabase(DatabaseID(project: segments[3], database: segments[5]))
        }
        // POST /emulator/v1/projects/{p}/databases/{d}:bundle: a bundle of the database's data.
        if segments.count == 6, segments[2] == "projects", segments[4] == "databases", segments[5].hasSuffix(":bundle") {
            guard request.method == .post else { throw .notFound("No route for \(request.method) \(path): only POST is served here.") }
            return try await BundleBuilderRoute(backend: backend, database: DatabaseID(project: segments[3], database: String(segments[5].dropLast(":bundle".count))))
                .build(request)
        }
        if segments.count == 5, segments[2] == "connections", segments[4] == "timeline", request.method == .get {
            return try TimelineRoutes(timelines: backend.timelines, ticker: ticker).respond(request, lanes: [TimelineLane.connectionID(segments[3])])
        }
        if segments[2] == "connections" {
            return try await ConnectionRoutes(registry: connections).respond(request, rest: segments.dropFirst(3))
        }
        // /emulator/v1/projects/{p}:securityRules|ruleCoverage[.html]|test and /emulator/v1/rules/decisions[/{id}].
        if segments.count == 4, segments[2] == "projects", let colon = segments[3].lastIndex(of: ":") {
            let project = String(segments[3][..<colon]), verb = segments[3][segments[3].index(after: colon)...]
            guard !project.isEmpty else { throw OperationRoutes.noRoute(request) }
            let reports = RulesReportRoutes(rules: backend.rules)
            switch verb {
            case "securityRules": return try await rulesRoutes.firestore(request, project: project)
            case "ruleCoverage", "ruleCoverage.html": return try reports.firestoreCoverage(request, project: project, html: verb.hasSuffix(".html"))
            case "test": return try await reports.test(request, project: project)
            case "export" where request.method == .post: return try await ExportDirectoryFiles.export(request, project: project, backend: backend)
            case "import" where request.method == .post: return try await ExportDirectoryFiles.import(request, project: project, backend: backend)
            default: throw OperationRoutes.noRoute(request)
            }
        }
        if segments.count == 4 || segments.count == 5, segments[2] == "rules", segments[3] == "decisions" {
            return try rulesRoutes.decisions(request, id: segments.count == 5 ? segments[4] : nil)
        }
        guard segments.count == 3 else { throw OperationRoutes.noRoute(request) }
        switch (request.method, segments[2]) {
        case (.post, "reset"): return try await resetAll()
        case (.get, "clock"): return clockReading()
        case (.post, "clock"): return try await setClock(request)
        case (.get, "events"): return try OperationsEventStream.open(request, log: backend.operations, ticker: ticker)
        case (.get, "timeline"): return try TimelineRoutes(timelines: backend.timelines, ticker: ticker).respond(request, lanes: nil)
        case (.get, "databases"): return databases()
        case (.get, "namespaces"): return try await namespaces()
        case (.get, "replicas"): return try replicaList()
        case (.post, "replicas:treeWrite"): return try await ReplicaTreeWriteRoute(backend: backend, forwarding: forwarding).respond(request)
        case (.get, "export"), (.post, "export"): return try await ArchiveRoutes(backend: backend, clients: clients).export(request)
        case (.post, "import"): return try await ArchiveRoutes(backend: backend, clients: clients).import(request)
        default: throw OperationRoutes.noRoute(request)
        }
    }

    var rulesRoutes: RulesRoutes { RulesRoutes(rules: backend.rules, ticker: ticker) }

    static func noRoute(_ request: Request) -> FiregateError {
        .notFound("No route for \(request.method) \(request.uri.path)")
    }

    func resetDatabase(_ id: DatabaseID) async throws(FiregateError) -> Response {
        do {
            try await backend.documents.database(id).reset()
        } catch {
            throw .internal("Reset failed: \(error)")
        }
        backend.operations.record(.reset(scope: "documents", fields: [("project", id.project), ("database", id.database)]))
        return JSONResponse.make([:])
    }

    /// POST /emulator/v1/reset: documents, tree and clients; open streams end with an error.
    func resetAll() async throws(FiregateError) -> Response {
        // Sockets first: their onDisconnect operations must not write into the emptied tree.
        connections.reset()
        do {
            try await backend.reset()
        } catch {
            throw .internal("Reset failed: \(error)")
        }
        await clients.removeAll(reason: FiregateError(.aborted, "The emulator was reset."))
        backend.timelines.clear()
        backend.operations.record(.reset(scope: "all", fields: []))
        return JSONResponse.make([:])
    }

    // MARK: Clock

    /// 9999-12-31T23:59:59.999999Z: the clock never goes past what a Timestamp can hold.
    static let latestClockMicros: Int64 = 253_402_300_799_999_999

    func clockReading() -> Response {
        let time = Timestamp(microseconds: backend.clock.readingMicros())
        return JSONResponse.make([
            "time": .string(time.rfc3339),
            "epochMs": .int(time.milliseconds),
            "frozen": .bool(backend.clock.isFrozen),
        ])
    }

    /// `{"time": "<RFC 3339>"}` stops the clock there, `{"time": null}` returns it to the wall
    /// clock, `{"advanceMs": n}` moves it forward.
    func setClock(_ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let time = body["time"]
        let advance = body["advanceMs"]
        guard (time == nil) != (advance == nil) else {
            throw .invalidArgument("Give either \"time\" (RFC 3339, or null for the wall clock) or \"advanceMs\".")
        }
        if let advance {
            guard let ms = advance.integerLike, ms >= 0, ms <= 100 * 365 * 86_400_000 else {
                throw .invalidArgument("advanceMs must be a non-negative integer number of milliseconds (the clock only moves forward).")
            }
            guard backend.clock.readingMicros() + ms * 1000 <= OperationRoutes.latestClockMicros else {
                throw .invalidArgument("advanceMs would move the clock past 9999-12-31T23:59:59.999999Z, the last time Firestore can represent.")
            }
            backend.clock.advance(byMicros: ms * 1000)
        } else if let time {
            if time.isNull {
                backend.clock.set(toMicros: nil)
            } else {
                guard let text = time.stringValue, let parsed = Timestamp(rfc3339: text) else {
                    throw .invalidArgument("time must be an RFC 3339 timestamp such as \"2030-01-01T00:00:00Z\", or null.")
                }
                guard parsed.seconds >= 0, parsed.microseconds <= OperationRoutes.latestClockMicros else {
                    throw .invalidArgument("time must lie between 1970-01-01 and 9999-12-31.")
                }
                backend.clock.set(toMicros: parsed.microseconds)
            }
        }
        return clockReading()
    }

    // MARK: What exists

    func databases() -> Response {
        let list = backend.documents.allDatabases
            .map { ($0.id, $0.documentCount) }
            .filter { $0.1 > 0 }
            .sorted { ($0.0.project, $0.0.database) < ($1.0.project, $1.0.database) }
        return JSONResponse.make(["databases": .array(list.map { id, count in
            ["project": .string(id.project), "database": .string(id.database), "documents": .int(Int64(count))]
        })])
    }

    func namespaces() async throws(FiregateError) -> Response {
        do {
            let names = try await backend.tree.namespaceNames()
            return JSONResponse.make(["namespaces": .array(names.map { .string($0) })])
        } catch {
            throw .internal("Could not list namespaces: \(error)")
        }
    }

    /// `GET /emulator/v1/replicas`: the replicas sharing the PostgreSQL store and the databases
    /// and namespaces each owns; none on the embedded SQLite store.
    func replicaList() throws(FiregateError) -> Response {
        guard let directory = backend.replicas else {
            return JSONResponse.make(["store": "sqlite", "replicas": .array([])])
        }
        let replicas: [ReplicaStatus]
        do {
            replicas = try directory.replicas()
        } catch let error as FiregateError {
            throw error
        } catch {
            throw .unavailable("The replicas could not be read: \(error)")
        }
        return JSONResponse.make(["store": "postgresql", "self": .string(directory.replicaID), "replicas": .array(replicas.map { replica in
            ["id": .string(replica.id), "address": .string(replica.address), "startedAt": .string(replica.startedAt),
             "heartbeatAt": .string(replica.heartbeatAt), "alive": .bool(replica.alive),
             "owns": .array(replica.scopes.map { lease in
                 var entry: OrderedDictionary<String, JSON>
                 switch lease.scope {
                 case .documents(let project, let database): entry = ["project": .string(project), "database": .string(database)]
                 case .tree(let namespace): entry = ["namespace": .string(namespace)]
                 }
                 entry["epoch"] = .int(lease.epoch)
                 entry["leaseUntil"] = .string(lease.leaseUntil)
                 entry["expired"] = .bool(lease.expired)
                 entry["seq"] = .int(lease.seq)
                 return .object(entry)
             }),
             "clients": .array(replica.clients.map { .object(["id": .string($0.id), "epoch": .int($0.epoch)]) })]
        })])
    }
}
