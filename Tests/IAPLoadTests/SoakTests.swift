import Foundation
import IAPLoad
import IAPModel
import IAPReference
import IAPSupport
import IAPTesting
import Testing

/// What a soak run records besides latency: when each injected fault fired (drawn on the report's plots) and
/// iapcheck's own memory at the start and the end.
@Suite struct SoakTests {
    @Test(.long) func faultsAreTimedAndDrawnAndMemoryIsRead() throws {
        let profile = try LoadProfile.decode(
            Data(
                #"""
                {"name":"soak-unit","mix":{"appTransaction":70,"query":30},"pool":{"size":300},
                 "executor":{"type":"constant-rate","rate":200,"workers":2},"warmupSeconds":0,"durationSeconds":2}
                """#.utf8), file: "soak.json")
        let driver = LoadDriver(profile: profile, pool: ArtifactPool.build(profile)) { ReferenceValidator() }
        let fired = Locked(0)
        driver.periodicFault = (0.5, { fired.add(1) })
        let workers = try driver.run(seconds: 2, record: true)
        #expect(driver.faultTimes.count == fired.value && fired.value >= 2)
        #expect(driver.faultTimes.allSatisfy { $0 > 0.3 && $0 < 2.2 })
        #expect(driver.faultTimes == driver.faultTimes.sorted())
        var r = LoadResults(profile: profile, workers: workers, seconds: 2)
        r.summary.faultSeconds = driver.faultTimes
        let rss = try #require(LoadResults.residentBytes())
        #expect(rss > 1_000_000)
        (r.summary.rssStartBytes, r.summary.rssEndBytes) = (rss, rss)
        let dir = Scratch.directory + "iapcheck-soak-\(UUID().uuidString)"
        try r.write(to: dir)
        let html = try String(contentsOfFile: dir + "/report.html", encoding: .utf8)
        // One dashed line per fault on each of the two time plots.
        #expect(html.components(separatedBy: "stroke-dasharray").count - 1 == 2 * driver.faultTimes.count)
        #expect(html.contains("iapcheck's memory (RSS)"))
        let summary = try LoadResults.loadBaseline(path: dir + "/summary.json")
        #expect(summary.faultSeconds?.count == driver.faultTimes.count && summary.rssEndBytes == rss)
    }
}
