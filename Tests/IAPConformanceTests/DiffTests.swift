import Foundation
import IAPConformance
import IAPModel
import IAPReference
import IAPTesting
import IAPValidatorAPI
import Testing

/// `iapcheck diff`: two builds compared case by case with no oracle — a change where the oracle leaves the answer open
/// is reported (shrunk, under its signature), identical builds report nothing, and a recording stands in for the old
/// build.
@Suite struct DiffTests {
    static func checker(_ v: any Validator, seed: UInt64, cases: Int, only: Int? = nil) -> Checker {
        var o = CheckOptions()
        (o.seed, o.cases, o.onlyCase) = (seed, cases, only)
        o.drawsCatalogs = true  // as the command line without --catalog
        return Checker(options: o, validator: v)
    }

    /// The reference and the variant reading a product's end paid grant first differ only where the user's own grace
    /// and a family share overlap, which the oracle leaves open: `check` passes both, `diff` reports exactly that
    /// change, shrunk to a smaller history on which the two still differ.
    @Test(.long) func aChangeWhereTheOracleIsOpenIsReportedShrunk() throws {
        let paidFirst = Variants.named("paid-first")!.make()
        // The variant passes the oracle on the case where it differs.
        let check = Self.checker(paidFirst, seed: 1, cases: 1322, only: 1321).run()
        #expect(check.failures.isEmpty)
        let run = DiffRun(
            checker: Self.checker(paidFirst, seed: 1, cases: 1322, only: 1321), old: .validator(ReferenceValidator()))
        let result = try run.run()
        #expect(result.compared == 1)
        let change = try #require(result.changes.first)
        #expect(result.changes.count == 1)
        #expect(change.signature.difference == "answer changed")
        #expect(change.signature.field == "ownership" || change.signature.field == "expiresDate")
        #expect(change.shrinkAttempts > 0 && change.history.actionCount < change.originalActions)
        #expect(change.change.observedAnswer != change.change.expectedAnswer)
        let text = result.lines(against: "reference", seed: 1, replay: { "replay \($0)" })
        #expect(text.contains { $0.hasPrefix("CHANGED answer changed") })
        // The old build's value and this build's, in the diff's words (not the oracle's "expected", "got").
        #expect(text.contains { $0.contains(" old build ") && $0.contains(", this build ") }, "\(text)")
        #expect(text.last?.hasPrefix("CHANGED: 1 kind of change in 1 case") == true)
        #expect(result.exitCode == 1)
        // Accepted in an allow file: listed, exit 0.
        var allowing = run
        allowing.allow = Baseline(entries: [.init(signature: change.signature, reason: "our reading", replay: nil)])
        let allowed = try allowing.run()
        #expect(allowed.changes.isEmpty && allowed.allowed[change.signature] == 1 && allowed.exitCode == 0)
    }

    /// Each of the comparison's phrasings reads in the builds' words (the Go trial's "not old build at all").
    @Test(arguments: [
        (
            "entitlement plus: not expected at all, validator says active",
            "entitlement plus: not in the old build's answer, this build says active"
        ),
        (
            "entitlement plus: expected active, validator does not list it",
            "entitlement plus: old build active, this build does not list it"
        ),
        ("product a: state expected grace, got expired", "product a: state old build grace, this build expired"),
    ])
    func aDifferenceReadsInTheBuildsWords(oracle: String, diff: String) {
        #expect(DiffRun.Result.inBuildsWords(oracle) == diff)
    }

    /// `--write-allow` over a file whose reasons a person filled in keeps them, and the replay lines it prints write
    /// nothing: the Go trial ran a printed replay, which kept `--write-allow`, and lost two reasons.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: BuiltIAPCheck.path), "iapcheck is not built"))
    func rewritingAnAllowFileKeepsItsReasons() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("allow-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = [
            "diff", "--validator", "variant:paid-first", "--against-validator", "reference", "--cases", "1322",
            "--case", "1321", "--write-allow", file.path,
        ]
        func diff() throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: BuiltIAPCheck.path)
            p.arguments = arguments
            let out = Pipe()
            (p.standardOutput, p.standardError) = (out, FileHandle.nullDevice)
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return text
        }
        let first = try diff()
        let replay = try #require(first.split(separator: "\n").first { $0.contains("replay: ") })
        #expect(!replay.contains("--write-allow"), "\(replay)")
        var allow = try #require(Baseline.loadAsIs(path: file.path))
        allow.entries[0].reason = "our reading of a grace period beside a family share"
        try allow.write(to: file.path)
        let second = try diff()
        #expect(second.contains("(1 with the reason the file gave)"), "\(second)")
        #expect(try Baseline.load(path: file.path).entries.map(\.reason) == [allow.entries[0].reason])
    }

    /// A shrink that `--shrink-seconds` ended says so, not that the old build must be at hand (it was).
    @Test func aShrinkTheTimeBudgetEndedSaysSo() throws {
        var checker = Self.checker(Variants.named("paid-first")!.make(), seed: 1, cases: 1322, only: 1321)
        checker.options.shrinkBudget.maxSeconds = 0
        let result = try DiffRun(checker: checker, old: .validator(ReferenceValidator())).run()
        let text = result.lines(against: "reference", seed: 1, replay: { "replay \($0)" })
        #expect(text.contains { $0.contains("--shrink-seconds ended") }, "\(text)")
        #expect(!text.contains { $0.contains("--against-validator shrinks it") })
    }

    @Test(.long) func identicalBuildsReportNothing() throws {
        let result = try DiffRun(
            checker: Self.checker(ReferenceValidator(), seed: 5, cases: 150), old: .validator(ReferenceValidator())
        ).run()
        #expect(result.compared == 150 && result.changes.isEmpty && result.exitCode == 0)
    }

    /// `check --record DIR`, then `diff --against DIR`: the same build against its recording changes nothing; a build
    /// that reads grace from the retry flag alone (another open point) shows its changes, unshrunk; a recording of
    /// other cases is refused.
    @Test(.long) func aRecordingStandsInForTheOldBuild() throws {
        let dir = Scratch.url.appendingPathComponent("recording-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let recorder = Self.checker(ReferenceValidator(), seed: 1, cases: 120)
        let header = Recording.Header(
            iapcheck: "test", validator: "reference", identity: DiffRun.identity(of: recorder))
        #expect(try DiffRun.record(recorder, header: header, into: dir) == 120)
        let recording = try Recording.load(directory: dir)
        #expect(recording.cases.count == 120 && recording.header.identity.seed == 1)

        let same = try DiffRun(
            checker: Self.checker(ReferenceValidator(), seed: 1, cases: 120), old: .recording(recording)
        )
        .run()
        #expect(same.compared == 120 && same.changes.isEmpty)

        let flagOnly = try DiffRun(
            checker: Self.checker(Variants.named("retry-flag-only")!.make(), seed: 1, cases: 120),
            old: .recording(recording)
        ).run()
        #expect(!flagOnly.changes.isEmpty)
        #expect(flagOnly.changes.allSatisfy { $0.shrinkAttempts == 0 })
        // The oracle accepts the variant on the same cases: the changes are where it leaves the answer open.
        #expect(Self.checker(Variants.named("retry-flag-only")!.make(), seed: 1, cases: 120).run().failures.isEmpty)

        // Cases the recording does not hold are counted apart; other cases under the same index are refused.
        let more = try DiffRun(
            checker: Self.checker(ReferenceValidator(), seed: 1, cases: 130), old: .recording(recording)
        )
        .run()
        #expect(more.compared == 120 && more.notRecorded == 10)
        #expect(throws: DiffRun.RecordingMismatch.self) {
            try DiffRun(checker: Self.checker(ReferenceValidator(), seed: 9, cases: 5), old: .recording(recording))
                .run()
        }
    }

    /// A recording's last line cut off by a killed run is dropped; the cases before it stand.
    @Test func aCutOffLastLineLosesOnlyThatCase() throws {
        let dir = Scratch.url.appendingPathComponent("recording-cut-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let recorder = Self.checker(ReferenceValidator(), seed: 1, cases: 3)
        let header = Recording.Header(
            iapcheck: "test", validator: "reference", identity: DiffRun.identity(of: recorder))
        _ = try DiffRun.record(recorder, header: header, into: dir)
        let path = dir + "/" + Recording.fileName
        var text = try String(contentsOfFile: path, encoding: .utf8)
        text.removeLast(40)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try Recording.load(directory: dir).cases.keys.sorted() == [0, 1])
    }
}
