import ArgumentParser
import Foundation
import IAPConformance
import IAPHTTP
import IAPModel
import IAPSupport

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Replay saved counterexamples against a validator (default: the folder check saves its counterexamples in, Corpus/http-NAME/ for a backend; Corpus/ for the reference and mutants).",
        discussion: """
            Each file is a concrete case (history, deliveries, questions); the oracle recomputes the expected answers. \
            With --expect-fail, every file must fail (use it to confirm a mutant still fails on its own counterexample). \
            Exit codes: 0 as expected; 1 a discrepancy (or, with --expect-fail, a pass); 2 unreadable file; 3 validator failure.
            """)

    @Argument(help: "Corpus files or directories.")
    var files: [String] = []

    @Option(
        help:
            "The validator, as check takes it: reference, variant:NAME, mutant:NAME, exec:'COMMAND' or http:TARGET.json."
    )
    var validator = "reference"

    @Option(help: "Seconds a program or a backend may take to answer one request before it is reported as hanging.")
    var timeout: Double = 5

    @Flag(help: "Expect every case to fail.")
    var expectFail = false

    @Flag(help: "Under a failure, what each delivery changed (as check --explain).")
    var explain = false

    @Flag(
        name: .long,
        help:
            "Keep the {tmp} folder of a backend iapcheck starts (its output, its data, its clock) after a replay that passed; a failed one keeps it anyway and prints where."
    )
    var keepTmp = false

    func run() throws {
        let paths = corpusPaths()
        if saysNothingToReplay(paths) { return }
        if keepTmp { ManagedBackend.keepDirectories.withLock { $0 = true } }
        let v = try makeValidator(validator, timeout: timeout)
        var unexpected = 0, failedAsProgram = false
        for path in paths {
            let saved: CorpusCase
            do {
                saved = try Corpus.load(path: path)
            } catch {
                throw fail("error: \(error)", code: Exit.usage)
            }
            // As check replays its corpus: questions held clear of the validator's date precision.
            try? v.prepare()
            let testCase = saved.testCase.holdingQuestions(at: v.profile.datePrecision, profile: v.profile)
            switch CaseRunner.run(testCase, against: v) {
            case .passed:
                print("\(expectFail ? "UNEXPECTED PASS" : "pass") \(path)")
                if expectFail { unexpected += 1 }
            case .discrepancy(let d):
                print(
                    "\(expectFail ? "fails as expected" : "FAIL") \(path): \(d.finding) — property \(d.property.rawValue)"
                )
                if !expectFail {
                    unexpected += 1
                    print(explained(d, testCase, saved, path: path, validator: v.name))
                    if d.expected == "accepted" { print(Self.recordedFor(saved)) }
                }
            case .validatorFailed(let f, _):
                print("VALIDATOR FAILURE \(path): \(f)")
                failedAsProgram = true
            }
        }
        print("\(paths.count) case\(paths.count == 1 ? "" : "s") replayed against \(v.name), \(unexpected) unexpected")
        if failedAsProgram || unexpected > 0 { keepBackendOutput(of: v) }
        if failedAsProgram { throw ExitCode(Exit.validatorFailure) }
        if unexpected > 0 { throw ExitCode(Exit.discrepancy) }
    }

    /// Under a genuine artifact refused: the app the case was recorded for, which a backend set up for another app
    /// (a changed --app-apple-id, bundle id or environment) refuses rightly; check skips such files as another app's.
    static func recordedFor(_ saved: CorpusCase) -> String {
        let c = saved.testCase.config.catalog
        return
            "  recorded for \(c.bundleId), App Apple ID \(c.appAppleId), \(c.environment.rawValue): if the backend is set up for another app (another bundle id, --app-apple-id or environment), refusing is right, and check skips this file as another app's"
    }

    /// The files given, directories read for their saved cases; when none is given, the folders `check` saves this
    /// validator's counterexamples in (a backend's `Corpus/http-NAME/`, a program's `Corpus/exec-…/`; every app's
    /// when the backend has no name), else the Corpus folder.
    func corpusPaths() -> [String] {
        var paths: [String] = []
        for f in files.isEmpty ? Self.defaultFolders(validator) : files {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: f, isDirectory: &isDir), isDir.boolValue {
                paths += Corpus.files(in: f)
            } else if !files.isEmpty {
                paths.append(f)  // a default folder not made yet holds nothing
            }
        }
        return paths
    }

    /// No saved case to replay: said, and no backend started for nothing (a CI job replaying an empty folder learns
    /// why it passed).
    func saysNothingToReplay(_ paths: [String]) -> Bool {
        guard paths.isEmpty else { return false }
        let folders = files.isEmpty ? Self.defaultFolders(validator) : files
        print(
            "no saved counterexamples in \(folders.isEmpty ? "Corpus/http-…-HOST-PORT/" : folders.joined(separator: ", ")): nothing to replay (name files or folders to replay others)"
        )
        return true
    }

    static func defaultFolders(_ validator: String) -> [String] {
        guard let spec = try? parseValidator(validator) else { return ["Corpus"] }
        if let file = spec.targetFile, let t = try? HTTPValidator.Target.load(path: file) {
            if t.name != nil { return [Corpus.directory(forBackend: t.name, bundleId: "", host: t.host, port: t.port)] }
            // Named by app and address: every app's folder of this address.
            let suffix = "-\(t.host)-\(t.port)"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "Corpus")) ?? []
            return names.filter { $0.hasPrefix("http-") && $0.hasSuffix(suffix) }.sorted().map { "Corpus/" + $0 }
        }
        if case .exec = spec { return [Corpus.directory(forValidator: spec)] }
        return ["Corpus"]
    }

    /// A discrepancy as `check` prints it, with the command that replays this file (and with --explain, what each
    /// delivery changed).
    func explained(
        _ d: Discrepancy, _ testCase: GeneratedCase, _ saved: CorpusCase, path: String, validator name: String
    )
        -> String
    {
        var s = Reports.summary(
            of: d, testCase, caseIndex: saved.caseIndex, corpusFile: path,
            replay: "iapcheck replay \(Shell.quote(path)) --validator \(Shell.quote(validator))")
        if explain { s.deliveries = Explanation.deliveries(testCase, upTo: d.step, race: d.race) }
        return TextReport.discrepancy(s, headline: "  \(name) disagrees with the oracle")
    }
}
