/// Command lines that iapcheck prints for a person to paste (replay, rerun, run again): every argument that a POSIX
/// shell would split, expand or glob is single-quoted, so the pasted line runs what was run.
public enum Shell {
    /// `word` as one shell word: unchanged when it holds only characters no shell treats specially, else in single
    /// quotes (a quote inside written as `'\''`).
    public static func quote(_ word: String) -> String {
        let plain =
            !word.isEmpty
            && word.utf8.allSatisfy { b in
                switch b {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "@%+=:,./_-".utf8.contains(b)
                }
            }
        if plain { return word }
        return "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
