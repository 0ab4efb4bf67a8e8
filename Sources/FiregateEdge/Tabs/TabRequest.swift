import FiregateModel

/// What a tab asks for when it opens, and the SDK's answers when it may not.
extension SharedPersistence {
    /// The SDK's `persistentMultipleTabManager()` or `persistentSingleTabManager()`.
    public enum TabManager: String, Sendable {
        case multiple, single
    }

    /// What a tab asks for beside the client settings.
    public struct TabRequest: Sendable {
        public var key: String
        public var manager: TabManager
        public var visible: Bool

        /// Takes `sharedWith`, `tabManager` and `visible` out of a `PUT /clients/{id}` body;
        /// nil when the body names no `sharedWith`.
        public static func parse(_ json: inout JSON) throws(FiregateError) -> TabRequest? {
            guard case .object(var members) = json, let shared = members.removeValue(forKey: "sharedWith"), shared != .null else { return nil }
            guard let key = shared.stringValue, !key.isEmpty, key.utf8.count <= 256 else {
                throw .invalidArgument("sharedWith must be a non-empty persistence key of at most 256 bytes.")
            }
            var manager = TabManager.multiple
            if let value = members.removeValue(forKey: "tabManager"), value != .null {
                guard let name = value.stringValue, let parsed = TabManager(rawValue: name) else {
                    throw .invalidArgument("tabManager must be \"multiple\" or \"single\".")
                }
                manager = parsed
            }
            var visible = true
            if let value = members.removeValue(forKey: "visible"), value != .null {
                guard let flag = value.boolValue else { throw .invalidArgument("visible must be a boolean.") }
                visible = flag
            }
            json = .object(members)
            return TabRequest(key: key, manager: manager, visible: visible)
        }
    }

    /// The SDK's PRIMARY_LEASE_EXCLUSIVE_ERROR_MSG: another tab holds the persistence without
    /// multi-tab synchronization.
    static let exclusiveMessage = "Failed to obtain exclusive access to the persistence layer. To allow shared access, multi-tab synchronization has to be enabled in all tabs. If you are using `experimentalForceOwningTab:true`, make sure that only one tab has persistence enabled at any given time."
    /// The SDK's PRIMARY_LEASE_LOST_ERROR_MSG: a single-tab client that cannot be primary.
    static let leaseLostMessage = "The current tab is not in the required state to perform this operation. It might be necessary to refresh the browser tab."
}
