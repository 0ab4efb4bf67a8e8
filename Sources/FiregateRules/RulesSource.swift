/// A place in a rules source: 1-based line and column (in characters), as the emulators report
/// them in issues and denial messages (`@ L12`).
public struct RulesPosition: Sendable, Hashable, CustomStringConvertible {
    public let line: Int
    public let column: Int

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    public var description: String { "L\(line):\(column)" }
}

/// A problem found in a ruleset, in the shape of the emulators' `issues`: an ERROR keeps the
/// ruleset from loading; a WARNING does not.
public struct RulesIssue: Sendable, Hashable, Error, CustomStringConvertible {
    public enum Severity: String, Sendable {
        case error = "ERROR"
        case warning = "WARNING"
    }

    public let position: RulesPosition
    public let description: String
    public let severity: Severity

    public init(_ description: String, at position: RulesPosition, severity: Severity = .error) {
        self.position = position
        self.description = description
        self.severity = severity
    }
}
