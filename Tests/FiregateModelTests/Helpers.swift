@testable import FiregateModel
import XCTest

let testDB = DatabaseID(project: "p")

/// A full document name in the test database.
func docName(_ path: String) -> String { testDB.resourceName(ResourcePath(path.split(separator: "/").map(String.init))) }

func rpath(_ text: String) -> ResourcePath { ResourcePath(text.split(separator: "/").map(String.init)) }

func fpath(_ text: String) -> FieldPath { try! FieldPath.parse(text) }

func makeDoc(_ path: String, _ fields: [String: Value], time: Int64 = 1) -> Document {
    Document(path: rpath(path), fields: fields, createTime: Timestamp(microseconds: time), updateTime: Timestamp(microseconds: time))
}

func json(_ text: String) -> JSON { try! JSONParser.parse(text) }

/// The compact JSON text of a value.
func text(_ value: JSON) -> String { JSONWriter.string(value) }

/// Asserts that `body` throws a `FiregateError` with `status` (and, when given, a message containing `contains`).
func assertFiregateError<T>(_ status: Status, contains: String? = nil, file: StaticString = #filePath, line: UInt = #line,
                            _ body: () throws -> T) {
    do {
        let value = try body()
        XCTFail("expected \(status.rawValue), got \(value)", file: file, line: line)
    } catch let error as FiregateError {
        XCTAssertEqual(error.status, status, "\(error.message)", file: file, line: line)
        if let contains {
            XCTAssertTrue(error.message.contains(contains), "message \"\(error.message)\" lacks \"\(contains)\"", file: file, line: line)
        }
    } catch {
        XCTFail("unexpected error \(error)", file: file, line: line)
    }
}
