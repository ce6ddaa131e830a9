/// A string-valued wire enum that keeps values it does not know.
///
/// Apple adds notification types, subtypes and enum values every year; a validator (and iapcheck) must carry an
/// unknown raw value through decoding instead of failing, so these are structs with static constants rather than
/// closed Swift enums.
public protocol OpenStringEnum: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
    /// The values Apple documented when this version of iapcheck was written.
    static var known: [Self] { get }
}

extension OpenStringEnum {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    public var description: String { rawValue }
    public var isKnown: Bool { Self.known.contains(self) }
}

/// An integer-valued wire enum that keeps values it does not know (see ``OpenStringEnum``).
public protocol OpenIntEnum: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == Int {
    init(rawValue: Int)
    static var known: [Self] { get }
}

extension OpenIntEnum {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(Int.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
    public var description: String { String(rawValue) }
    public var isKnown: Bool { Self.known.contains(self) }
}
