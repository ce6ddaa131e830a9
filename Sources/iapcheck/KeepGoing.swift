/// `--keep-going[=N]`: an option whose value may be left out. The argument parser knows options with a value and
/// flags without one, so the bare form is given its default before parsing.
enum KeepGoing {
    static let defaultLimit = 5
    /// Distinct failures a run writing a baseline shrinks unless `--keep-going=N` says otherwise: one bug can show
    /// under several signatures, and the baseline needs each.
    static let baselineLimit = 20

    /// `--keep-going` → `--keep-going=5`; `--keep-going 3` → `--keep-going=3`; `--keep-going=3` as it is.
    static func expand(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            i += 1
            if a == "--" {
                out += arguments[(i - 1)...]
                break
            }
            guard a == "--keep-going" else {
                out.append(a)
                continue
            }
            if i < arguments.count, Int(arguments[i]) != nil {
                out.append("--keep-going=\(arguments[i])")
                i += 1
            } else {
                out.append("--keep-going=\(defaultLimit)")
            }
        }
        return out
    }
}
