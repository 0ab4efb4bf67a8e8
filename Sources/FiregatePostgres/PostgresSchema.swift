import FiregateModel
import PostgresNIO

/// Firegate's tables in PostgreSQL, created and migrated at start. Every replica runs this;
/// an advisory lock makes replicas that start together take turns, and `fg_migrations`
/// records each step once. Steps are append-only once released.
///
/// A *scope* is what one replica owns: `d:<project>/<database>` for a document database,
/// `t:<namespace>` for a tree namespace.
enum PostgresSchema {
    static let steps: [(id: String, sql: [String])] = [
        ("v1-scopes-documents-tree", [
            // One row per scope: the log's head (gap-free `seq`, assigned by the owner) and the
            // owner's lease; `owner_epoch` is the fence every commit checks.
            """
            CREATE TABLE fg_heads (
                scope text COLLATE "C" PRIMARY KEY,
                seq bigint NOT NULL DEFAULT 0,
                commit_us bigint NOT NULL DEFAULT 0,
                owner text,
                owner_epoch bigint NOT NULL DEFAULT 0,
                lease_until timestamptz
            )
            """,
            // The commit log: one row per commit, written in the commit's own statement.
            """
            CREATE TABLE fg_log (
                scope text COLLATE "C" NOT NULL,
                seq bigint NOT NULL,
                commit_us bigint NOT NULL,
                body bytea NOT NULL,
                PRIMARY KEY (scope, seq)
            )
            """,
            """
            CREATE TABLE fg_documents (
                scope text COLLATE "C" NOT NULL,
                path text COLLATE "C" NOT NULL,
                fields bytea NOT NULL,
                create_us bigint NOT NULL,
                update_us bigint NOT NULL,
                PRIMARY KEY (scope, path)
            )
            """,
            // Byte order ("C") so that a subtree is the range [path/, path0).
            """
            CREATE TABLE fg_tree_rows (
                scope text COLLATE "C" NOT NULL,
                path text COLLATE "C" NOT NULL,
                value text,
                priority text,
                PRIMARY KEY (scope, path)
            )
            """,
            """
            CREATE TABLE fg_replicas (
                replica text PRIMARY KEY,
                address text NOT NULL,
                started_at timestamptz NOT NULL DEFAULT now(),
                heartbeat_at timestamptz NOT NULL
            )
            """,
        ]),
        // Persistent edge clients' caches (the SQLite store's edge_* tables, one set for all
        // clients, keyed by client id).
        ("v2-edge-caches", [
            "CREATE TABLE fg_edge_clients (client_id text COLLATE \"C\" PRIMARY KEY, settings bytea NOT NULL)",
            """
            CREATE TABLE fg_edge_documents (
                client_id text COLLATE "C" NOT NULL, path text COLLATE "C" NOT NULL, found bool NOT NULL, committed bool NOT NULL,
                fields bytea, create_us bigint NOT NULL, update_us bigint NOT NULL, sequence bigint NOT NULL,
                PRIMARY KEY (client_id, path))
            """,
            """
            CREATE TABLE fg_edge_mutations (
                client_id text COLLATE "C" NOT NULL, batch_id bigint NOT NULL, local_write_us bigint NOT NULL, writes bytea NOT NULL,
                uid text NOT NULL, PRIMARY KEY (client_id, batch_id))
            """,
            """
            CREATE TABLE fg_edge_targets (
                client_id text COLLATE "C" NOT NULL, query text COLLATE "C" NOT NULL, sequence bigint NOT NULL, synced bool NOT NULL,
                target_id bigint NOT NULL, resume_token text NOT NULL, snapshot_us bigint NOT NULL, PRIMARY KEY (client_id, query))
            """,
            """
            CREATE TABLE fg_edge_target_documents (
                client_id text COLLATE "C" NOT NULL, query text COLLATE "C" NOT NULL, path text COLLATE "C" NOT NULL,
                PRIMARY KEY (client_id, query, path))
            """,
            "CREATE TABLE fg_edge_indexes (client_id text COLLATE \"C\" PRIMARY KEY, definitions bytea NOT NULL)",
            "CREATE TABLE fg_edge_bundles (client_id text COLLATE \"C\" PRIMARY KEY, state bytea NOT NULL)",
            """
            CREATE TABLE fg_edge_tree_cache (
                client_id text COLLATE "C" NOT NULL, path text COLLATE "C" NOT NULL, value text, priority text,
                PRIMARY KEY (client_id, path))
            """,
            """
            CREATE TABLE fg_edge_tree_queries (
                client_id text COLLATE "C" NOT NULL, id bigint NOT NULL, path text NOT NULL, parameters text NOT NULL,
                last_use bigint NOT NULL, complete bool NOT NULL, active bool NOT NULL, keys bytea NOT NULL,
                PRIMARY KEY (client_id, id))
            """,
            """
            CREATE TABLE fg_edge_tree_writes (
                client_id text COLLATE "C" NOT NULL, write_id bigint NOT NULL, body bytea NOT NULL, PRIMARY KEY (client_id, write_id))
            """,
            "CREATE TABLE fg_edge_auth (client_id text COLLATE \"C\" PRIMARY KEY, body bytea NOT NULL)",
        ]),
        // A scope's generation: new when it is cleared, so resume tokens (`<generation>.<seq>`)
        // from before a clear are told apart on every replica. Empty until the first clear: the
        // scope's initial generation, which every replica computes from its name before the
        // scope's head row exists (`PostgresStore.generation(of:stored:)`).
        ("v3-scope-generation", [
            "ALTER TABLE fg_heads ADD COLUMN generation text NOT NULL DEFAULT ''",
        ]),
        // Which replica runs each edge client (its requests go there), at which epoch: a replica
        // takes a client over only from one whose heartbeat is older than a lease.
        ("v4-client-owners", [
            "CREATE TABLE fg_client_owner (client_id text COLLATE \"C\" PRIMARY KEY, replica text NOT NULL, epoch bigint NOT NULL)",
        ]),
        // The onDisconnect operations each open connection has registered, so that another
        // replica runs them, once, when the connection's replica dies.
        ("v5-ondisconnect", [
            """
            CREATE TABLE fg_ondisconnect (replica text COLLATE "C" NOT NULL, connection text COLLATE "C" NOT NULL,
                namespace text NOT NULL, operations bytea NOT NULL, PRIMARY KEY (replica, connection))
            """,
        ]),
        // How many of a claimed set of onDisconnect operations ran: moved forward in the
        // transaction of each one's write, so the next claimer starts where the last stopped.
        ("v6-ondisconnect-progress", [
            "ALTER TABLE fg_ondisconnect ADD COLUMN done integer NOT NULL DEFAULT 0",
        ]),
        // The answers to edge clients' queued writes committed for another replica, stored in
        // the commit's transaction, so a write sent again is answered and not applied twice.
        ("v7-queued-write-receipts", [
            """
            CREATE TABLE fg_edge_receipts (client_id text COLLATE "C" NOT NULL, kind text NOT NULL, id bigint NOT NULL, stamp bigint NOT NULL,
                answer bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (client_id, kind, id, stamp))
            """,
        ]),
    ]

    /// Brings the database to the newest schema; returns the steps it applied.
    @discardableResult
    static func migrate(_ session: PostgresSession) throws(FiregateError) -> [String] {
        try session.transaction { () throws(FiregateError) -> [String] in
            try session.query("SELECT pg_advisory_xact_lock(hashtext('firegate-schema'))")
            try session.query("CREATE TABLE IF NOT EXISTS fg_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            var done = Set<String>()
            for row in try session.query("SELECT id FROM fg_migrations").rows {
                if let id = try? row.decode(String.self) { done.insert(id) }
            }
            var applied: [String] = []
            for step in steps where !done.contains(step.id) {
                for statement in step.sql { try session.query(PostgresQuery(unsafeSQL: statement)) }
                try session.query("INSERT INTO fg_migrations (id) VALUES (\(step.id))")
                applied.append(step.id)
            }
            return applied
        }
    }
}
