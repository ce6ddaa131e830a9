import Foundation
import IAPModel
import IAPValidatorAPI

#if canImport(Glibc)
    import Glibc
#endif

/// The wall clock of a backend iapcheck starts under libfaketime (`"clock": "faketime"`,
/// docs/http-target.md#the-backends-clock): a file holding an absolute instant (epoch seconds with milliseconds)
/// that libfaketime reads on every clock call of the backend, so the backend's clock stands still at the instant
/// iapcheck last wrote, to the millisecond. Monotonic clocks are left alone (timers and event loops keep running).
///
/// The file holds the planned millisecond plus ``readingMargin``: libfaketime turns the text into a `timespec`
/// through floating point and can land up to a microsecond early, and runtimes that read seconds as a double
/// (Python's `time.time()`, Ruby's `Time#to_f`) lose a little more, so an instant written exactly often reads one
/// millisecond early (`int(time.time() * 1000)`). A quarter of a millisecond late is inside the planned millisecond
/// for every reader that truncates or rounds to milliseconds, and every boundary iapcheck asks about is a whole
/// millisecond, so no comparison changes side.
public struct FakeClock: Sendable {
    /// The file libfaketime reads (`FAKETIME_TIMESTAMP_FILE`).
    public let file: String
    /// The preload library.
    public let library: String

    /// Where Debian's `libfaketime` package and a `make install` put the multi-threaded library.
    static let searchPaths = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
        "/usr/lib/faketime/libfaketimeMT.so.1", "/usr/local/lib/faketime/libfaketimeMT.so.1",
        "/usr/lib64/faketime/libfaketimeMT.so.1",
    ]

    /// The library: `IAPCHECK_LIBFAKETIME`, or the first of ``searchPaths`` that exists; nil when none does.
    public static func findLibrary() -> String? {
        if let given = ProcessInfo.processInfo.environment["IAPCHECK_LIBFAKETIME"], !given.isEmpty {
            return FileManager.default.fileExists(atPath: given) ? given : nil
        }
        return searchPaths.first { FileManager.default.fileExists(atPath: $0) }
    }

    public static let missingLibrary =
        "\"clock\": \"faketime\" needs libfaketime (Debian: apt-get install libfaketime; elsewhere set IAPCHECK_LIBFAKETIME to libfaketimeMT.so.1)"

    /// A clock in `directory`, set to the real time until the first request.
    public init(directory: String) throws(ValidatorFailure) {
        guard let library = Self.findLibrary() else { throw ValidatorFailure(.unavailable, Self.missingLibrary) }
        self.library = library
        file = directory + "/faketime"
        try set(Millis(Date().timeIntervalSince1970 * 1000))
    }

    /// What the backend's process needs in its environment.
    public var environment: [String: String] {
        let inherited = ProcessInfo.processInfo.environment["LD_PRELOAD"].map { ":" + $0 } ?? ""
        return [
            "LD_PRELOAD": library + inherited, "FAKETIME_TIMESTAMP_FILE": file, "FAKETIME_NO_CACHE": "1",
            // Epoch seconds, so neither the backend's time zone nor its locale changes how the file reads.
            "FAKETIME_FMT": "%s",
            // Timers, sleeps and event loops run on the monotonic clock: a frozen one would stop them.
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            // With the monotonic clock left real, libfaketime up to 0.9.12 still subtracts a faked monotonic instant
            // from the deadline of a timed wait on a monotonic condition variable, then (with its "forced monotonic
            // fix", on by default for glibc 2.30 and later) adds it to the real one: the wait ends at once or much
            // too late. Ruby's thread scheduler and CPython's lock hand-offs wait so, and stalled for seconds or
            // spun. Without the fix the deadline is handed on as the program computed it, on the real clock.
            "FAKETIME_FORCE_MONOTONIC_FIX": "0",
        ]
    }

    /// How far past the planned millisecond the file puts the clock, in microseconds (see the type's comment).
    public static let readingMargin: Int64 = 250

    /// The file's text for `t`: epoch seconds with six decimals, ``readingMargin`` past the millisecond.
    public static func text(_ t: Millis) -> String {
        let micros = Int64(t) * 1000 + readingMargin
        let (s, us) = micros.quotientAndRemainder(dividingBy: 1_000_000)
        guard us >= 0 else { return "\(s - 1)." + sixDigits(us + 1_000_000) }
        return "\(s)." + sixDigits(us)
    }

    static func sixDigits(_ n: Int64) -> String {
        let digits = String(n)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// Sets the clock: written whole and renamed into place, so the backend never reads half an instant. The file
    /// written first has a name of its own per call: both sides of a parallel-delivery race set the clock at once.
    public func set(_ t: Millis) throws(ValidatorFailure) {
        let text = Self.text(t)
        let temporary = file + ".new-" + UUID().uuidString
        guard FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8)),
            rename(temporary, file) == 0
        else {
            throw ValidatorFailure(.unavailable, "cannot write the backend's clock file \(file)")
        }
    }
}
