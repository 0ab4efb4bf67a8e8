/// Text as PostgreSQL stores it. Its `text` cannot hold NUL, which Firestore ids, tree keys and
/// project ids may contain: NUL is written as U+0001 U+0001 and U+0001 as U+0001 U+0002. The
/// mapping is reversible and keeps byte order, so keys still sort and range as the engine's do.
enum PostgresText {
    static func stored(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 <= 1 }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0: out.append("\u{1}"); out.append("\u{1}")
            case 1: out.append("\u{1}"); out.append("\u{2}")
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    static func loaded(_ text: String) -> String {
        guard text.utf8.contains(1) else { return text }
        var out = String.UnicodeScalarView()
        var escaped = false
        for scalar in text.unicodeScalars {
            if escaped {
                out.append(scalar.value == 1 ? "\u{0}" : "\u{1}")
                escaped = false
            } else if scalar.value == 1 {
                escaped = true
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}
