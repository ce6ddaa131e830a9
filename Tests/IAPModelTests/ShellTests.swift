import Foundation
import IAPModel
import IAPSupport
import Testing

/// The command lines iapcheck prints (replay, rerun, run again) must run what was run when pasted into a shell.
@Suite struct ShellTests {
    @Test func plainWordsStayAsTheyAre() {
        #expect(Shell.quote("mutant:no-grace") == "mutant:no-grace")
        #expect(Shell.quote("Corpus/a_b-1.json") == "Corpus/a_b-1.json")
    }

    @Test func everyOtherWordIsOneShellWordThatSaysItself() throws {
        let words = [
            "exec:python3 v.py --fast", "it's", "''", "", "a\"b", "$HOME", "*", "x;y", "a\\b", "tab\there", "new\nline",
            "~", "(x)",
        ]
        for w in words {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", "printf %s " + Shell.quote(w)]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            #expect(String(decoding: data, as: UTF8.self) == w, "\(w) quoted as \(Shell.quote(w))")
        }
    }
}
