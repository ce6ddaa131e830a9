import ArgumentParser
import Foundation
import IAPEncoding
import IAPModel

/// Before a run: the place its results go must be writable (created if missing), or exit 2 naming it — a long run
/// must not end with nowhere to put what it found.
func requireWritable(directory: String) throws {
    let probe = (directory as NSString).appendingPathComponent(".iapcheck-write-probe-\(getpid())")
    do {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("probe".utf8).write(to: URL(fileURLWithPath: probe))
        try FileManager.default.removeItem(atPath: probe)
    } catch {
        throw fail("error: cannot write results to \(directory): \(StrictJSON.reason(error))", code: Exit.usage)
    }
}

func requireWritable(file: String) throws {
    let dir = (file as NSString).deletingLastPathComponent
    try requireWritable(directory: dir.isEmpty ? "." : dir)
}

/// After a run: a failed write (a full disk, a directory removed meanwhile) is reported with the path; what was
/// printed stays the record of the run.
func writeResults(_ what: String, to path: String, _ write: () throws -> Void) throws {
    do { try write() } catch {
        throw fail(
            "error: could not write \(what) to \(path): \(StrictJSON.reason(error)); the summary printed above is the record of this run",
            code: Exit.usage)
    }
}

func fail(_ message: String, code: Int32) -> ExitCode {
    try? FileHandle.standardError.write(contentsOf: Data((message + "\n").utf8))
    return ExitCode(code)
}
