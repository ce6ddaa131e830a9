/// Text from a validator (its name, an id it answered, a body or a log line it wrote) on the way to a terminal or a
/// report: a control character could clear the screen, recolour it or start a forged line, so each is shown as an
/// escape instead.
public enum Terminal {
    /// `s` with every control character (C0, DEL and C1) written as `\u{1B}`; line feeds and tabs kept when
    /// `keepingLines`, for text that is many lines by design (a transcript, a log's tail).
    public static func visible(_ s: String, keepingLines: Bool = false) -> String {
        func isControl(_ c: Unicode.Scalar) -> Bool {
            if keepingLines && (c == "\n" || c == "\t") { return false }
            return Terminal.isControl(c)
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

    /// A control character: C0, DEL or C1.
    public static func isControl(_ c: Unicode.Scalar) -> Bool { c.value < 0x20 || (0x7F...0x9F).contains(c.value) }

    /// `host` as a URL writes it: the IPv6 loopback in brackets.
    public static func urlHost(_ host: String) -> String { host == "::1" ? "[::1]" : host }
}
