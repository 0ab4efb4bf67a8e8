/// Where `get`/`exists` (and their `After` forms) read documents: the engine's store for a real
/// request, a table for tests and the dry run. Paths are full (`databases/{d}/documents/…`).
public protocol RulesDocumentReader {
    /// The resource (`{data, id, __name__}`) at `path`, nil when missing.
    func resource(at path: [String], after: Bool) -> RulesValue?
}

/// One subexpression evaluated: where it is and what it gave.
public struct RulesVisit: Sendable {
    public let position: RulesPosition
    public let result: Result<RulesValue, RulesError>
}

/// One `get`/`exists` (`after` for `getAfter`/`existsAfter`) and whether the document was there.
public struct RulesDocumentAccess: Sendable, Equatable {
    public let path: [String]
    public let after: Bool
    /// What was read (nil: no document), so the decision can be evaluated again for its trace.
    public let resource: RulesValue?
    public var found: Bool { resource != nil }
}

/// Answers a decision's reads from what it read the first time: evaluating again with it gives
/// the same result, with every subexpression's value (traces are made this way, on demand).
public struct RecordedDocumentReader: RulesDocumentReader {
    let accesses: [RulesDocumentAccess]

    public init(_ accesses: [RulesDocumentAccess]) {
        self.accesses = accesses
    }

    public func resource(at path: [String], after: Bool) -> RulesValue? {
        accesses.first { $0.path == path && $0.after == after }?.resource
    }
}

/// The limits of one evaluation (docs/wire/security-rules.md: Access calls, Limits).
public struct RulesLimits: Sendable {
    public var accessCalls = 10
    public var expressions = 1_000
    public var callDepth = 20

    public init() {}
}

/// Evaluates expressions with the rules language's semantics: errors are values that `&&` and
/// `||` may absorb (CEL, A7), every other operator propagates them; `get`/`exists` count against
/// the access limit (repeated reads of one document count once); every expression counts against
/// the expression limit, so no ruleset runs unbounded.
public final class RulesEvaluator {
    public let reader: (any RulesDocumentReader)?
    public let limits: RulesLimits
    public private(set) var accessCalls = 0
    public private(set) var expressionsEvaluated = 0
    /// `debug(x)` output, in order.
    public private(set) var debugOutput: [String] = []
    /// When set, every subexpression's value (or error) is kept, in evaluation order, for traces
    /// and coverage.
    public var recordsVisits = false {
        didSet { if recordsVisits { visits.reserveCapacity(32) } }
    }
    public private(set) var visits: [RulesVisit] = []
    /// Every document read, in order (repeated reads once).
    public private(set) var accesses: [RulesDocumentAccess] = []
    private var accessed = Set<[String]>()
    private var callDepth = 0

    public init(reader: (any RulesDocumentReader)?, limits: RulesLimits = RulesLimits()) {
        self.reader = reader
        self.limits = limits
    }

    /// Variables and functions visible where an expression is evaluated.
    public struct Scope {
        var variables: [String: RulesValue]
        var functions: [String: RulesFunction]
        /// `let` bindings whose value is an error: the error is their value, raised where the
        /// name is read (so `||` and `&&` absorb it as any other error), never at the `let`.
        var failedBindings: [String: RulesError] = [:]

        public init(variables: [String: RulesValue] = [:], functions: [String: RulesFunction] = [:]) {
            self.variables = variables
            self.functions = functions
        }
    }

    public func evaluate(_ expression: RulesExpression, in scope: Scope) -> Result<RulesValue, RulesError> {
        do { return .success(try value(expression, scope)) } catch { return .failure(error) }
    }

    func value(_ expression: RulesExpression, _ scope: Scope) throws(RulesError) -> RulesValue {
        guard recordsVisits else { return try compute(expression, scope) }
        do {
            let result = try compute(expression, scope)
            visits.append(RulesVisit(position: expression.position, result: .success(result)))
            return result
        } catch {
            visits.append(RulesVisit(position: expression.position, result: .failure(error)))
            throw error
        }
    }

    private func compute(_ expression: RulesExpression, _ scope: Scope) throws(RulesError) -> RulesValue {
        expressionsEvaluated += 1
        guard expressionsEvaluated <= limits.expressions else {
            throw RulesError("Exceeded the limit of \(limits.expressions) expressions evaluated per request.", at: expression.position)
        }
        switch expression {
        case .literal(let value, _): return value
        case .identifier(let name, let at):
            if let error = scope.failedBindings[name] { throw error }
            guard let value = scope.variables[name] else { throw RulesError("Variable '\(name)' is not defined.", at: at) }
            return value
        case .list(let items, _):
            return .list(try items.map { item throws(RulesError) in try value(item, scope) })
        case .map(let entries, _):
            var map: [String: RulesValue] = [:]
            for entry in entries {
                guard case .string(let key) = try value(entry.key, scope) else { throw RulesError("Map keys must be strings.", at: entry.key.position) }
                map[key] = try value(entry.value, scope)
            }
            return .map(map)
        case .path(let parts, _):
            var segments: [String] = []
            for part in parts {
                switch part {
                case .text(let text): segments.append(text)
                case .interpolated(let inner):
                    switch try value(inner, scope) {
                    case .string(let text): segments.append(text)
                    case .int(let i): segments.append(String(i))
                    case .path(let more): segments += more
                    case let other: throw RulesError("Cannot use a \(other.typeName) in a path.", at: inner.position)
                    }
                }
            }
            return .path(segments)
        case .member(let base, let name, let at):
            return try RulesOperators.member(try value(base, scope), name, at)
        case .index(let base, let index, let at):
            return try RulesOperators.index(try value(base, scope), try value(index, scope), at)
        case .slice(let base, let start, let end, let at):
            return try RulesOperators.slice(try value(base, scope), try start.map { e throws(RulesError) in try value(e, scope) },
                                            try end.map { e throws(RulesError) in try value(e, scope) }, at)
        case .call(let callee, let arguments, let at):
            return try call(callee, arguments, scope, at)
        case .unary(let op, let operand, let at):
            return try RulesOperators.unary(op, try value(operand, scope), at)
        case .binary("&&", let left, let right, let at):
            return try logical(left, right, scope, absorbing: false, at)
        case .binary("||", let left, let right, let at):
            return try logical(left, right, scope, absorbing: true, at)
        case .binary(let op, let left, let right, let at):
            return try RulesOperators.binary(op, try value(left, scope), try value(right, scope), at)
        case .conditional(let condition, let yes, let no, let at):
            guard case .bool(let chosen) = try value(condition, scope) else { throw RulesError("The condition of ?: must be a bool.", at: at) }
            return try value(chosen ? yes : no, scope)
        case .isType(let operand, let type, _):
            return .bool(try value(operand, scope).isOfType(type))
        }
    }

    /// `&&` (`absorbing` false) and `||` (true) with CEL's error absorption: the deciding value
    /// wins over an error on either side; otherwise an error stays an error.
    private func logical(_ left: RulesExpression, _ right: RulesExpression, _ scope: Scope, absorbing: Bool,
                         _ at: RulesPosition) throws(RulesError) -> RulesValue {
        func asBool(_ result: Result<RulesValue, RulesError>, _ position: RulesPosition) -> Result<Bool, RulesError> {
            switch result {
            case .success(.bool(let b)): .success(b)
            case .success(let other): .failure(RulesError("Expected a bool, got \(other.typeName).", at: position))
            case .failure(let error): .failure(error)
            }
        }
        let first = asBool(evaluate(left, in: scope), left.position)
        if case .success(absorbing) = first { return .bool(absorbing) }  // short-circuit
        let second = asBool(evaluate(right, in: scope), right.position)
        if case .success(absorbing) = second { return .bool(absorbing) }
        if case .failure(let error) = first { throw error }
        if case .failure(let error) = second { throw error }
        return .bool(!absorbing)
    }

    // MARK: Calls

    private func call(_ callee: RulesExpression, _ arguments: [RulesExpression], _ scope: Scope,
                      _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch callee {
        case .identifier(let name, _):
            if let function = scope.functions[name] { return try invoke(function, arguments, scope, at) }
            let values = try arguments.map { a throws(RulesError) in try value(a, scope) }
            return try global(name, values, at)
        case .member(.identifier(let namespace, _), let name, _) where scope.variables[namespace] == nil
            && RulesLibrary.namespaces.contains(namespace):
            let values = try arguments.map { a throws(RulesError) in try value(a, scope) }
            return try RulesLibrary.namespaced(namespace, name, values, at)
        case .member(let receiver, let name, _):
            let target = try value(receiver, scope)
            let values = try arguments.map { a throws(RulesError) in try value(a, scope) }
            return try RulesLibrary.method(target, name, values, at)
        default:
            throw RulesError("This expression cannot be called.", at: at)
        }
    }

    /// A function of the ruleset: arguments and `let`s (eager, in order) bound in the scope it
    /// was declared in; a `let` whose value is an error holds the error (docs/security-rules.md).
    private func invoke(_ function: RulesFunction, _ arguments: [RulesExpression], _ scope: Scope,
                        _ at: RulesPosition) throws(RulesError) -> RulesValue {
        guard arguments.count == function.parameters.count else {
            throw RulesError("Function \(function.name) takes \(function.parameters.count) arguments, got \(arguments.count).", at: at)
        }
        callDepth += 1
        defer { callDepth -= 1 }
        guard callDepth <= limits.callDepth else { throw RulesError("Exceeded the function call depth of \(limits.callDepth).", at: at) }
        var inner = scope
        for (parameter, argument) in zip(function.parameters, arguments) {
            inner.variables[parameter] = try value(argument, scope)
            inner.failedBindings[parameter] = nil
        }
        for binding in function.bindings {
            // Evaluated eagerly (its reads count), but an error is the binding's value.
            do {
                inner.variables[binding.name] = try value(binding.value, inner)
                inner.failedBindings[binding.name] = nil
            } catch {
                inner.failedBindings[binding.name] = error
            }
        }
        return try value(function.body, inner)
    }

    private func global(_ name: String, _ arguments: [RulesValue], _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (name, RulesArguments(arguments)) {
        case ("get", .one(.path(let path))): return try read(path, after: false, at) ?? .null
        case ("getAfter", .one(.path(let path))): return try read(path, after: true, at) ?? .null
        case ("exists", .one(.path(let path))): return .bool(try read(path, after: false, at) != nil)
        case ("existsAfter", .one(.path(let path))): return .bool(try read(path, after: true, at) != nil)
        case ("debug", .one(let value)):
            debugOutput.append(RulesLibrary.debugText(value))
            return value
        default: return try RulesLibrary.conversion(name, arguments, at)
        }
    }

    /// A document access: counted once per document and kind (A10's cached calls), bounded.
    private func read(_ path: [String], after: Bool, _ at: RulesPosition) throws(RulesError) -> RulesValue? {
        guard path.count >= 4, path[0] == "databases", path[2] == "documents", (path.count - 3) % 2 == 0 else {
            throw RulesError("Path /\(path.joined(separator: "/")) is not a document path.", at: at)
        }
        if accessed.insert(after ? ["after"] + path : path).inserted {
            accessCalls += 1
            guard accessCalls <= limits.accessCalls else {
                throw RulesError("Exceeded the limit of \(limits.accessCalls) document accesses for this request.", at: at)
            }
        }
        guard let reader else { throw RulesError("No documents can be read here.", at: at) }
        let resource = reader.resource(at: path, after: after)
        if !accesses.contains(where: { $0.path == path && $0.after == after }) {
            accesses.append(RulesDocumentAccess(path: path, after: after, resource: resource))
        }
        return resource
    }
}
