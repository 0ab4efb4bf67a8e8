import FiregateModel

/// The protobuf wire format, by hand: the export's messages are proto2 with groups, which the
/// generated code of `FiregateProto` does not cover (docs/export-format.md).
struct ProtoWriter {
    private(set) var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func tag(_ field: Int, _ wireType: Int) { varint(UInt64(field << 3 | wireType)) }

    mutating func int(_ field: Int, _ value: Int64) {
        tag(field, 0)
        varint(UInt64(bitPattern: value))
    }

    mutating func bool(_ field: Int, _ value: Bool) { int(field, value ? 1 : 0) }

    mutating func double(_ field: Int, _ value: Double) {
        tag(field, 1)
        let bits = value.bitPattern
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(bits >> UInt64(shift) & 0xFF)) }
    }

    mutating func data(_ field: Int, _ value: some Collection<UInt8>) {
        tag(field, 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ field: Int, _ value: String) { data(field, Array(value.utf8)) }

    mutating func message(_ field: Int, _ build: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter()
        build(&inner)
        data(field, inner.bytes)
    }

    mutating func group(_ field: Int, _ build: (inout ProtoWriter) -> Void) {
        tag(field, 3)
        build(&self)
        tag(field, 4)
    }
}

/// Reads fields one by one; anything malformed is an error saying what `context` was read.
struct ProtoReader {
    enum FieldValue {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes(ArraySlice<UInt8>)
        /// A group's contents, up to its end tag.
        case group(ArraySlice<UInt8>)
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int
    let context: String

    init(_ bytes: ArraySlice<UInt8>, context: String) {
        self.bytes = bytes
        position = bytes.startIndex
        self.context = context
    }

    var atEnd: Bool { position >= bytes.endIndex }

    func failure(_ why: String) -> FiregateError { .invalidArgument("\(context): \(why).") }

    private mutating func varint() throws(FiregateError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < bytes.endIndex else { throw failure("a number runs past the end") }
            let byte = bytes[position]
            position += 1
            guard shift < 64 else { throw failure("a number longer than 10 bytes") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    private mutating func take(_ count: Int) throws(FiregateError) -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.endIndex - position else { throw failure("a field runs past the end") }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    private static func little(_ slice: ArraySlice<UInt8>) -> UInt64 {
        slice.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The next field, or nil at the end.
    mutating func next() throws(FiregateError) -> (field: Int, value: FieldValue)? {
        guard !atEnd else { return nil }
        let key = try varint()
        let field = Int(key >> 3), wireType = Int(key & 7)
        guard field > 0 else { throw failure("field number 0") }
        switch wireType {
        case 0: return (field, .varint(try varint()))
        case 1: return (field, .fixed64(ProtoReader.little(try take(8))))
        case 2:
            let length = try varint()
            guard length <= UInt64(Int.max) else { throw failure("a field runs past the end") }
            return (field, .bytes(try take(Int(length))))
        case 3:
            let start = position
            try skipGroup(field)
            // The end tag of this group is 1 or 2 bytes long: the contents stop before it.
            let end = position - ProtoReader.tagLength(field)
            return (field, .group(bytes[start..<end]))
        case 5: return (field, .fixed32(UInt32(ProtoReader.little(try take(4)))))
        default: throw failure("wire type \(wireType) of field \(field)")
        }
    }

    private static func tagLength(_ field: Int) -> Int {
        var v = UInt64(field << 3 | 4), n = 1
        while v >= 0x80 { v >>= 7; n += 1 }
        return n
    }

    /// Moves past a group's contents and its end tag.
    private mutating func skipGroup(_ field: Int) throws(FiregateError) {
        while true {
            guard !atEnd else { throw failure("group \(field) has no end") }
            let key = try varint()
            let inner = Int(key >> 3), wireType = Int(key & 7)
            switch wireType {
            case 0: _ = try varint()
            case 1: _ = try take(8)
            case 2: _ = try take(Int(clamping: try varint()))
            case 3: try skipGroup(inner)
            case 4:
                guard inner == field else { throw failure("group \(field) ends as group \(inner)") }
                return
            case 5: _ = try take(4)
            default: throw failure("wire type \(wireType) of field \(inner)")
            }
        }
    }
}

extension ProtoReader.FieldValue {
    func string(_ reader: ProtoReader, _ name: String) throws(FiregateError) -> String {
        guard case .bytes(let bytes) = self, let text = String(validating: bytes, as: UTF8.self) else {
            throw reader.failure("\(name) is not UTF-8 text")
        }
        return text
    }

    func integer(_ reader: ProtoReader, _ name: String) throws(FiregateError) -> Int64 {
        guard case .varint(let v) = self else { throw reader.failure("\(name) is not a number") }
        return Int64(bitPattern: v)
    }
}
