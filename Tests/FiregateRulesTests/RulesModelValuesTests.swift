import FiregateModel
@testable import FiregateRules
import XCTest

/// Engine documents, values and tokens as the rules see them, decided end to end.
final class RulesModelValuesTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func testDocumentsBecomeResourcesAndTokensAuth() throws {
        let document = Document(path: ResourcePath(["cities", "SF"]), fields: [
            "name": .string("San Francisco"), "pop": .integer(870_000), "area": .double(121.4), "capital": .boolean(false),
            "founded": .timestamp(Timestamp(seconds: -6_000_000_000, nanos: 0)), "at": .geoPoint(latitude: 37.77, longitude: -122.42),
            "state": .reference("projects/p/databases/(default)/documents/states/CA"), "tags": .array([.string("a")]),
            "meta": .map(["owner": .string("alice")]), "blob": .bytes([1, 2]), "none": .null,
        ], createTime: Timestamp(seconds: 1, nanos: 0), updateTime: Timestamp(seconds: 2, nanos: 0))
        let resource = RulesValue.resource(document, database: database)
        let claims = try JSONParser.parse(#"{"sub":"alice","email":"a@x.com","admin":true,"firebase":{"sign_in_provider":"password"}}"#)
        let (ruleset, issues) = FirestoreRulesLoader.load("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{db}/documents/cities/{city} {
            allow get: if resource.data.name is string && resource.data.pop is int && resource.data.area is float
              && resource.data.capital == false && resource.data.founded < request.time && resource.data.at.latitude() > 37.0
              && resource.data.state == /databases/$(db)/documents/states/CA && resource.data.tags.hasAll(['a'])
              && resource.data.meta.owner == request.auth.uid && resource.data.blob.size() == 2 && resource.data.none == null
              && resource.id == city && resource['__name__'] == /databases/$(db)/documents/cities/$(city)
              && request.auth.token.email == 'a@x.com' && request.auth.token.admin == true
              && request.auth.token.firebase.sign_in_provider == 'password';
          }
        }
        """)
        XCTAssertEqual(issues, [])
        let request = FirestoreRulesRequest(method: .get, path: RulesValue.documentPath(document.path, database: database),
                                            auth: RulesValue.auth(claims: claims), time: .timestamp(seconds: 1_700_000_000, nanos: 0),
                                            resource: resource)
        let decision = ruleset!.decide(request, reader: nil)
        XCTAssertTrue(decision.allowed, decision.message)
        XCTAssertEqual(RulesValue.auth(claims: nil), .null)
        XCTAssertEqual(RulesValue.auth(claims: try JSONParser.parse(#"{"user_id":"u"}"#)), .map(["uid": .string("u"), "token": .map(["user_id": .string("u")])]))
    }
}
