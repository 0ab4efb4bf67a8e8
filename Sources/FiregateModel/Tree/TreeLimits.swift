/// Size limits of writes, with the errors production gives past them.
public enum TreeLimits {
    /// Largest request body a tree write accepts.
    public static let maxWriteBytes = 32 * 1024 * 1024

    public static let writeTooBig = FiregateError.invalidArgument(
        "Data to write exceeds the maximum size that can be modified with a single request.")
}
