import FiregateModel
import HummingbirdTesting
import Synchronization
import XCTest

@testable import FiregateHTTP

/// `GET /clients/{id}` is assembled from every part of an edge client (caches, queue, targets,
/// network, gates, watch, tabs, collector). This pins what it says after a fixed script for a
/// memory, a persistent, a scripted-watch and a tab client, so moving state between components
/// cannot drop or change a field unnoticed. Times and byte sizes are masked (they vary by run);
/// every other value, and every key, is compared.
final class ClientStateSnapshotTests: XCTestCase {
    /// The state's leaves as `path = value` lines, sorted.
    static func leaves(_ json: JSON, _ path: String = "") -> [String] {
        switch json {
        case .object(let members):
            return members.flatMap { leaves($0.value, path.isEmpty ? $0.key : "\(path).\($0.key)") }.sorted()
        case .array(let items):
            return items.isEmpty ? ["\(path) = []"] : items.enumerated().flatMap { leaves($0.element, "\(path)[\($0.offset)]") }
        case .string(let text) where text.range(of: #"^\d{4}-\d\d-\d\dT"#, options: .regularExpression) != nil:
            return ["\(path) = <time>"]
        case .int where path.lowercased().hasSuffix("bytes"):
            return ["\(path) = <bytes>"]
        default:
            return ["\(path) = \(JSONWriter.string(json))"]
        }
    }

    /// The same calls for each kind of client: a document read from the backend, a write queued
    /// offline, and (unless the watch is scripted) back online with the write acknowledged.
    func state(of id: String, settings: String, scripted: Bool = false) async throws -> [String] {
        let lines = Mutex<[String]>([])
        try await withServer { client, _ in
            _ = try await client.send(.patch, "\(base)/c/a", #"{"fields":{"n":{"integerValue":"1"}}}"#)
            let created = try await client.send(.put, "/clients/\(id)", settings)
            XCTAssertEqual(created.status, 200, created.text)
            if scripted { _ = try await client.send(.put, "/clients/\(id)/gates", #"{"scriptedWatch":true}"#) }
            if !scripted {
                let read = try await client.send(.get, "/clients/\(id)\(base)/c/a")
                XCTAssertEqual(read.status, 200, read.text)
            }
            _ = try await client.send(.post, "/clients/\(id):disableNetwork")
            let write = try await client.send(.patch, "/clients/\(id)\(base)/c/b", #"{"fields":{"n":{"integerValue":"2"}}}"#)
            XCTAssertEqual(write.status, 200, write.text)
            if !scripted {
                _ = try await client.send(.post, "/clients/\(id):enableNetwork")
                let flushed = try await client.send(.post, "/clients/\(id):waitForPendingWrites?timeoutMs=10000")
                XCTAssertEqual(flushed.status, 200, flushed.text)
            }
            let state = try await client.send(.get, "/clients/\(id)")
            let leaves = ClientStateSnapshotTests.leaves(try XCTUnwrap(state.json, state.text))
            lines.withLock { $0 = leaves }
        }
        return lines.withLock { $0 }
    }

    func assertState(_ lines: [String], _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
        let wanted = expected.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, wanted, "\n" + lines.joined(separator: "\n"), file: file, line: line)
    }

    func testMemoryClient() async throws {
        assertState(try await state(of: "M", settings: #"{"project":"p","persistence":"memory"}"#), Self.memory)
    }

    func testPersistentClient() async throws {
        assertState(try await state(of: "P", settings: #"{"project":"p"}"#), Self.persistent)
    }

    func testScriptedWatchClient() async throws {
        assertState(try await state(of: "S", settings: #"{"project":"p","persistence":"memory"}"#, scripted: true), Self.scripted)
    }

    func testTabClient() async throws {
        assertState(try await state(of: "T", settings: #"{"project":"p","platform":"web","persistence":"persistent","sharedWith":"db"}"#), Self.tab)
    }

    static let memory = """
        auth.uid = null
        auth.writesPaused = false
        cache.bytes = <bytes>
        cache.documentBytes = <bytes>
        cache.documents = 2
        cache.evictions = 0
        cache.hits = 0
        cache.misses = 0
        cache.mutationBytes = <bytes>
        cache.targetBytes = <bytes>
        cache.targets = 0
        faults.recovering = 0
        faults.storage = []
        gates.holdWatch = false
        gates.holdWrites = false
        gates.maxConcurrentLimboResolutions = 100
        gates.scriptedWatch = false
        gc.cacheSizeBytes = <bytes>
        gc.garbageCollector = "lru"
        gc.lastRun = null
        gc.runs = 0
        id = "M"
        indexes.autoCreation = false
        indexes.count = 0
        indexes.entries = 0
        indexes.used = false
        lastEventId = 0
        listeners = 0
        network.latencyMs = 0
        network.online = true
        pendingWrites = 0
        settings.cacheSizeBytes = <bytes>
        settings.clockOffsetMs = 0
        settings.database = "(default)"
        settings.garbageCollector = "lru"
        settings.heartbeatTimeoutMs = null
        settings.namespace = "p"
        settings.persistence = "memory"
        settings.platform = "apple"
        settings.project = "p"
        settings.treeCacheSizeBytes = <bytes>
        terminated = false
        tree.cache.activeQueries = 0
        tree.cache.bytes = <bytes>
        tree.cache.sizeBytes = <bytes>
        tree.cache.trackedQueries = 0
        tree.connected = false
        tree.keepSynced = []
        tree.listeners = 0
        tree.onDisconnect = []
        tree.pendingWrites = 0
        watch.scripted = false
        """
    /// The memory client's state but for these lines (changed or added).
    static let persistent = memory.with("""
        id = "P"
        indexes.used = true
        settings.persistence = "persistent"
        """)
    /// The memory client's state but for these lines (changed or added).
    static let scripted = memory.with("""
        cache.documents = 0
        gates.scriptedWatch = true
        id = "S"
        network.online = false
        pendingWrites = 1
        watch.enqueuedLimboDocuments = []
        watch.limboDocuments = []
        watch.offline = true
        watch.requestCount = 0
        watch.scripted = true
        watch.stream = "closed"
        watch.targets = []
        """)
    /// The memory client's state but for these lines (changed or added).
    static let tab = memory.with("""
        engine = "sharedWith/db"
        id = "T"
        indexes.used = true
        settings.persistence = "persistent"
        settings.platform = "web"
        tab.activeTabs = 1
        tab.frozen = false
        tab.networkEnabled = true
        tab.open = true
        tab.primary = true
        tab.primaryTab = "T"
        tab.sharedWith = "db"
        tab.tabManager = "multiple"
        tab.visible = true
        """)
}

extension String {
    /// These state lines with `changes` applied: a change replaces the line of its key, or is added.
    func with(_ changes: String) -> String {
        var lines = Dictionary(split(separator: "\n").map { (String($0.split(separator: " = ")[0]), String($0)) }, uniquingKeysWith: { $1 })
        for change in changes.split(separator: "\n") { lines[String(change.split(separator: " = ")[0])] = String(change) }
        return lines.values.sorted().joined(separator: "\n")
    }
}
