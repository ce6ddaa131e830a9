/// One field of the answer format that a validator may declare it answers (`docs/answers.md`, `hello.answers`).
public enum AnswerField: String, Codable, Hashable, Sendable, CaseIterable, Comparable {
    case productsActive = "products.active"
    case productsState = "products.state"
    case productsExpiresDate = "products.expiresDate"
    case productsOwnership = "products.ownership"
    case groupsEffectiveProductId = "groups.effectiveProductId"
    case groupsIntroEligible = "groups.introEligible"
    case consumables
    case entitlementsActive = "entitlements.active"
    case entitlementsExpiresDate = "entitlements.expiresDate"
    case entitlementsState = "entitlements.state"
    case entitlementsOwnership = "entitlements.ownership"

    /// The list of the answer a field is part of.
    public enum List: String, Sendable { case products, groups, consumables, entitlements }

    public var list: List {
        switch self {
        case .productsActive, .productsState, .productsExpiresDate, .productsOwnership: .products
        case .groupsEffectiveProductId, .groupsIntroEligible: .groups
        case .consumables: .consumables
        case .entitlementsActive, .entitlementsExpiresDate, .entitlementsState, .entitlementsOwnership: .entitlements
        }
    }

    public static func < (a: AnswerField, b: AnswerField) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The declared fields under which a difference is compared: a group missing from the answer counts against
    /// either of the group's fields.
    static func fields(of key: AnswerDifference.Key) -> [AnswerField] {
        switch (key.subject, key.field) {
        case (.product, .active): [.productsActive]
        case (.product, .state): [.productsState]
        case (.product, .expiresDate): [.productsExpiresDate]
        case (.product, .ownership): [.productsOwnership]
        case (.group, .effectiveProductId): [.groupsEffectiveProductId]
        case (.group, .introEligible): [.groupsIntroEligible]
        case (.group, _): [.groupsEffectiveProductId, .groupsIntroEligible]
        case (.consumable, _): [.consumables]
        case (.entitlement, .active): [.entitlementsActive]
        case (.entitlement, .state): [.entitlementsState]
        case (.entitlement, .expiresDate): [.entitlementsExpiresDate]
        case (.entitlement, .ownership): [.entitlementsOwnership]
        case (.product, _), (.entitlement, _): []
        }
    }
}

/// What a validator answers and which channels it takes facts from: declared in `hello` (`exec:`), in the target
/// file (`http:`), or by `serve --answers/--channels`. iapcheck then delivers only over those channels and compares
/// only those fields (`docs/wire-protocol.md#declared-profiles`). A validator that declares nothing is checked on
/// products, groups and consumables over every channel, as protocol v1 always did.
public struct ValidatorProfile: Hashable, Sendable, CustomStringConvertible {
    /// Sorted, without repeats.
    public private(set) var answers: [AnswerField]
    /// In ``DeliveryChannel`` order, without repeats.
    public private(set) var channels: [DeliveryChannel]
    /// How exact the validator's dates are, in milliseconds (1: to the millisecond; 1000: it keeps seconds). An
    /// expiry within this of the oracle's counts as equal, and no question is asked closer than this to an instant
    /// where the answer changes (docs/http-target.md#precision).
    public var datePrecision: Millis = 1
    /// What the validator's `expiresDate` means where the user's own grace and a paid grant cover a product at once,
    /// when it says (a target's answer mapping, `"meaning"`): the run's policy then takes it
    /// (``Policy/adopting(_:)``, docs/http-target.md#what-a-date-means). nil: it does not say.
    public var expiresMeaning: Policy.ExpiresMeaning?
    /// false: the validator is asked only about its own present, as a backend whose entitlements route carries no
    /// `{at}` is in production (its clock is the question's instant). No question is then asked in hindsight, about
    /// an instant before what it was already told (docs/answers.md#questions-about-the-past): its clock never goes
    /// back in production, and a design that stores what each notification meant when it came is right there.
    public var questionsInHindsight = true
    /// States the validator does not tell apart, each group said with one word of its own (a target mapping
    /// `"lapsed": ["expired", "revoked", "billing-retry"]`): a state it answers counts as any other of its group
    /// (docs/http-target.md#profile-and-response-mapping). Empty: every state its own.
    public var stateGroups: [[EntitlementState]] = []

    /// The group `s` is told in, when it shares one.
    public func stateGroup(of s: EntitlementState) -> [EntitlementState]? { stateGroups.first { $0.contains(s) } }

    public init(answers: some Sequence<AnswerField>, channels: some Sequence<DeliveryChannel>) {
        self.answers = Set(answers).sorted()
        let set = Set(channels)
        self.channels = DeliveryChannel.allCases.filter(set.contains)
    }

    /// What a validator that declares nothing is checked on: every field but the entitlements, every channel.
    public static let undeclared = ValidatorProfile(
        answers: AnswerField.allCases.filter { $0.list != .entitlements }, channels: DeliveryChannel.allCases)

    /// Every field and every channel: iapcheck's own validators.
    public static let everything = ValidatorProfile(
        answers: AnswerField.allCases, channels: DeliveryChannel.allCases)

    /// Whether nothing was declared about the answers (a validator asked about its present only may still be: that is
    /// said of the route, not of the answers).
    public var isUndeclared: Bool {
        var p = self
        p.questionsInHindsight = true
        return p == .undeclared
    }

    public func declares(_ f: AnswerField) -> Bool { answers.contains(f) }

    public func accepts(_ c: DeliveryChannel) -> Bool { channels.contains(c) }

    /// Whether any entitlement field is declared (then cases carry a catalog with entitlements).
    public var answersEntitlements: Bool { answers.contains { $0.list == .entitlements } }

    /// Whether a difference is about a field this profile declares.
    public func compares(_ key: AnswerDifference.Key) -> Bool {
        AnswerField.fields(of: key).contains(where: answers.contains)
    }

    /// The fields of the answer format this profile leaves out.
    public var unansweredFields: [AnswerField] { AnswerField.allCases.filter { !answers.contains($0) } }

    /// The channels this profile leaves out.
    public var unusedChannels: [DeliveryChannel] { DeliveryChannel.allCases.filter { !channels.contains($0) } }

    /// `answers entitlements.active, entitlements.expiresDate; channels app-transaction, notification`.
    public var description: String {
        "answers \(answers.map(\.rawValue).joined(separator: ", ")); channels \(channels.map(\.protocolName).joined(separator: ", "))"
            + (datePrecision == 1 ? "" : "; dates to \(datePrecision == 1000 ? "the second" : "\(datePrecision) ms")")
            + (expiresMeaning.map { "; expiresDate means \($0.rawValue)" } ?? "")
            + (questionsInHindsight ? "" : "; asked about its present only (no questions in hindsight)")
    }

    /// A profile from the names a validator declares (`hello.answers`, `hello.channels`, `--answers`, `--channels`,
    /// a target file); either list may be absent (nil: as undeclared). Unknown or empty lists are refused with a
    /// message naming `field` and the known names.
    public static func parse(answers: [String]?, channels: [String]?, prefix field: String) throws(ProfileError)
        -> ValidatorProfile
    {
        var fields: [AnswerField] = ValidatorProfile.undeclared.answers
        if let answers {
            fields = []
            for name in answers {
                guard let f = AnswerField(rawValue: name) else {
                    throw ProfileError(
                        "\(field)answers: \"\(name)\" is not a field of the answer format; known: \(AnswerField.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                fields.append(f)
            }
            if fields.isEmpty { throw ProfileError("\(field)answers: the list is empty; declare at least one field") }
        }
        var chans = DeliveryChannel.allCases
        if let channels {
            chans = []
            for name in channels {
                guard let c = DeliveryChannel.allCases.first(where: { $0.protocolName == name }) else {
                    throw ProfileError(
                        "\(field)channels: \"\(name)\" is not a channel; known: \(DeliveryChannel.allCases.map(\.protocolName).joined(separator: ", "))"
                    )
                }
                chans.append(c)
            }
            if chans.isEmpty { throw ProfileError("\(field)channels: the list is empty; declare at least one channel") }
        }
        return ValidatorProfile(answers: fields, channels: chans)
    }

    /// The key under which an encoder's or decoder's user info carries the profile of the answer being read or
    /// written: declared lists and fields are strict, the others are skipped.
    public static let codingKey = CodingUserInfoKey(rawValue: "iapcheck.validatorProfile")!

    public static func declared(in decoder: any Decoder) -> ValidatorProfile? {
        decoder.userInfo[codingKey] as? ValidatorProfile
    }

    public static func declared(in encoder: any Encoder) -> ValidatorProfile? {
        encoder.userInfo[codingKey] as? ValidatorProfile
    }
}

extension ValidatorProfile: Codable {
    enum CodingKeys: String, CodingKey {
        case answers, channels, datePrecision, expiresMeaning, questionsInHindsight, stateGroups
    }

    /// As declared on the wire: field names and channel protocol names.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        do {
            self = try Self.parse(
                answers: try c.decode([String].self, forKey: .answers),
                channels: try c.decode([String].self, forKey: .channels), prefix: "profile.")
            if let p = try c.decodeIfPresent(Millis.self, forKey: .datePrecision), p >= 1 { datePrecision = p }
            expiresMeaning = try c.decodeIfPresent(Policy.ExpiresMeaning.self, forKey: .expiresMeaning)
            questionsInHindsight = try c.decodeIfPresent(Bool.self, forKey: .questionsInHindsight) ?? true
            stateGroups = try c.decodeIfPresent([[EntitlementState]].self, forKey: .stateGroups) ?? []
        } catch let e as ProfileError {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: e.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(answers.map(\.rawValue), forKey: .answers)
        try c.encode(channels.map(\.protocolName), forKey: .channels)
        if datePrecision != 1 { try c.encode(datePrecision, forKey: .datePrecision) }
        try c.encodeIfPresent(expiresMeaning, forKey: .expiresMeaning)
        if !questionsInHindsight { try c.encode(false, forKey: .questionsInHindsight) }
        if !stateGroups.isEmpty { try c.encode(stateGroups, forKey: .stateGroups) }
    }
}

/// A declared profile that cannot be used: an unknown field or channel name, an empty list.
public struct ProfileError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension Optional where Wrapped == ValidatorProfile {
    /// Whether an answer written under this profile carries `f`: with no profile, every field.
    func declares(_ f: AnswerField) -> Bool { self?.declares(f) ?? true }
}

extension KeyedDecodingContainer {
    /// A field of an answer entry: strict (typed, and present when `required`) when `profile` declares it or no
    /// profile is set; otherwise read if it happens to be there and well-typed, and ignored if not.
    func answerField<T: Decodable>(
        _ field: AnswerField, _ key: Key, required: Bool = false, _ profile: ValidatorProfile?
    )
        throws -> T?
    {
        guard let profile, !profile.declares(field) else {
            return required ? try decode(T.self, forKey: key) : try decodeIfPresent(T.self, forKey: key)
        }
        return (try? decodeIfPresent(T.self, forKey: key)) ?? nil
    }
}
