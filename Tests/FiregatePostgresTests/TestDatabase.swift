@testable import FiregatePostgres
import FiregateModel
import PostgresNIO
import Foundation
import Logging
import XCTest

/// A fresh PostgreSQL database per test, on the server named by FIREGATE_TEST_STORE (CI starts
/// one with `scripts/postgres-test-cluster.sh`; without it these tests are skipped, saying so).
struct TestDatabase {
    let location: PostgresLocation

    init() throws {
        guard let url = ProcessInfo.processInfo.environment["FIREGATE_TEST_STORE"], !url.isEmpty else {
            throw XCTSkip("FIREGATE_TEST_STORE is not set: start PostgreSQL with scripts/postgres-test-cluster.sh and export what it prints")
        }
        let admin = try PostgresLocation(url)
        var location = admin
        location.database = "fgtest_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let session = PostgresSession(location: admin, logger: Logger(label: "test"))
        defer { session.close() }
        try session.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(location.database)"))
        self.location = location
    }

    /// A store as replica `replica` with a lease of `leaseSeconds`.
    func store(_ replica: String, leaseSeconds: Int = 10) throws -> PostgresStore {
        try PostgresStore(location: location, replicaID: replica, address: "http://\(replica)", leaseSeconds: leaseSeconds)
    }

    /// Runs SQL directly, as an operator would (to expire a lease, to look at the rows).
    @discardableResult
    func sql(_ text: String) throws -> [[String?]] {
        let session = PostgresSession(location: location, logger: Logger(label: "test"))
        defer { session.close() }
        return try session.query(PostgresQuery(unsafeSQL: text)).rows.map { row in
            row.map { cell in cell.bytes.map { String(buffer: $0) } }
        }
    }
}
