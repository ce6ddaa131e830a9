import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPValidatorAPI

/// The accepted divergences a run reads (docs/check.md#baselines): `--baseline FILE`, else the `"baseline"` of an
/// `http:` target file; the baseline and its file, or nil. A file that is not a baseline, or an entry without a
/// reason, is a usage error naming it.
func acceptedDivergences(option: String?, validator spec: ValidatorSpec) throws -> (Baseline, file: String)? {
    var file = option
    if file == nil, let target = spec.targetFile {
        // A target file with other problems is reported where the validator is made.
        file = (try? HTTPValidator.Target.load(path: target))?.baseline
    }
    guard let file else { return nil }
    do {
        return (try Baseline.load(path: file), file)
    } catch {
        throw fail("error: \(error)", code: Exit.usage)
    }
}
