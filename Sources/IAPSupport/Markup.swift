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
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
