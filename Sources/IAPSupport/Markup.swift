/// Escaping for the HTML and XML reports (certification page, load report, JUnit): one escaper for text and quoted
/// attribute values alike, so a validator's name or message can never break out of either.
public enum Markup {
    /// `s` with `&`, `<`, `>`, `"` and `'` replaced by entities.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // Not allowed in XML 1.0 even as a character reference (a JUnit file with one is refused whole).
            case "\u{0}"..."\u{8}", "\u{B}", "\u{C}", "\u{E}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}":
                out += "\\u{" + String(c.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
