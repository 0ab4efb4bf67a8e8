import FiregateModel
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// One PostgreSQL connection, used synchronously: it connects on first use and again after
/// it was lost, and turns PostgreSQL's errors into `FiregateError`s (UNAVAILABLE when the
/// server cannot be reached, so a request may be retried; INTERNAL otherwise).
///
/// Synchronous because the storage protocols are (SQLite's loads block their caller too). The
/// waits are on futures that the connections' own event loop completes, never on
/// Swift-concurrency work or on the server's event loops, so no caller can starve them.
final class PostgresSession: Sendable {
    private let location: PostgresLocation
    private let logger: Logger
    private let current = Mutex<PostgresConnection?>(nil)

    init(location: PostgresLocation, logger: Logger) {
        self.location = location
        self.logger = logger
    }

    /// The open connection, connecting when there is none.
    private func connection() throws(FiregateError) -> PostgresConnection {
        if let open = current.withLock({ $0 }), !open.isClosed { return open }
        let opened: PostgresConnection
        do {
            let configuration = try location.connectionConfiguration()
            opened = try PostgresConnection.connect(on: PostgresSession.loop, configuration: configuration,
                                                    id: PostgresSession.nextID(), logger: logger).blockingResult()
        } catch {
            throw PostgresSession.mapped(error, location: location)
        }
        let kept = current.withLock { slot -> PostgresConnection in
            if let other = slot, !other.isClosed { return other }
            slot = opened
            return opened
        }
        if kept !== opened { PostgresSession.closeAndWait(opened) }
        return kept
    }

    /// Runs one statement (its own transaction unless one is open on this session) and
    /// returns every row.
    @discardableResult
    func query(_ query: PostgresQuery) throws(FiregateError) -> PostgresQueryResult {
        let connection = try connection()
        do {
            return try connection.query(query, logger: logger).blockingResult()
        } catch {
            let mapped = PostgresSession.mapped(error, location: location)
            if mapped.status == .unavailable { drop(connection) }
            throw mapped
        }
    }

    /// Runs `body` between BEGIN and COMMIT (ROLLBACK when it throws) on this one connection.
    /// The caller must be the session's only user meanwhile (the store's commit thread is).
    func transaction<T>(isolation: String = "READ COMMITTED", _ body: () throws(FiregateError) -> T) throws(FiregateError) -> T {
        try query(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation)"))
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    enum Outcome<T> {
        case commit(T)
        case rollback(T)
    }

    /// `transaction` whose body decides, by its answer, to commit or roll back.
    func transaction<T>(_ body: () throws(FiregateError) -> Outcome<T>) throws(FiregateError) -> T {
        try query("BEGIN")
        let outcome: Outcome<T>
        do {
            outcome = try body()
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
        switch outcome {
        case .commit(let value):
            try query("COMMIT")
            return value
        case .rollback(let value):
            try query("ROLLBACK")
            return value
        }
    }

    /// Closes the connection; the next call opens another.
    func close() {
        if let open = current.withLock({ slot -> PostgresConnection? in defer { slot = nil }; return slot }) { PostgresSession.closeAndWait(open) }
    }

    private func drop(_ connection: PostgresConnection) {
        current.withLock { slot in if slot === connection { slot = nil } }
        PostgresSession.closeAndWait(connection)
    }

    deinit { close() }

    /// Closes and waits (a connection must be closed before it goes; never called on NIO's threads).
    private static func closeAndWait(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        _ = try? closing.blockingResult()
    }

    /// The connections' own event loop, apart from the server's: a load that waits on it from a
    /// server event loop (a document read on the HTTP fast path, first use of a database) then
    /// waits for another thread, never for itself.
    private static let loop = MultiThreadedEventLoopGroup(numberOfThreads: 1).next()

    private static let ids = Atomic<Int>(0)
    private static func nextID() -> Int { ids.add(1, ordering: .relaxed).newValue }

    /// PostgreSQL's error in the store's terms: a connection that cannot be made or was lost,
    /// or a server shutting down or out of resources, is UNAVAILABLE; a serialization failure
    /// is ABORTED; anything else is a defect, INTERNAL.
    static func mapped(_ error: any Error, location: PostgresLocation) -> FiregateError {
        if let error = error as? FiregateError { return error }
        guard let error = error as? PSQLError else {
            return FiregateError(.unavailable, "PostgreSQL at \(location) is unreachable: \(error)")
        }
        if error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "\(error)"
            if state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") {
                return FiregateError(.unavailable, "PostgreSQL at \(location) is unavailable: \(message) (\(state))")
            }
            if state == "40001" || state == "40P01" { return FiregateError(.aborted, "PostgreSQL: \(message) (\(state)); retry.") }
            // A data exception (a value PostgreSQL will not store) comes from the request.
            if state.hasPrefix("22") { return FiregateError(.invalidArgument, "PostgreSQL cannot store this: \(message) (\(state))") }
            return FiregateError(.internal, "PostgreSQL: \(message) (\(state))")
        }
        return FiregateError(.unavailable, "PostgreSQL at \(location) is unreachable: \(error.code)\(error.underlying.map { " (\($0))" } ?? "")")
    }
}

extension EventLoopFuture where Value: Sendable {
    /// The future's result, waiting for it on this thread. Unlike `wait()`, allowed on one of
    /// the server's event loops: the connections run on their own loop (`PostgresSession.loop`),
    /// so the thread that completes the future is never the one waiting.
    func blockingResult() throws -> Value {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Value, any Error>?>(nil)
        whenComplete { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0! }.get()
    }
}
