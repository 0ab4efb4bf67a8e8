import FiregateModel
import Foundation
import PostgresNIO

/// Where the PostgreSQL store is, from a `--store` URL as libpq writes them:
/// `postgresql://user[:password]@host[:port]/db` (TCP) or `postgresql:///db?host=/socket/dir`
/// (a unix socket: `/socket/dir/.s.PGSQL.<port>`). `user`, `password`, `port`, `host` and
/// `sslmode` (`disable`, `prefer`, `require`) may also come as query parameters.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        case socket(path: String)
    }

    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public var endpoint: Endpoint
    public var user: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    /// Whether `text` names a PostgreSQL store at all (the other stores are SQLite's).
    public static func isPostgres(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    public init(_ text: String) throws(FiregateError) {
        guard PostgresLocation.isPostgres(text), let url = URLComponents(string: text) else {
            throw .invalidArgument("--store \(text.debugDescription) is not a PostgreSQL URL (postgresql://user@host:port/db or postgresql:///db?host=/socket/dir).")
        }
        var query: [String: String] = [:]
        for item in url.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let known: Set<String> = ["host", "port", "user", "password", "sslmode", "dbname"]
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidArgument("--store: unknown parameter \(unknown.debugDescription) (known: \(known.sorted().joined(separator: ", "))).")
        }
        let portText = query["port"] ?? url.port.map(String.init) ?? "5432"
        guard let port = Int(portText), (1...65535).contains(port) else {
            throw .invalidArgument("--store: port \(portText.debugDescription) is not a port number.")
        }
        let host = query["host"] ?? url.host.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding } ?? ""
        if host.hasPrefix("/") {
            endpoint = .socket(path: (host as NSString).appendingPathComponent(".s.PGSQL.\(port)"))
        } else if host.isEmpty {
            throw .invalidArgument("--store: no host; give one (postgresql://user@127.0.0.1:5432/db) or a socket directory (?host=/run/postgresql).")
        } else {
            endpoint = .tcp(host: host, port: port)
        }
        let path = url.percentEncodedPath.hasPrefix("/") ? String(url.percentEncodedPath.dropFirst()) : url.percentEncodedPath
        database = query["dbname"] ?? path.removingPercentEncoding ?? path
        guard !database.isEmpty else { throw .invalidArgument("--store: no database name (postgresql://…/<database>).") }
        user = query["user"] ?? url.percentEncodedUser.flatMap { $0.removingPercentEncoding }
            ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        password = query["password"] ?? url.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        let mode = query["sslmode"] ?? (host.hasPrefix("/") ? "disable" : "prefer")
        guard let tls = TLSMode(rawValue: mode) else {
            throw .invalidArgument("--store: sslmode \(mode.debugDescription) is not one of disable, prefer, require.")
        }
        self.tls = tls
    }

    /// The location without its password, for logs and errors.
    public var description: String {
        switch endpoint {
        case .tcp(let host, let port): "postgresql://\(user)@\(host):\(port)/\(database)"
        case .socket(let path): "postgresql://\(user)@/\(database) (socket \(path))"
        }
    }

    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        switch endpoint {
        case .socket(let path):
            return PostgresConnection.Configuration(unixSocketPath: path, username: user, password: password, database: database)
        case .tcp(let host, let port):
            let tls: PostgresConnection.Configuration.TLS
            switch self.tls {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            return PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
    }
}
