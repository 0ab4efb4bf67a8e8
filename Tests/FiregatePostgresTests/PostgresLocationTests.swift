@testable import FiregatePostgres
import FiregateModel
import XCTest

/// `--store` URLs as libpq writes them; no server needed.
final class PostgresLocationTests: XCTestCase {
    func testTCPURLWithUserPasswordPortAndDatabase() throws {
        let location = try PostgresLocation("postgresql://fg:s%40cret@db.example:6543/firegate")
        XCTAssertEqual(location.endpoint, .tcp(host: "db.example", port: 6543))
        XCTAssertEqual(location.user, "fg")
        XCTAssertEqual(location.password, "s@cret")
        XCTAssertEqual(location.database, "firegate")
        XCTAssertEqual(location.tls, .prefer)
        XCTAssertFalse(location.description.contains("cret"), "the password never reaches logs")
    }

    func testSocketDirectoryFromTheHostParameter() throws {
        let location = try PostgresLocation("postgresql:///firegate?host=/run/postgresql&port=55432&user=fg")
        XCTAssertEqual(location.endpoint, .socket(path: "/run/postgresql/.s.PGSQL.55432"))
        XCTAssertEqual(location.user, "fg")
        XCTAssertEqual(location.tls, .disable)
        XCTAssertEqual(try PostgresLocation("postgres://fg@/db?host=/tmp").endpoint, .socket(path: "/tmp/.s.PGSQL.5432"))
    }

    func testBadURLsAreInvalidArgumentsThatSayWhy() {
        let cases = [
            ("mysql://x/y", "not a PostgreSQL URL"),
            ("postgresql://h:99999/db", "port"),
            ("postgresql://h/db?sslmode=maybe", "sslmode"),
            ("postgresql://h/db?colour=blue", "unknown parameter"),
            ("postgresql://h/", "no database"),
            ("postgresql:///db", "no host"),
        ]
        for (url, reason) in cases {
            XCTAssertThrowsError(try PostgresLocation(url), url) { error in
                let error = error as? FiregateError
                XCTAssertEqual(error?.status, .invalidArgument, url)
                XCTAssertTrue(error?.message.contains(reason) == true, "\(url): \(error?.message ?? "")")
            }
        }
    }
}
