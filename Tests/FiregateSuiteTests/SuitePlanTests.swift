@testable import FiregateSuite
import FiregateModel
import XCTest

/// firebase.json, .firebaserc and `--only` decided as the Firebase CLI decides them
/// (docs/firebase-cli.md).
final class SuitePlanTests: XCTestCase {
    private func config(_ text: String) throws -> FirebaseJSON {
        try FirebaseJSON.parse(JSONParser.parse(text), path: "firebase.json")
    }

    func testWithoutAConfigFirestoreAndTheDatabaseRunOnTheCLIsDefaultPortsAsDemoNoProject() throws {
        let plan = try SuitePlan(config: nil, rc: nil, projectFlag: nil, only: nil)
        XCTAssertEqual(plan.services.map(\.service), [.firestore, .database])
        XCTAssertEqual(plan.services.map(\.port), [8080, 9000])
        XCTAssertEqual(plan.hub.port, 4400)
        XCTAssertEqual(plan.services.map(\.hostAndPort), ["127.0.0.1:8080", "127.0.0.1:9000"], "localhost is bound and named as 127.0.0.1")
        XCTAssertNil(plan.project)
        XCTAssertEqual(plan.projectID, "demo-no-project")
    }

    func testTheEmulatorsBlockGivesHostsAndPortsAndStringPortsAreParsed() throws {
        let plan = try SuitePlan(config: config(#"""
            {"firestore": {"rules": "firestore.rules"}, "database": {"rules": "database.rules.json"},
             "emulators": {"firestore": {"port": "8181"}, "database": {"host": "0.0.0.0", "port": 9001}, "hub": {"host": "::", "port": 4401}, "ui": {"enabled": false}}}
            """#), rc: nil, projectFlag: "demo-x", only: nil)
        XCTAssertEqual(plan.listener(.firestore)?.port, 8181)
        XCTAssertEqual(plan.listener(.firestore)?.configured, true)
        XCTAssertEqual(plan.listener(.database)?.bindHost, "0.0.0.0")
        XCTAssertEqual(plan.listener(.database)?.hostAndPort, "127.0.0.1:9001", "a wildcard is named by the address a client reaches")
        XCTAssertEqual(plan.hub.hostAndPort, "[::1]:4401")
        XCTAssertEqual(plan.project, "demo-x")
    }

    func testOnlyTheServicesTheConfigNamesRunAndOnlyNarrowsThem() throws {
        let firestoreOnly = try config(#"{"firestore": {}, "hosting": {"public": "dist"}, "emulators": {"auth": {"port": 9099}}}"#)
        let plan = try SuitePlan(config: firestoreOnly, rc: nil, projectFlag: nil, only: nil)
        XCTAssertEqual(plan.services.map(\.service), [.firestore])
        XCTAssertEqual(plan.notProvided, ["auth", "hosting"], "emulators Firegate does not provide are named, and the rest runs")
        let both = try config(#"{"firestore": {}, "database": {}}"#)
        XCTAssertEqual(try SuitePlan(config: both, rc: nil, projectFlag: nil, only: "database").services.map(\.service), [.database])
        XCTAssertEqual(try SuitePlan(config: both, rc: nil, projectFlag: nil, only: "firestore, database:main").services.map(\.service), [.firestore, .database],
                       "spaces separate as commas do; a target after `:` selects its emulator")
        XCTAssertThrowsError(try SuitePlan(config: both, rc: nil, projectFlag: nil, only: "firestroe")) { error in
            XCTAssertTrue((error as? FiregateError)?.message.contains("firestroe") == true)
        }
        XCTAssertThrowsError(try SuitePlan(config: firestoreOnly, rc: nil, projectFlag: nil, only: "database"), "nothing left to start")
    }

    func testAPortThatIsNotAPortIsRefusedNamingTheKey() throws {
        XCTAssertThrowsError(try config(#"{"emulators": {"firestore": {"port": "eighty"}}}"#)) { error in
            XCTAssertEqual((error as? FiregateError)?.message, "firebase.json: emulators.firestore.port must be a port (0 to 65535).")
        }
        XCTAssertThrowsError(try config(#"{"emulators": {"database": {"port": 70000}}}"#))
        XCTAssertThrowsError(try config(#"[1]"#))
    }

    func testTheProjectComesFromTheFlagAnAliasTheOnlyAliasOrDefault() throws {
        let rc = try FirebaseRC.parse("""
            // the CLI allows comments
            {"projects": {"default": "demo-main", /* staging */ "staging": "demo-staging"}, "targets": {}}
            """, path: ".firebaserc")
        XCTAssertEqual(rc.project(flag: nil), "demo-main")
        XCTAssertEqual(rc.project(flag: "staging"), "demo-staging", "an alias is resolved")
        XCTAssertEqual(rc.project(flag: "demo-other"), "demo-other", "an id is taken as it is")
        XCTAssertEqual(try FirebaseRC.parse(#"{"projects": {"prod": "demo-only"}}"#, path: "rc").project(flag: nil), "demo-only")
        XCTAssertNil(try FirebaseRC.parse(#"{"projects": {"a": "x", "b": "y"}}"#, path: "rc").project(flag: nil))
        XCTAssertEqual(JSONComments.stripped(#"{"url": "http://x//y"} // tail"#), #"{"url": "http://x//y"} "#, "slashes inside strings stay")
        let targets = try FirebaseRC.parse(#"{"projects": {"default": "demo-t"}, "targets": {"demo-t": {"database": {"main": ["demo-t-default-rtdb", "demo-t-other"]}}}}"#, path: "rc")
        XCTAssertEqual(try SuitePlan(config: nil, rc: targets, projectFlag: nil, only: nil).databaseTargets, ["main": ["demo-t-default-rtdb", "demo-t-other"]])
        XCTAssertEqual(try SuitePlan(config: nil, rc: targets, projectFlag: "demo-else", only: nil).databaseTargets, [:], "targets are the project's")
    }

    func testTheCommandsEnvironmentIsTheCLIs() throws {
        let plan = try SuitePlan(config: config(#"{"firestore": {}, "database": {}, "emulators": {"firestore": {"port": 8081}, "database": {"port": 9001}}}"#),
                                 rc: nil, projectFlag: "demo-x", only: nil)
        let environment = SuiteEnvironment.variables(for: plan, inheriting: ["PATH": "/bin"])
        XCTAssertEqual(environment["PATH"], "/bin")
        XCTAssertEqual(environment["GCLOUD_PROJECT"], "demo-x")
        XCTAssertEqual(environment["FIREBASE_CONFIG"], #"{"projectId":"demo-x","storageBucket":"demo-x.appspot.com","databaseURL":"https://demo-x.firebaseio.com"}"#)
        XCTAssertEqual(environment["FIRESTORE_EMULATOR_HOST"], "127.0.0.1:8081")
        XCTAssertEqual(environment["FIREBASE_FIRESTORE_EMULATOR_ADDRESS"], "127.0.0.1:8081")
        XCTAssertEqual(environment["FIREBASE_DATABASE_EMULATOR_HOST"], "127.0.0.1:9001")
        XCTAssertEqual(environment["FIREBASE_EMULATOR_HUB"], "127.0.0.1:4400")
        XCTAssertEqual(environment["FIREGATE_URL"], "http://127.0.0.1:8081")
        let kept = SuiteEnvironment.variables(for: plan, inheriting: ["FIREBASE_CONFIG": "/my/config.json"])
        XCTAssertEqual(kept["FIREBASE_CONFIG"], "/my/config.json", "a FIREBASE_CONFIG of the caller's is kept")
        let anonymous = SuiteEnvironment.variables(for: try SuitePlan(config: nil, rc: nil, projectFlag: nil, only: "firestore"), inheriting: [:])
        XCTAssertNil(anonymous["GCLOUD_PROJECT"], "demo-no-project is not announced")
        XCTAssertNil(anonymous["FIREBASE_DATABASE_EMULATOR_HOST"], "the database does not run")
    }

    func testTheHubListsWhatRunsInTheCLIsShape() throws {
        let plan = try SuitePlan(config: nil, rc: nil, projectFlag: "demo-x", only: nil)
        let emulators = HubDocuments.emulators(plan: plan, pid: 42)
        XCTAssertEqual(emulators.objectValue.map { Array($0.keys) }, ["hub", "firestore", "database"])
        XCTAssertEqual(emulators["firestore"], .object([
            "listen": .array([.object(["address": .string("127.0.0.1"), "family": .string("IPv4"), "port": .int(8080)])]),
            "name": .string("firestore"), "host": .string("127.0.0.1"), "port": .int(8080), "pid": .int(42),
        ]))
        XCTAssertNil(emulators["hub"]?["pid"])
        XCTAssertEqual(HubDocuments.locator(plan: plan, pid: 42)["origins"], .array([.string("http://127.0.0.1:4400")]))
    }
}
