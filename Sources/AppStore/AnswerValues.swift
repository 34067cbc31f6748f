// The value forms Apple uses for the fields the job reads, and nothing else (contract §3: every
// field may arrive as a string or a number). Each reader throws `Garbage` naming the field, with
// at most 20 sanitized characters of the value.

import StrictJSON
import Reconciliation

extension JSONDocument {
    /// The value's bytes as they are judged: a number's lexeme, a string's decoded text.
    @inline(__always)
    private func withScalarBytes<R>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if kind(index) == .escapedString {
            let utf8 = Array((text(index) ?? "").utf8)
            return try utf8.withUnsafeBufferPointer { try body($0) }
        }
        return try body(raw(index))
    }

    /// Throws "<field> is null" (a boolean, an array, an object) unless the value is a number or
    /// a string.
    @inline(__always)
    private func requireScalar(_ index: Int, _ field: () -> String) throws {
        switch kind(index) {
        case .number, .string, .escapedString: return
        default: throw Garbage("\(field()) is \(kindName(index))")
        }
    }

    @inline(__always)
    private static func allDigits(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in s where c < 0x30 || c > 0x39 { return false }
        return true
    }

    /// Digits as a number; nil past 18 digits (callers bound the count first).
    private static func value(_ s: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard s.count <= 18 else { return nil }
        var v: Int64 = 0
        for c in s { v = v * 10 + Int64(c - 0x30) }
        return v
    }

    /// ASCII digits only, from a JSON integer (no sign, fraction or exponent) or a string of
    /// digits; throws "<field> 2.5e3 is not an integer", "<field> is empty".
    private func digits<R>(_ index: Int, _ field: () -> String,
                           _ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R {
        try requireScalar(index, field)
        return try withScalarBytes(index) { s in
            guard !s.isEmpty else { throw Garbage("\(field()) is empty") }
            guard Self.allDigits(s) else { throw Garbage("\(field()) \(shown(index)) is not an integer") }
            return try body(s)
        }
    }

    /// transaction_id, original_transaction_id, web_order_line_item_id, cancellation_reason:
    /// 1–20 digits, kept exactly as text (a 20-digit id keeps every digit).
    func identifier(_ index: Int, field: @autoclosure () -> String) throws -> String {
        try digits(index, field) { s in
            guard s.count <= 20 else { throw Garbage("\(field()) has \(s.count) digits") }
            return String(decoding: s, as: UTF8.self)
        }
    }

    /// The answer's `status`: an integer of at most 9 digits.
    func status(_ index: Int) throws -> Int {
        try digits(index, { "status" }) { s in
            guard s.count <= 9, let v = Self.value(s) else { throw Garbage("status has \(s.count) digits") }
            return Int(v)
        }
    }

    /// `quantity`: an integer 1…10000.
    func quantity(_ index: Int, field: @autoclosure () -> String) throws -> Int {
        try digits(index, field) { s in
            guard s.count <= 5, let v = Self.value(s), (1...10_000).contains(v) else {
                throw Garbage("\(field()) \(shown(index)) is out of range 1-10000")
            }
            return Int(v)
        }
    }

    /// A date: milliseconds since 1970 (a JSON integer or a string of digits) up to the end of
    /// year 9999, or Apple's text `yyyy-MM-dd HH:mm:ss Etc/GMT` (what `UTC.parse` reads).
    func date(_ index: Int, field: @autoclosure () -> String) throws -> EpochMillis {
        try requireScalar(index, field)
        let isNumber = kind(index) == .number
        return try withScalarBytes(index) { s -> EpochMillis in
            if !s.isEmpty && Self.allDigits(s) {
                guard s.count <= 15, let v = Self.value(s), v <= AppleDate.maxMillis else {
                    throw Garbage("\(field()) \(shown(index)) is out of range")
                }
                return v
            }
            guard !isNumber, let v = AppleDate.parseGMT(s) ?? AppleDate.parse(String(decoding: s, as: UTF8.self)) else {
                throw Garbage("\(field()) \(shown(index)) is not a date")
            }
            guard v >= 0 && v <= AppleDate.maxMillis else { throw Garbage("\(field()) \(shown(index)) is out of range") }
            return v
        }
    }

    /// is_trial_period, is_retryable: true/false, "true"/"false", 1/0, "1"/"0".
    func flag(_ index: Int, field: @autoclosure () -> String) throws -> Bool {
        switch kind(index) {
        case .true: return true
        case .false: return false
        case .number, .string, .escapedString:
            let isString = kind(index) != .number
            let value: Bool? = withScalarBytes(index) { s in
                if s.count == 1 && s[0] == UInt8(ascii: "1") { return true }
                if s.count == 1 && s[0] == UInt8(ascii: "0") { return false }
                guard isString else { return nil }
                if s.elementsEqual("true".utf8) { return true }
                if s.elementsEqual("false".utf8) { return false }
                return nil
            }
            guard let value else { throw Garbage("\(field()) \(shown(index)) is not a boolean") }
            return value
        default:
            throw Garbage("\(field()) is \(kindName(index))")
        }
    }

    /// product_id, bundle_id, bid: a string without control characters, or a JSON integer kept
    /// as its text.
    func textValue(_ index: Int, field: @autoclosure () -> String) throws -> String {
        switch kind(index) {
        case .number:
            guard Self.allDigits(raw(index)) else { throw Garbage("\(field()) \(shown(index)) is not an integer") }
            return String(decoding: raw(index), as: UTF8.self)
        case .string:
            // The scanner refused raw control characters in strings.
            return String(decoding: raw(index), as: UTF8.self)
        case .escapedString:
            let text = self.text(index) ?? ""
            if text.utf8.contains(where: { $0 < 0x20 }) { throw Garbage("\(field()) contains a control character") }
            return text
        default:
            throw Garbage("\(field()) is \(kindName(index))")
        }
    }
}
