// The harness's long self-checks in full (Sources/IAPSweeps): the oracle against the simulator's truth under every
// policy, the reference under every policy, every mutant caught and shrunk. `swift test` runs a share of each; CI
// runs this program, built in release beside `iapcheck`, where the whole sweeps take a fraction of their time in the
// debug test bundle (CONTRIBUTING.md, "How the tests are organised").
//
//     iapcheck-sweeps [--list] [--only TEXT]… [--jobs N]
//
// --only keeps the items whose name contains TEXT (repeatable: any of them). Exits 0 when every item passed, 1 when
// one failed (each failure printed whole, with the command that runs that item again), 2 on a usage error.
import Foundation
import IAPSupport
import IAPSweeps

/// A line at once (not print's buffer), as each item ends, also into a pipe or a CI log.
@Sendable func say(_ line: String) { try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8)) }

let usage = "usage: iapcheck-sweeps [--list] [--only TEXT]… [--jobs N]   (--only: items whose name contains TEXT)"
var only: [String] = []
var jobs = ProcessInfo.processInfo.activeProcessorCount
var list = false
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    switch name {
    case "--list": list = true
    case "--only" where arguments.first != nil: only.append(arguments.removeFirst())
    case "--jobs" where Int(arguments.first ?? "").map { $0 >= 1 } == true: jobs = Int(arguments.removeFirst())!
    case "-h", "--help":
        say(usage)
        exit(0)
    default:
        try? FileHandle.standardError.write(contentsOf: Data("iapcheck-sweeps: unexpected \(name)\n\(usage)\n".utf8))
        exit(2)
    }
}
// A TEXT that is an item's whole name selects that item alone (as the commands printed for failures do).
let all = Sweeps.all
let items = all.filter { item in
    only.isEmpty
        || only.contains { text in all.contains { $0.name == text } ? item.name == text : item.name.contains(text) }
}
if list {
    for item in items { say(item.name) }
    exit(0)
}
guard !items.isEmpty else {
    try? FileHandle.standardError.write(
        contentsOf: Data("iapcheck-sweeps: no item's name contains \(only); --list lists them\n".utf8))
    exit(2)
}
say("\(items.count) sweep items on \(jobs) threads")
let failed = SweepRun(jobs: jobs).run(items, emit: say)
if failed.isEmpty {
    say("all \(items.count) sweep items passed")
    exit(0)
}
say("\(failed.count) of \(items.count) sweep items failed; each again:")
for name in failed { say("  iapcheck-sweeps --only \(Shell.quote(name))") }
exit(1)
