import FiregateModel

/// How a read chooses its snapshot (the `consistency_selector` of Firestore reads).
public enum ReadConsistency: Sendable, Equatable {
    /// The latest committed state.
    case latest
    /// Within an existing transaction (base64 id).
    case transaction(String)
    /// Starts a transaction and reads within it; the id is returned with the results.
    case newTransaction(TransactionOptions)
    /// The state as of a past time.
    case readTime(Timestamp)
}

/// `TransactionOptions`: read-write (optionally retrying one) or read-only (optionally at a time).
public enum TransactionOptions: Sendable, Equatable {
    case readWrite(retrying: String?)
    case readOnly(readTime: Timestamp?)
}
