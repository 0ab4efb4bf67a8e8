import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation
import XCTest

final class TreeBackendTests: XCTestCase {
    func testWritesAndReadsPerNamespace() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("one", "users/alan", ["name": "Alan", "born": 1912])
        try await backend.set("two", "users/alan", "other")
        let one = try await backend.get("one", "users")
        let two = try await backend.get("two", "users/alan")
        let none = try await backend.get("three", "")
        XCTAssertEqual(one, #"{"alan":{"born":1912,"name":"Alan"}}"#)
        XCTAssertEqual(two, #""other""#)
        XCTAssertEqual(none, "null")
    }

    func testNamespacesAndReset() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tree-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let (backend, _) = try makeTree(directory: directory)
            try await backend.set("stored", "x", 1)
        }
        let (backend, _) = try makeTree(directory: directory)
        try await backend.set("fresh", "y", 2)
        try await backend.set("emptied", "z", 3)
        try await backend.set("emptied", "z", nil)
        let names = try await backend.namespaceNames()
        XCTAssertEqual(names, ["fresh", "stored"])
        let stream = try await backend.subscribe(namespace: "stored", key: TreeStreamKey(path: .root, query: nil, format: .plain))
        _ = await stream.next()
        try await backend.reset()
        let after = try await backend.namespaceNames()
        XCTAssertEqual(after, [])
        let cleared = try await stream.nextText()
        XCTAssertEqual(cleared, "event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n")
        await backend.unsubscribe(stream)
    }

    func testMultiPathUpdateMerges() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("n", "users", ["alan": ["nick": "a", "x": 1], "grace": ["nick": "g"]])
        try await backend.update("n", "users", ["alan/nick": "A", "grace": ["nick": "G"], "new/deep/key": 1, "gone": nil])
        let users = try await backend.get("n", "users")
        XCTAssertEqual(users, #"{"alan":{"nick":"A","x":1},"grace":{"nick":"G"},"new":{"deep":{"key":1}}}"#)
    }

    func testOverlappingUpdateWritesNothing() async throws {
        let (backend, _) = try makeTree()
        do {
            try await backend.update("n", "a", ["b": 1, "b/c": 2])
            XCTFail("expected an error")
        } catch let error as FiregateError {
            XCTAssertEqual(error.status, .invalidArgument)
        }
        let value = try await backend.get("n", "")
        XCTAssertEqual(value, "null")
    }

    func testServerValuesInUpdatesSeeTheValueBefore() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("n", "c", ["n": 1])
        try await backend.update("n", "c", ["n": [".sv": ["increment": 41]], "at": [".sv": "timestamp"]])
        let n = try await backend.get("n", "c/n")
        XCTAssertEqual(n, "42")
        let at = try await backend.read(namespace: "n", path: path("c/at"))
        XCTAssertNotNil(at.leaf?.number)
    }

    func testConditionalWrites() async throws {
        let (backend, _) = try makeTree()
        guard case .written = try await backend.set("n", "x", 1, ifMatch: "null_etag") else { return XCTFail() }
        let current = TreeETag.of(tree(1))
        guard case .conflict(let value, let etag) = try await backend.set("n", "x", 2, ifMatch: "null_etag") else { return XCTFail() }
        XCTAssertEqual(value, tree(1))
        XCTAssertEqual(etag, current)
        guard case .written(let result) = try await backend.set("n", "x", 2, ifMatch: current) else { return XCTFail() }
        XCTAssertEqual(result.etag, TreeETag.of(tree(2)))
        let x = try await backend.get("n", "x")
        XCTAssertEqual(x, "2")
    }

    func testConcurrentCompareAndSetLosesNoIncrement() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("n", "counter", 0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<25 {
                        while true {
                            let current = try await backend.read(namespace: "n", path: path("counter"))
                            let next = JSON.int((current.leaf.flatMap { if case .int(let i) = $0 { i } else { nil } } ?? 0) + 1)
                            if case .written = try await backend.set("n", "counter", next, ifMatch: TreeETag.of(current)) { break }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let counter = try await backend.get("n", "counter")
        XCTAssertEqual(counter, "200")
    }

    func testPushIDsAreOrderedAndStored() async throws {
        let (backend, _) = try makeTree()
        var keys: [String] = []
        for i in 0..<20 {
            let outcome = try await backend.write(namespace: "n", TreeWriteRequest(path: path("list"), operation: .push(.node(tree(.int(Int64(i)))))))
            guard case .written(let result) = outcome, let key = result.pushKey else { return XCTFail() }
            keys.append(key)
        }
        XCTAssertEqual(keys, keys.sorted())
        let stored = try await backend.read(namespace: "n", path: path("list"))
        XCTAssertEqual(Array(stored.children!.keys), keys)
    }

    func testTreeSurvivesReopeningTheStore() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tree-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let (backend, _) = try makeTree(directory: directory)
            try await backend.set("n", "", ["a": ["b": 1, ".priority": 4], "leaf": "v", "arr": [1, 2, 3], "gone": 1])
            try await backend.set("n", "leaf/child", true)
            try await backend.update("n", "", ["arr/1": nil, "gone": nil, "a/c": [".value": 2, ".priority": "p"]])
            try await backend.set("n", "a/.priority", 5)
            try await backend.set("other", "x", 1)
        }
        let (reopened, _) = try makeTree(directory: directory)
        let value = try await reopened.read(namespace: "n", path: .root)
        XCTAssertEqual(TreeNodeWriter.string(value, format: .export),
                       #"{"a":{"b":1,"c":{".value":2,".priority":"p"},".priority":5},"arr":{"0":1,"2":3},"leaf":{"child":true}}"#)
        let other = try await reopened.get("other", "")
        XCTAssertEqual(other, #"{"x":1}"#)
    }

    func testStreamSeesFirstPutThenChanges() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("n", "room", ["a": 1])
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: path("room"), query: nil, format: .plain))
        let first = try await stream.nextText()
        XCTAssertEqual(first, "event: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1}}\n\n")
        try await backend.set("n", "room/b", 2)
        try await backend.update("n", "", ["room/c": 3, "elsewhere": 1])
        try await backend.set("n", "", ["room": ["a": 1, "b": 2, "c": 3], "elsewhere": 2])  // room unchanged: silent
        try await backend.set("n", "", nil)
        let events = [try await stream.nextText(), try await stream.nextText(), try await stream.nextText()]
        XCTAssertEqual(events, [
            "event: put\ndata: {\"path\":\"/b\",\"data\":2}\n\n",
            "event: patch\ndata: {\"path\":\"/\",\"data\":{\"c\":3}}\n\n",
            "event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n",
        ])
        await backend.unsubscribe(stream)
        let ended = await stream.next()
        XCTAssertNil(ended)
    }

    func testStreamsOnOneLocationShareFrames() async throws {
        let (backend, _) = try makeTree()
        let key = TreeStreamKey(path: path("shared"), query: nil, format: .plain)
        var streams: [TreeStreamSubscription] = []
        for _ in 0..<50 { streams.append(try await backend.subscribe(namespace: "n", key: key)) }
        let counts = await backend.streamCounts()
        XCTAssertEqual(counts.streams, 50)
        XCTAssertEqual(counts.groups, 1)
        try await backend.set("n", "shared/x", 1)
        var frames: [TreeStreamFrame] = []
        for stream in streams {
            _ = await stream.next()
            frames.append(await stream.next()!)
        }
        XCTAssertTrue(frames.allSatisfy { $0 === frames[0] }, "one frame object encoded once for the group")
        for stream in streams { await backend.unsubscribe(stream) }
        let after = await backend.streamCounts()
        XCTAssertEqual(after.groups, 0)
    }

    func testSlowReaderIsResyncedWithinItsBound() async throws {
        var settings = TreeStreamSettings()
        settings.maxBufferedBytes = 4096
        let (backend, _) = try makeTree(settings: settings)
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: path("s"), query: nil, format: .plain))
        let payload = String(repeating: "x", count: 500)
        for i in 0..<100 { try await backend.set("n", "s/k\(i % 5)", .string(payload + "\(i)")) }
        XCTAssertLessThanOrEqual(stream.bufferedBytes, 4096 + 4096)
        XCTAssertGreaterThan(stream.resyncCount, 0)
        // Draining yields a full put whose value is the final state.
        var last = ""
        while stream.bufferedBytes > 0, let frame = await stream.next() { last = String(decoding: frame.bytes, as: UTF8.self) }
        XCTAssertTrue(last.contains("\(payload)99"))
        await backend.unsubscribe(stream)
    }

    func testQueryStreamWindow() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("n", "scores", ["a": ["s": 1], "b": ["s": 2], "c": ["s": 3]])
        let query = TreeQuery(index: .child(path("s")), limit: .last(2))
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: path("scores"), query: query, format: .plain))
        let first = try await stream.nextText()
        XCTAssertEqual(first, "event: put\ndata: {\"path\":\"/\",\"data\":{\"b\":{\"s\":2},\"c\":{\"s\":3}}}\n\n")
        try await backend.set("n", "scores/a/s", 0)   // outside the window
        try await backend.set("n", "scores/a/s", 10)  // enters; b leaves
        let next = try await stream.nextText()
        XCTAssertEqual(next, "event: patch\ndata: {\"path\":\"/\",\"data\":{\"a\":{\"s\":10},\"b\":null}}\n\n")
        await backend.unsubscribe(stream)
    }

    func testOversizedLocationIsCancelled() async throws {
        var settings = TreeStreamSettings()
        settings.maxSnapshotBytes = 100
        let (backend, _) = try makeTree(settings: settings)
        try await backend.set("n", "big", .string(String(repeating: "x", count: 200)))
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: path("big"), query: nil, format: .plain))
        let cancel = try await stream.nextText()
        XCTAssertTrue(cancel?.hasPrefix("event: cancel\n") == true)
        let end = await stream.next()
        XCTAssertNil(end)
    }

    func testKeepAlivesArrive() async throws {
        var settings = TreeStreamSettings()
        settings.keepAliveInterval = .milliseconds(50)
        let (backend, _) = try makeTree(settings: settings)
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: .root, query: nil, format: .plain))
        _ = await stream.next()
        let keepAlive = try await stream.nextText()
        XCTAssertEqual(keepAlive, "event: keep-alive\ndata: null\n\n")
        await backend.unsubscribe(stream)
    }
}

/// Storage that fails every commit after the first `allowed` ones.
final class FailingTreeStorage: TreeStorage, @unchecked Sendable {
    let inner: SQLiteTreeStorage
    let allowed: Int
    private var commits = 0

    init(inner: SQLiteTreeStorage, allowed: Int) {
        self.inner = inner
        self.allowed = allowed
    }

    func loadRows(namespace: String) throws -> [TreeStorageRow] { try inner.loadRows(namespace: namespace) }

    func namespaces() throws -> [String] { try inner.namespaces() }

    func commit(_ batches: [TreeStorageBatch]) async throws {
        commits += 1
        if commits > allowed { throw FiregateError.internal("disk full") }
        try await inner.commit(batches)
    }
}

final class TreeStorageFailureTests: XCTestCase {
    func testFailedWriteIsReportedAndMemoryFallsBackToStorage() async throws {
        let store = try SQLiteStore.inMemory(migrations: TreeBackend.migrations)
        let backend = TreeBackend(storage: FailingTreeStorage(inner: SQLiteTreeStorage(store: store), allowed: 1), clock: ServerClock())
        try await backend.set("n", "a", 1)
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: .root, query: nil, format: .plain))
        _ = await stream.next()
        do {
            try await backend.set("n", "a", 2)
            XCTFail("expected the write to fail")
        } catch let error as FiregateError {
            XCTAssertEqual(error.status, .unavailable)
        }
        let a = try await backend.get("n", "a")
        XCTAssertEqual(a, "1")
        var texts: [String] = []
        while let frame = await stream.next() { texts.append(String(decoding: frame.bytes, as: UTF8.self)) }
        XCTAssertTrue(texts.last?.hasPrefix("event: cancel") == true, "\(texts)")
    }
}

final class TreeEncodedReadTests: XCTestCase {
    func testEncodedReadsFollowEveryKindOfChange() async throws {
        let (backend, _) = try makeTree()
        func read(_ location: String) async throws -> String {
            String(decoding: try await backend.readEncoded(namespace: "n", path: path(location)), as: UTF8.self)
        }
        try await backend.set("n", "a", ["b": ["c": 1], "d": 2])
        for location in ["", "a", "a/b", "a/b/c", "a/d", "x"] { _ = try await read(location) }
        try await backend.set("n", "a/b/c", 5)                      // below a cached ancestor
        var a = try await read("a")
        XCTAssertEqual(a, #"{"b":{"c":5},"d":2}"#)
        let c = try await read("a/b/c")
        XCTAssertEqual(c, "5")
        try await backend.update("n", "", ["a/d": 3, "x": "new"])   // merge entries
        a = try await read("a")
        let x = try await read("x")
        XCTAssertEqual(a, #"{"b":{"c":5},"d":3}"#)
        XCTAssertEqual(x, #""new""#)
        try await backend.set("n", "", nil)                          // above everything
        let b = try await read("a/b")
        XCTAssertEqual(b, "null")
        for i in 0..<100 { _ = try await read("many/\(i)") }         // the cache stays bounded
        try await backend.set("n", "many/99", 1)
        let last = try await read("many/99")
        XCTAssertEqual(last, "1")
    }
}

final class TreeStreamSequenceTests: XCTestCase {
    func testSubscriptionIsAnAsyncSequenceOfStructuredUpdates() async throws {
        let (backend, _) = try makeTree()
        try await backend.set("n", "a", ["x": 1])
        let stream = try await backend.subscribe(namespace: "n", key: TreeStreamKey(path: path("a"), query: nil, format: .plain))
        try await backend.set("n", "a/y", 2)
        await backend.cancelStreams(namespace: "n", reason: "done")
        var updates: [TreeStreamUpdate?] = []
        var kinds: [TreeStreamFrame.Kind] = []
        for await frame in stream {
            updates.append(frame.update)
            kinds.append(frame.kind)
        }
        XCTAssertEqual(kinds, [.put, .put, .cancel])
        XCTAssertEqual(updates, [.put(.root, tree(["x": 1])), .put(path("y"), tree(2)), nil])
    }
}
