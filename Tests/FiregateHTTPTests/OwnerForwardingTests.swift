import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import FiregateStore
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

/// Forwarding a write to the replica that owns its scope: who may claim to be a replica, how a
/// gRPC call becomes its REST twin, and a REST call on a live server with its answer and errors.
final class OwnerForwardingTests: XCTestCase {
    /// A directory that names `owner` as the owner of every scope.
    struct FixedDirectory: ReplicaDirectory {
        var replicaID = "b"
        var owner: ReplicaAddress?
        func replicas() throws -> [ReplicaStatus] { [] }
        func owner(of scope: ScopeLease.Scope) throws(FiregateError) -> ReplicaAddress? { owner }
        func holdsLease(of scope: ScopeLease.Scope) -> Bool { owner == nil }
        func logSeq(of scope: ScopeLease.Scope) -> Int64? { nil }
        func awaitLog(of scope: ScopeLease.Scope, through seq: Int64, timeout: Duration) async {}
        func claimClient(_ id: String) throws(FiregateError) -> ReplicaAddress? { owner }
        func releaseClient(_ id: String) {}
        func onClientsLost(_ lost: @escaping @Sendable ([String]) -> Void) {}
        func keepOnDisconnect(connection: String, namespace: String, operations: [UInt8]?) {}
        func onOrphanedDisconnects(_ run: @escaping @Sendable (OrphanedDisconnect) -> Void) {}
        func recordDisconnectProgress(_ progress: DisconnectProgress) {}
        func disconnectClaim(connection: String) throws(FiregateError) -> Int? { nil }
        func clientEpoch(_ id: String) -> Int64? { nil }
        func holdings() -> ReplicaHoldings { ReplicaHoldings() }
        func storedAnswer(_ receipt: QueuedWriteReceipt) throws(FiregateError) -> [UInt8]? { nil }
    }

    func testOnlyARequestWithTheClusterSecretCountsAsForwardedAndItIsNeverForwardedAgain() throws {
        let forwarding = OwnerForwarding(directory: FixedDirectory(owner: ReplicaAddress(id: "a", address: "http://a:1")), secret: "s3")
        XCTAssertFalse(try forwarding.isForwarded([:]))
        XCTAssertThrowsError(try forwarding.isForwarded([OwnerForwarding.forwardedBy: "a"])) { error in
            XCTAssertEqual((error as? FiregateError)?.status, .permissionDenied)
            XCTAssertTrue("\(error)".contains("cluster secret"))
        }
        XCTAssertThrowsError(try forwarding.isForwarded([OwnerForwarding.forwardedBy: "a", OwnerForwarding.secretField: "s4"]))
        let marked: HTTPFields = [OwnerForwarding.forwardedBy: "a", OwnerForwarding.secretField: "s3"]
        XCTAssertTrue(try forwarding.isForwarded(marked))
        XCTAssertNil(try forwarding.target(.tree(namespace: "n"), headers: marked), "a forwarded request is served where it lands")
        XCTAssertEqual(try forwarding.target(.tree(namespace: "n"), headers: [:])?.owner.id, "a")
        // Replicas configured with no secret accept each other's marker without one.
        let open = OwnerForwarding(directory: FixedDirectory(owner: nil), secret: nil)
        XCTAssertTrue(try open.isForwarded([OwnerForwarding.forwardedBy: "a"]))
        XCTAssertNil(try open.target(.tree(namespace: "n"), headers: [:]), "no other owner: served here")
    }

    func testAGRPCCallsRESTTwinCarriesItsPreconditionAndMasksAsQueryParameters() {
        let json: JSON = ["currentDocument": ["exists": true], "mask": ["fieldPaths": ["a", "`b c`"]],
                          "updateMask": ["fieldPaths": ["x.y"]]]
        let query = FirestoreGRPCService.query(precondition: json.member("currentDocument"), mask: json.member("mask"),
                                               updateMask: json.member("updateMask"))
        XCTAssertEqual(FirestoreGRPCService.restURI("projects/p/databases/(default)/documents/c/d", query: query),
                       "/v1/projects/p/databases/(default)/documents/c/d?updateMask.fieldPaths=x.y&mask.fieldPaths=a&mask.fieldPaths=%60b%20c%60&currentDocument.exists=true")
        XCTAssertEqual(FirestoreGRPCService.restURI(testDB, verb: "commit"), "/v1/projects/p/databases/(default)/documents:commit")
        let body = FirestoreGRPCService.body(["database": "projects/p/databases/(default)", "writes": []], without: ["database"])
        XCTAssertEqual(body, ["writes": []])
    }

    func testARESTCallOnTheOwnerCommitsThereAndBringsBackItsAnswerOrItsError() async throws {
        try await withServer(setup: .live) { client, backend in
            let owner = ReplicaAddress(id: "a", address: "http://127.0.0.1:\(client.port!)")
            let forwarding = OwnerForwarding(directory: FixedDirectory(owner: owner), secret: nil)
            let target = try XCTUnwrap(try forwarding.target(.documents(project: "p", database: "(default)")))
            let answer = try await forwarding.call(.POST, FirestoreGRPCService.restURI(testDB, verb: "commit"), json: ["writes": [
                ["update": ["name": .string("\(root)/c/d"), "fields": ["n": ["integerValue": "7"]]]],
            ]], authorization: nil, to: target)
            XCTAssertNotNil(answer.member("commitTime"), JSONWriter.string(answer))
            let stored = try backend.documents.database(testDB).get(ResourcePath(["c", "d"])).value
            XCTAssertEqual(stored?.fields["n"], .integer(7))
            do throws(FiregateError) {
                _ = try await forwarding.call(.POST, FirestoreGRPCService.restURI(testDB, verb: "commit"), json: ["writes": [
                    ["update": ["name": .string("\(root)/c"), "fields": [:]]],
                ]], authorization: nil, to: target)
                XCTFail("a bad write was accepted")
            } catch {
                XCTAssertEqual(error.status, .invalidArgument, error.message)
            }
        }
    }

    func testAnOwnerThatCannotBeReachedIsUnavailableAndNamed() async throws {
        let forwarding = OwnerForwarding(directory: FixedDirectory(owner: ReplicaAddress(id: "a", address: "http://127.0.0.1:1")), secret: nil)
        let target = try XCTUnwrap(try forwarding.target(.tree(namespace: "n")))
        do throws(FiregateError) {
            _ = try await forwarding.call(.PUT, "/x.json?ns=n", json: 1, authorization: nil, to: target)
            XCTFail("answered from a closed port")
        } catch {
            XCTAssertEqual(error.status, .unavailable)
            XCTAssertTrue(error.message.contains("replica a") && error.message.contains("retry"), error.message)
        }
    }
}
