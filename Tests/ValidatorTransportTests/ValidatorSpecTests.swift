import IAPValidatorAPI
import Testing

/// `--validator` and a load profile's `target` are read by one parser (docs/check.md#validators).
@Suite struct ValidatorSpecTests {
    @Test func everyFormParsesAndPrintsAsGiven() throws {
        let texts = [
            "reference", "mutant:no-grace", "variant:keeps-history", "exec:python3 v.py --x 'a b'",
            "http:config/my target.json", "exec:node x.mjs http:y",
        ]
        for text in texts { #expect(try ValidatorSpec(parsing: text).description == text) }
        #expect(try ValidatorSpec(parsing: "exec:a:b") == .exec("a:b"))
        #expect(try ValidatorSpec(parsing: "http:t.json").targetFile == "t.json")
        #expect(try ValidatorSpec(parsing: "mutant:x").isMutant && ValidatorSpec(parsing: "variant:y").isInProcess)
        #expect(
            try ValidatorSpec(parsing: "exec:p").isOutOfProcess && !ValidatorSpec(parsing: "reference").isOutOfProcess)
    }

    @Test func aTextThatIsNoValidatorSaysWhichFormsThereAre() {
        for text in ["", "ref", "Reference", "exec", "python3 v.py", "ftp:x", "exec:", "http:  ", "mutant:"] {
            #expect(throws: ValidatorSpec.ParseError.self, "\(text)") { try ValidatorSpec(parsing: text) }
        }
        do {
            _ = try ValidatorSpec(parsing: "ftp:x")
        } catch {
            #expect(error.description.contains(ValidatorSpec.forms))
        }
    }
}
