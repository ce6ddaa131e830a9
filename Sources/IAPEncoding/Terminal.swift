/// Text from a validator (its name, an id it answered, a body or a log line it wrote) on the way to a terminal or a
/// report: a control character could clear the screen, recolour it or start a forged line, so each is shown as an
/// escape instead.
public enum Terminal {
    /// `s` with every control character (C0, DEL and C1) written as `\u{1B}`; line feeds and tabs kept when
    /// `keepingLines`, for text that is many lines by design (a transcript, a log's tail).
    public static func visible(_ s: String, keepingLines: Bool = false) -> String {
        func isControl(_ c: Unicode.Scalar) -> Bool {
            if keepingLines && (c == "\n" || c == "\t") { return false }
            return c.value < 0x20 || (0x7F...0x9F).contains(c.value)
        }
        guard s.unicodeScalars.contains(where: isControl) else { return s }
        var out = ""
        for c in s.unicodeScalars {
            if isControl(c) {
                out += "\\u{" + String(c.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
