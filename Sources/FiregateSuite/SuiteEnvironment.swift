/// The environment `firegate exec` gives its command: the parent's, plus the variables the
/// Firebase CLI's `emulators:exec` sets (docs/firebase-cli.md), so SDKs, `firebase-admin` and
/// `@firebase/rules-unit-testing` find the servers without configuration.
public enum SuiteEnvironment {
    public static func variables(for plan: SuitePlan, inheriting parent: [String: String]) -> [String: String] {
        var environment = parent
        if let project = plan.project {
            environment["GCLOUD_PROJECT"] = project
            // The CLI sets it only when the parent has none.
            if environment["FIREBASE_CONFIG"] == nil {
                environment["FIREBASE_CONFIG"] = #"{"projectId":"\#(project)","storageBucket":"\#(project).appspot.com","databaseURL":"https://\#(project).firebaseio.com"}"#
            }
        }
        if let firestore = plan.listener(.firestore) {
            environment["FIRESTORE_EMULATOR_HOST"] = firestore.hostAndPort
            environment["FIREBASE_FIRESTORE_EMULATOR_ADDRESS"] = firestore.hostAndPort
        }
        if let database = plan.listener(.database) {
            environment["FIREBASE_DATABASE_EMULATOR_HOST"] = database.hostAndPort
        }
        environment["FIREBASE_EMULATOR_HUB"] = plan.hub.hostAndPort
        // Firegate's own: the base URL of its HTTP surface (the Firestore port serves all of it).
        let main = plan.services[0]
        environment["FIREGATE_URL"] = "http://\(main.hostAndPort)"
        return environment
    }
}
