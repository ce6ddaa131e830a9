import ArgumentParser
import Crypto
import Foundation
import IAPConformance
import IAPEncoding
import IAPModel
import IAPValidatorAPI

struct Certify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the fixed, versioned certification suite and write a JSON and an HTML report to Results/.",
        discussion: """
            Every property with its named seed and case count, then a probe of every forgery class. Unlike check, a \
            failing property does not stop the others. Exit code 0 when certified, 1 otherwise, 3 if the validator \
            failed as a program.
            """)

    @Option(help: "reference, mutant:NAME, exec:'COMMAND' or http:TARGET.json.") var validator = "reference"
    @Option(help: "Seconds per request for exec: validators.") var timeout: Double = 10
    @OptionGroup var options: CaseOptions
    @Option(help: "Multiply every case count (reports say so when not 1).") var scale: Double = 1
    @Option(help: "Directory for the report folder.") var results = "Results"
    @Option(
        help: ArgumentHelp(
            "Comma-separated properties or forgery classes where this validator is known to differ from the reference (e.g. oversized-token,replayed-notification-uuid for Apple's Python library, docs/verifiers.md#what-is-left-to-the-application). They are listed in the report; the exit code is 0 when every divergence was declared.",
            valueName: "NAMES"))
    var knownDivergences: String?
    @Option(
        help: ArgumentHelp(
            "Fault profile, as for check (kill, reset, webhook-5xx, slow-store): the suite runs under it; kill adds the durable-ack property.",
            valueName: "LIST"))
    var faults: String?
    @Option(
        help: ArgumentHelp(
            "Validators checked at once; the report is the same for any N. Default: the number of cores for built-in validators, 1 for exec:, for http: as the target allows (one backend per core with {port} in its start command; see check --help).",
            valueName: "N"))
    var jobs: Int?

    func run() throws {
        let (catalog, policy) = try options.loadOrExit()
        try requireWritable(directory: results)
        let faultProfile = try parseFaults(faults)
        // Before anything starts: a target's maxConcurrency bounds --jobs.
        let jobCount = try resolveJobs(jobs, for: validator, faults: faultProfile)
        let v = try makeValidator(validator, timeout: timeout, faults: faultProfile)
        if let problem = faultProfile.problem(with: v) { throw ValidationError(problem) }
        if v.isolation == .namespace && options.catalog == nil {
            throw fail(
                "error: \(validator) has no reset route, so the backend keeps its own products: name them with --catalog (and --bundle-id, --entitlements), as the backend is configured (docs/http-target.md#backends-without-a-reset-route)",
                code: Exit.usage)
        }
        let known = Set(commaList(knownDivergences ?? ""))
        let names = Set(CertificationSuite.entries.map(\.property.rawValue) + ForgeryClass.allCases.map(\.rawValue))
        if let unknown = known.subtracting(names).sorted().first {
            throw ValidationError(
                "--known-divergences: \"\(unknown)\" is neither a certified property nor a forgery class")
        }
        let record = try catalogRecord(catalog)
        // Cases of the whole suite, for the rate and the time left: the properties' counts at this scale.
        let suite = CertificationSuite.entries + (faultProfile.kill ? [CertificationSuite.durableAckEntry] : [])
        let totals = suite.map { ($0.property.rawValue, max(1, Int(Double($0.cases) * scale))) }
        let overall = Progress("certify", quiet: false)
        let caseProgress: (String, Int, Int) -> Void = { property, done, _ in
            guard let i = totals.firstIndex(where: { $0.0 == property }) else { return }
            let before = totals.prefix(i).map(\.1).reduce(0, +)
            overall.label = "certify (\(property), property \(i + 1) of \(totals.count))"
            overall.update(before + done, totals.map(\.1).reduce(0, +))
        }
        let report = CertificationSuite.run(
            v, spec: validator, catalog: catalog, policy: policy, scale: scale, knownDivergences: known,
            faults: faultProfile.isEmpty ? nil : faults, durableAck: faultProfile.kill, catalogRecord: record,
            jobs: jobCount,
            makeWorker: workerFactory(validator, timeout: timeout, faults: faultProfile, jobs: jobCount),
            maxSize: options.maxSize,
            progress: { line in FileHandle.standardError.write(Data("certify: \(line)\n".utf8)) },
            caseProgress: caseProgress)
        let stamp = report.date.replacingOccurrences(of: ":", with: "").replacingOccurrences(of: ".", with: "")
        let slug = (report.hello ?? v.name).map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        let dir = (results as NSString).appendingPathComponent("certify-\(String(slug))-\(stamp)")
        for p in report.properties {
            print(
                "\(p.property.padding(toLength: 24, withPad: " ", startingAt: 0)) \(p.passed ? "pass" : "FAIL")  \(p.casesPhrase)\(p.counterexample.map { "  " + ($0.finding.map { $0 + ": " } ?? "") + ($0.differences.first ?? $0.observed) } ?? "")\(p.validatorFailure.map { "  validator failure: " + $0.message } ?? "")\(p.moreFailures.map { " (+\($0.count) more distinct)" } ?? "")"
            )
        }
        let rejected = report.forgeries.filter(\.rejected).count
        let uncredited = report.forgeries.filter { $0.genuineRefused != nil }.map(\.name)
        let accepted = report.forgeries.filter { !$0.holds && $0.genuineRefused == nil }.map(\.name)
        let notProbed = report.forgeries.filter { $0.notProbed != nil }.map(\.name)
        print(
            "forgeries: \(rejected)/\(report.forgeries.count - notProbed.count) classes rejected"
                + (notProbed.isEmpty
                    ? ""
                    : "; \(notProbed.count) not probed: their genuine twins are over the policy's tokenSizeLimit")
                + (accepted.isEmpty ? "" : "; not: " + accepted.joined(separator: ", "))
                + (uncredited.isEmpty
                    ? ""
                    : "; not credited, the genuine twin was refused too: " + uncredited.joined(separator: ", ")))
        for d in report.divergences {
            let under = d.seenUnder.map { $0.count > 1 ? " (seen under \($0.joined(separator: ", ")))" : "" } ?? ""
            print("divergence (\(d.declared ? "declared" : "UNEXPECTED")): \(d.kind) \(d.name): \(d.detail)\(under)")
        }
        if !report.declaredButNotObserved.isEmpty {
            print("declared but not observed: \(report.declaredButNotObserved.joined(separator: ", "))")
        }
        if let profile = report.profile {
            print("profile: \(profile)")
            let skipped = report.notChecked ?? []
            for kind in ["field", "channel", "property", "forgery"] {
                let names = skipped.filter { $0.kind == kind }.map(\.name)
                if !names.isEmpty { print("  not checked (\(kind)): \(names.joined(separator: ", "))") }
            }
        }
        let verdict =
            report.passed
            ? "CERTIFIED"
            : report.passedWithDeclaredDivergences ? "CERTIFIED WITH DECLARED DIVERGENCES" : "NOT CERTIFIED"
        try writeResults("the certification report", to: dir) {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try JSONFormat.write(report, to: (dir as NSString).appendingPathComponent("report.json"))
            try CertificationHTML.render(report).write(
                toFile: (dir as NSString).appendingPathComponent("report.html"), atomically: true, encoding: .utf8)
        }
        print("catalog: \(record.description), bundle id \(record.bundleId)")
        print("\(verdict): \(dir)/report.html")
        if report.properties.contains(where: {
            $0.validatorFailure?.kind == .misconfigured
        }) {
            throw ExitCode(Exit.usage)
        }
        if report.properties.contains(where: { $0.validatorFailure != nil })
            || report.forgeries.contains(where: { $0.validatorFailure != nil })
        {
            throw ExitCode(Exit.validatorFailure)
        }
        if !report.passedWithDeclaredDivergences { throw ExitCode(Exit.discrepancy) }
    }

    /// What the report records about the catalog: the file and a hash of the bytes that were read.
    func catalogRecord(_ catalog: Catalog) throws -> CertificationSuite.CatalogRecord {
        let args = options.selection(validator: validator).catalogArguments
        guard let path = options.catalog, path != "builtin" else {
            return CertificationSuite.CatalogRecord(
                file: nil, sha256: nil, catalog: catalog, arguments: args, drawn: options.drawsCatalogs)
        }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let hash = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        return CertificationSuite.CatalogRecord(file: path, sha256: hash, catalog: catalog, arguments: args)
    }
}
