import Foundation
import IAPHTTP
import IAPModel
import IAPTesting
import PropertyEngine
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The fake clock (docs/http-target.md#the-backends-clock) must show every runtime the planned millisecond, read
/// the ways backends read it (`int(time.time() * 1000)`, `Date.now()`, `Time.now`, `System.currentTimeMillis()` …),
/// whatever its fraction: one reader one millisecond early turns a purchase asked about at its own instant into one
/// that "does not exist yet".
@Suite struct FakeClockRoundTripTests {
    static let root = ExampleBackendTests.root
    static let fixtures = root.appendingPathComponent("Tests/Fixtures/clock").path

    /// A runtime and its reader program (Tests/Fixtures/clock); each prints one line of readings per line it reads.
    struct Runtime: CustomTestStringConvertible, Sendable {
        let name: String
        let command: [String]
        var testDescription: String { name }
    }

    static let runtimes = [
        Runtime(name: "python", command: ["python3", fixtures + "/clock_reader.py"]),
        Runtime(name: "node", command: ["node", fixtures + "/clock_reader.mjs"]),
        Runtime(name: "ruby", command: ["ruby", fixtures + "/clock_reader.rb"]),
        Runtime(name: "java", command: ["java", "-Xshare:auto", fixtures + "/ClockReader.java"]),
    ]

    static func installed(_ program: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(program)")
        }
    }

    /// Planned instants across 2000–2100 with every kind of fraction (…000, …001, …250, …999), from one seed.
    static func instants(count: Int) -> [Millis] {
        var rng = SplitMix64(seed: 47)
        let fixed: [Millis] = [1_772_798_477_250, 1_772_798_477_999, 1_772_798_477_001, 1_772_798_477_000]
        return fixed
            + (0..<(count - fixed.count)).map { _ in Millis.random(in: 946_684_800_000..<4_102_444_800_000, using: &rng)
            }
    }

    @Test(
        .long,
        .enabled(if: FakeClock.findLibrary() != nil, "libfaketime is not installed (apt-get install libfaketime)"),
        arguments: runtimes)
    func everyReaderSeesThePlannedMillisecond(_ runtime: Runtime) throws {
        guard Self.installed(runtime.command[0]) else {
            // Not silently: the report of a run without the runtime says which reader went unchecked.
            print("FakeClockRoundTripTests: \(runtime.name) is not installed here; its readers were not checked")
            return
        }
        let dir = Scratch.directory + "clock-\(runtime.name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let clock = try FakeClock(directory: dir)
        // The reader starts on the real clock and answers once before the clock moves, as a backend iapcheck starts
        // is up before its first case; every read is bounded, so a reader that hangs fails this test, never stalls it.
        let reader = try ClockReaderProcess(runtime, environment: clock.environment)
        defer { reader.stop() }
        _ = try #require(reader.read(within: 120), "\(runtime.name) did not answer its first read within 120 s")
        var readings = 0
        var wrong: [String] = []
        for t in Self.instants(count: 1000) {
            try clock.set(t)
            let line = try #require(
                reader.read(within: 30), "\(runtime.name) did not answer within 30 s after the clock moved to \(t)")
            for (i, field) in line.split(separator: " ").enumerated() {
                readings += 1
                if Millis(field) != t { wrong.append("reader \(i) read \(field) for \(t) (\(FakeClock.text(t)))") }
            }
        }
        print("FakeClockRoundTripTests: \(runtime.name): \(readings) readings of 1000 instants, \(wrong.count) off")
        #expect(readings >= 3000)
        #expect(wrong.isEmpty, "\(runtime.name): \(wrong.count) readings off, first: \(wrong.prefix(5))")
    }

    /// Threads of a runtime under the fake clock hand over as they do without it. libfaketime's timed waits on a
    /// monotonic condition variable went wrong with the monotonic clock left real (FakeClock's environment says
    /// why): CPython's two CPU-bound threads spun in the kernel for 2–5 s instead of 0.2 s, and Ruby's thread
    /// hand-offs stalled for seconds, so a WEBrick backend timed out at random.
    @Test(
        .enabled(if: FakeClock.findLibrary() != nil, "libfaketime is not installed (apt-get install libfaketime)"),
        .enabled(if: installed("python3"), "python3 is not installed"))
    func threadsHandOverUnderTheFakeClockAsWithoutIt() throws {
        let dir = Scratch.directory + "clock-threads-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let clock = try FakeClock(directory: dir)
        try clock.set(1_772_798_477_250)
        let program = """
            import threading, time
            def spin():
                x = 0
                for i in range(2_000_000): x += i
            c = time.process_time()
            ts = [threading.Thread(target=spin) for _ in range(2)]
            for t in ts: t.start()
            for t in ts: t.join()
            print(time.process_time() - c)
            """
        func cpuSeconds(_ environment: [String: String]) throws -> Double {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["timeout", "60", "python3", "-c", program]
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return try #require(Double(text.trimmingCharacters(in: .whitespacesAndNewlines)), "printed '\(text)'")
        }
        let plain = try cpuSeconds([:])
        let faked = try cpuSeconds(clock.environment)
        #expect(faked < 3 * plain + 0.3, "CPU time \(faked) s under the fake clock, \(plain) s without it")
    }

    @Test func theFileTextIsThePlannedMillisecondAndAQuarter() {
        #expect(FakeClock.text(1_772_798_477_250) == "1772798477.250250")
        #expect(FakeClock.text(1_772_798_477_000) == "1772798477.000250")
        #expect(FakeClock.text(-1) == "-1.999250")
    }
}

/// A reader program under the fake clock, asked for one line of readings at a time.
final class ClockReaderProcess {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    var lines: LineReader

    init(_ runtime: FakeClockRoundTripTests.Runtime, environment: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = runtime.command
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = input
        process.standardOutput = output
        lines = LineReader(handle: output.fileHandleForReading)
        try process.run()
    }

    /// Asks for one reading; nil when none came within `seconds` (or the reader closed its output).
    func read(within seconds: Double) -> String? {
        input.fileHandleForWriting.write(Data("read\n".utf8))
        return lines.next(within: seconds)
    }

    /// End of input ends every reader; SIGKILL for one that does not (a test runner may block SIGTERM for its
    /// children, and a hung one must not hold the test).
    func stop() {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Lines from a pipe, one at a time, for a conversation with a child process.
struct LineReader {
    let handle: FileHandle
    var buffer = Data()

    /// The next line; nil at end of output, or when `seconds` pass without one.
    mutating func next(within seconds: Double = .infinity) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                return line
            }
            if seconds.isFinite {
                var fd = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
                let left = deadline.timeIntervalSinceNow
                if left <= 0 || poll(&fd, 1, Int32(left * 1000)) <= 0 { return nil }
            }
            let more = handle.availableData
            if more.isEmpty { return nil }
            buffer.append(more)
        }
    }
}
