import ArgumentParser
import Foundation
import IAPProcess

#if canImport(Glibc)
    import Glibc

    // A signed check allocates and frees tokens of tens of kilobytes (a notification nests two) thousands of times a
    // second. With glibc's defaults the heap's top is given back to the kernel whenever 128 KB of it is free, and
    // the next token faults the pages in again: about 2 % of a signed check. Keep up to 64 MB of free heap instead,
    // and serve blocks below 32 MB from the heap rather than from mappings of their own. (`mallopt` is declared in
    // malloc.h, which the Glibc module leaves out: looked up by name, and skipped where the C library has none.)
    if let symbol = dlsym(nil, "mallopt") {
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        let trimThreshold: Int32 = -1, topPad: Int32 = -2, mmapThreshold: Int32 = -3  // M_* in glibc's malloc.h
        _ = mallopt(trimThreshold, 64 << 20)
        _ = mallopt(mmapThreshold, 32 << 20)
        _ = mallopt(topPad, 16 << 20)
    }
#endif

// Standard output a line at a time, also into a file or a pipe: a CI log that takes both streams (`2>&1`) otherwise
// gets a stderr note (progress, a kept backend folder) in the middle of a report line, where a 4 KB buffer broke it.
#if canImport(Glibc)
    // Through its symbol: strict concurrency checking refuses to name the C global `stdout`.
    if let symbol = dlsym(nil, "stdout"),
        let stream = symbol.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee
    {
        setvbuf(stream, nil, _IOLBF, 0)
    }
#endif

// Killed by a signal, iapcheck takes the validators and backends it started with it.
ChildProcesses.installSignalHandlers()
ChildProcesses.installCrashHandlers()

// ArgumentParser exits 64 on a usage error; iapcheck documents 2 for every usage or configuration error (README,
// `--help`), so a CI gate can tell "the command was wrong" from "the validator failed" with one code.
do {
    var command = try IAPCheck.parseAsRoot(KeepGoing.expand(Array(CommandLine.arguments.dropFirst())))
    try command.run()
} catch {
    if IAPCheck.exitCode(for: error) == .validationFailure {
        try? FileHandle.standardError.write(contentsOf: Data((IAPCheck.fullMessage(for: error) + "\n").utf8))
        exit(Exit.usage)
    }
    IAPCheck.exit(withError: error)
}
