import FiregateModel
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// NOTIFY as a doorbell (docs/replicas.md): the owner rings `firegate` after a commit
/// with the scope and its new `seq`; a follower that hears it polls the log at once instead of at
/// its next 250 ms tick. Only a doorbell: a lost notification (the LISTEN connection dropped,
/// the replica was busy) costs latency, never a change, since the tail polls anyway. The
/// LISTEN connection is opened again after it drops.
final class PostgresDoorbell: Sendable {
    static let channel = "firegate"

    private let location: PostgresLocation
    private let logger: Logger
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(location: PostgresLocation, logger: Logger) {
        self.location = location
        self.logger = logger
    }

    /// Listens until `stop`, calling `heard` for every notification (and once after each
    /// reconnection, for what may have been missed meanwhile).
    func listen(_ heard: @escaping @Sendable () -> Void) {
        let location = location, logger = logger
        let listening = Task {
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresConnection.connect(configuration: try location.connectionConfiguration(), id: 0, logger: logger)
                    heard()
                    do {
                        try await connection.listen(on: PostgresDoorbell.channel) { notifications in
                            for try await _ in notifications { heard() }
                        }
                    } catch {
                        if !Task.isCancelled { logger.warning("PostgreSQL LISTEN ended: \(error); listening again") }
                    }
                    try? await connection.close()
                } catch {
                    if !Task.isCancelled { logger.warning("PostgreSQL LISTEN could not connect: \(error)") }
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        task.withLock { $0 = listening }
    }

    func stop() {
        task.withLock { $0?.cancel(); $0 = nil }
    }
}

extension PostgresStore {
    /// Rings the doorbell for the scopes a commit moved, in one small statement of its own (never
    /// inside the data's transaction, so NOTIFY's commit lock is not held across its flush), and
    /// only while other replicas are alive to hear it.
    func ring(_ heads: [String: Int64]) {
        guard !heads.isEmpty, othersAlive.withLock({ $0 }) else { return }
        let payloads = heads.map { "\($0.key) \($0.value)" }
        do {
            try writer.query("SELECT pg_notify(\(PostgresDoorbell.channel), p) FROM unnest(\(payloads)::text[]) AS p")
        } catch {
            logger.warning("PostgreSQL NOTIFY failed (followers will poll): \(error)")
        }
    }
}
