import Foundation
import IAPModel

/// A text with placeholders, as a target file writes paths, query values, headers and bodies:
/// `/v1/subscribers/{userId}`, `Bearer {job}`, `{at:iso}` (docs/http-target.md#requests).
///
/// A placeholder is `{name}` or `{name:format}`; `{{` and `}}` stand for literal braces. Times take a format: none
/// (epoch milliseconds), `s` (epoch seconds, with a fraction when the instant has one) or `iso` (ISO 8601 UTC with
/// milliseconds).
public struct Template: Sendable, Hashable {
    public enum Part: Sendable, Hashable {
        case text(String)
        case placeholder(Placeholder)
    }
    public var parts: [Part]
    /// The text as the target file wrote it.
    public var source: String

    /// The one placeholder this template consists of, when it is nothing else (a JSON body value `"{userId}"` then
    /// takes the value's own JSON type).
    public var lone: Placeholder? {
        if parts.count == 1, case .placeholder(let p) = parts[0] { return p }
        return nil
    }

    public var placeholders: [Placeholder] {
        parts.compactMap { if case .placeholder(let p) = $0 { p } else { nil } }
    }

    /// Parses `text`; the message of the first problem (an unclosed brace, an unknown name or format) otherwise.
    public static func parse(_ text: String) -> Result<Template, TemplateError> {
        var parts: [Part] = []
        var literal = ""
        var i = text.startIndex
        while i < text.endIndex {
            let c = text[i]
            let next = text.index(after: i)
            if c == "{" && next < text.endIndex && text[next] == "{" {
                literal.append("{")
                i = text.index(after: next)
            } else if c == "}" && next < text.endIndex && text[next] == "}" {
                literal.append("}")
                i = text.index(after: next)
            } else if c == "{" {
                guard let close = text[next...].firstIndex(of: "}") else {
                    return .failure(TemplateError("\"\(text)\": `{` without `}` (write {{ for a literal brace)"))
                }
                switch Placeholder.parse(String(text[next..<close])) {
                case .success(let p):
                    if !literal.isEmpty { parts.append(.text(literal)) }
                    literal = ""
                    parts.append(.placeholder(p))
                case .failure(let e): return .failure(e)
                }
                i = text.index(after: close)
            } else if c == "}" {
                return .failure(TemplateError("\"\(text)\": `}` without `{` (write }} for a literal brace)"))
            } else {
                literal.append(c)
                i = next
            }
        }
        if !literal.isEmpty { parts.append(.text(literal)) }
        return .success(Template(parts: parts, source: text))
    }

    /// The text with every placeholder filled in; `encode` turns each value's text into what the place takes
    /// (percent-encoding in a path or query, nothing in a header).
    public func render(_ values: RequestValues, encode: (String) -> String = { $0 }) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .text(let t): out += t
            case .placeholder(let p): out += encode(values.text(p))
            }
        }
        return out
    }
}

public struct TemplateError: Error, Sendable, CustomStringConvertible {
    public var message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What iapcheck fills in: one of ``Name``, in a format for times.
public struct Placeholder: Sendable, Hashable, CustomStringConvertible {
    public enum Name: String, Sendable, CaseIterable {
        case userId, signedTransaction, transactionId, deviceTime, signedPayload, originalTransactionId, apiSnapshot,
            responseBody, receiptData, at, now, config, job
        var isTime: Bool { self == .at || self == .now || self == .deviceTime }
    }
    public enum Format: String, Sendable, CaseIterable {
        case s, iso
    }
    public var name: Name
    public var format: Format?

    public var description: String { "{\(name.rawValue)\(format.map { ":" + $0.rawValue } ?? "")}" }

    static func parse(_ inside: String) -> Result<Placeholder, TemplateError> {
        let pieces = inside.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard let name = Name(rawValue: pieces[0]) else {
            return .failure(
                TemplateError(
                    "{\(inside)} is not a placeholder; known: \(Name.allCases.map { "{\($0.rawValue)}" }.joined(separator: ", "))"
                ))
        }
        var format: Format?
        if pieces.count == 2 {
            guard name.isTime, let f = Format(rawValue: pieces[1]) else {
                return .failure(
                    TemplateError(
                        name.isTime
                            ? "{\(inside)}: a time takes :s (epoch seconds) or :iso (ISO 8601), or no format (epoch ms)"
                            : "{\(inside)}: only times ({at}, {now}, {deviceTime}) take a format"))
            }
            format = f
        }
        return .success(Placeholder(name: name, format: format))
    }
}

/// The values of one request's placeholders. Strings are JWS, ids and bodies; times are epoch milliseconds; `json`
/// values (the reset's configuration, an API snapshot) are JSON text that a JSON body embeds as it is.
public struct RequestValues: Sendable {
    public enum Value: Sendable {
        case string(String)
        case time(Millis)
        case json(Data)
        case null
    }
    public var values: [Placeholder.Name: Value] = [:]

    public init(_ values: [Placeholder.Name: Value] = [:]) { self.values = values }

    public subscript(name: Placeholder.Name) -> Value? {
        get { values[name] }
        set { values[name] = newValue }
    }

    /// A value as text (paths, queries, headers, form fields, text around a placeholder in a JSON string).
    public func text(_ p: Placeholder) -> String {
        switch values[p.name] ?? .null {
        case .string(let s): return s
        case .time(let t):
            switch p.format {
            case nil: return String(t)
            case .s: return Self.seconds(t)
            case .iso: return CivilTime.iso8601(t)
            }
        case .json(let d): return String(decoding: d, as: UTF8.self)
        case .null: return ""
        }
    }

    /// A value as a JSON value of its own type (a JSON body's `"{name}"`): a string, a number, embedded JSON, null.
    public func json(_ p: Placeholder) -> String {
        switch values[p.name] ?? .null {
        case .string(let s): return JSONText.string(s)
        case .time(let t):
            switch p.format {
            case nil: return String(t)
            case .s: return Self.seconds(t)
            case .iso: return JSONText.string(CivilTime.iso8601(t))
            }
        case .json(let d): return String(decoding: d, as: UTF8.self)
        case .null: return "null"
        }
    }

    /// `1772323262` or `1772323262.5`: epoch seconds, as exact as the instant.
    package static func seconds(_ t: Millis) -> String {
        if t < 0 { return "-" + seconds(-t) }
        let (s, ms) = t.quotientAndRemainder(dividingBy: 1000)
        guard ms != 0 else { return String(s) }
        var frac = String(ms)
        frac = String(repeating: "0", count: 3 - frac.count) + frac
        while frac.hasSuffix("0") { frac.removeLast() }
        return "\(s).\(frac)"
    }
}

/// Writing JSON text by hand: body templates are rendered on every request.
enum JSONText {
    static func string(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
