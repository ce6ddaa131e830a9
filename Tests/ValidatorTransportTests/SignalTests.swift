import Foundation
import IAPProcess
import IAPTesting
import Testing

/// iapcheck starts validators and backends as leaders of their own process groups (a terminal's Ctrl-C does not
/// reach them): killed by a signal, it must take them with it, or they keep running, holding ports and files.
@Suite struct SignalTests {
    static let binary = BuiltIAPCheck.path

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func aTerminatedCheckTakesItsValidatorsProcessesWithIt() throws {
        let dir = Scratch.directory + "signal-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let pidFile = dir + "/sleeper.pid"
        // A validator that leaves a process behind in its group, which ignores the closing of its stdin.
        let validator = "exec:sleep 300 & echo $! > \(pidFile); exec \(Self.binary) serve"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["check", "--validator", validator, "--cases", "1000000", "--no-corpus", "--quiet"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        var sleeper: Int32?
        let deadline = Date().addingTimeInterval(30)
        while sleeper == nil && Date() < deadline {
            sleeper = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap {
                Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            usleep(20_000)
        }
        let pid = try #require(sleeper, "the validator did not start")
        defer { kill(pid, SIGKILL) }
        usleep(300_000)  // the check is under way
        p.terminate()  // SIGTERM
        let ends = Date().addingTimeInterval(10)
        while p.isRunning && Date() < ends { usleep(20_000) }
        #expect(!p.isRunning, "iapcheck did not end on SIGTERM")
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        #expect(p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGTERM)
        let gone = Date().addingTimeInterval(5)
        while !ProcessTree.hasExited(pid) && Date() < gone { usleep(20_000) }
        #expect(ProcessTree.hasExited(pid), "the validator's process \(pid) outlived iapcheck")
    }

    /// The first Ctrl-C is answered at once (the case under way may take long against a slow backend, and silence
    /// reads as a hang), and the run stops with what it found: exit 130.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: binary), "iapcheck is not built"))
    func theFirstCtrlCIsAnsweredAtOnceAndTheRunStops() throws {
        let dir = Scratch.directory + "sigint-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: dir + "/err.txt", contents: nil)
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/err.txt"))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.binary)
        p.arguments = ["check", "--cases", "1000000", "--no-corpus"]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL) } }
        usleep(1_500_000)  // the check is under way
        #expect(p.isRunning, "a million cases ended within 1.5 s")
        kill(p.processIdentifier, SIGINT)
        let ends = Date().addingTimeInterval(30)
        while p.isRunning && Date() < ends { usleep(20_000) }
        #expect(!p.isRunning, "iapcheck did not stop within 30 s of one Ctrl-C")
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        try err.close()
        let said = try String(contentsOfFile: dir + "/err.txt", encoding: .utf8)
        #expect(p.terminationReason == .exit && p.terminationStatus == 130, "\(said.suffix(2000))")
        #expect(said.contains("iapcheck: stopping after what is under way"), "\(said.suffix(2000))")
    }
}
