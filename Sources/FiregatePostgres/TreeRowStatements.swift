import FiregateModel
import FiregateStore
import PostgresNIO

/// A tree batch's row operations as statements on `fg_tree_rows`, in order: consecutive row
/// writes become one multi-row upsert (a path written twice keeps its last row), consecutive
/// row deletions one `= ANY`, and a subtree deletion is the row at its path plus the range
/// `[path/, path0)` (`0` follows `/` in the "C" collation the table uses).
enum TreeRowStatements {
    /// The statements on `table`, whose rows belong to `owner` in column `ownerColumn` (a scope
    /// in `fg_tree_rows`, an edge client in its tree cache): the same row layout either way.
    static func statements(for operations: [TreeStorageOperation], scope owner: String, table: String = "fg_tree_rows",
                           ownerColumn: String = "scope") -> [PostgresQuery] {
        var statements: [PostgresQuery] = []
        var puts: [String: TreeStorageRow] = [:]
        var putOrder: [String] = []
        var deletedRows: [String] = []
        func flush() {
            if !puts.isEmpty {
                let rows = putOrder.compactMap { puts[$0] }
                var binds = PostgresBindings()
                binds.append(owner)
                binds.append(rows.map { PostgresText.stored($0.path) })
                binds.append(rows.map { $0.value ?? "" })
                binds.append(rows.map { $0.value != nil })
                binds.append(rows.map { $0.priority ?? "" })
                binds.append(rows.map { $0.priority != nil })
                statements.append(PostgresQuery(unsafeSQL: """
                    INSERT INTO \(table) (\(ownerColumn), path, value, priority)
                    SELECT $1, r.path, CASE WHEN r.has_value THEN r.value END, CASE WHEN r.has_priority THEN r.priority END
                    FROM unnest($2::text[], $3::text[], $4::bool[], $5::text[], $6::bool[]) AS r(path, value, has_value, priority, has_priority)
                    ON CONFLICT (\(ownerColumn), path) DO UPDATE SET value = excluded.value, priority = excluded.priority
                    """, binds: binds))
                puts = [:]
                putOrder = []
            }
            if !deletedRows.isEmpty {
                statements.append("DELETE FROM \(unescaped: table) WHERE \(unescaped: ownerColumn) = \(owner) AND path = ANY(\(deletedRows.map(PostgresText.stored)))")
                deletedRows = []
            }
        }
        for operation in operations {
            switch operation {
            case .putRow(let row):
                if !deletedRows.isEmpty { flush() }
                if puts.updateValue(row, forKey: row.path) == nil { putOrder.append(row.path) }
            case .deleteRow(let path):
                if !puts.isEmpty { flush() }
                deletedRows.append(path)
            case .deleteSubtree(let path):
                flush()
                if path.isEmpty {
                    statements.append("DELETE FROM \(unescaped: table) WHERE \(unescaped: ownerColumn) = \(owner)")
                } else {
                    let path = PostgresText.stored(path)
                    statements.append("""
                        DELETE FROM \(unescaped: table) WHERE \(unescaped: ownerColumn) = \(owner)
                        AND (path = \(path) OR (path >= \(path + "/") AND path < \(path + "0")))
                        """)
                }
            }
        }
        flush()
        return statements
    }

    /// A row operation in the commit log.
    static func json(_ operation: TreeStorageOperation) -> JSON {
        switch operation {
        case .deleteSubtree(let path): .array([.string("deleteSubtree"), .string(path)])
        case .deleteRow(let path): .array([.string("deleteRow"), .string(path)])
        case .putRow(let row): .array([.string("put"), .string(row.path), row.value.map(JSON.string) ?? .null, row.priority.map(JSON.string) ?? .null])
        }
    }
}
