// RFC 4180 CSV as contract §6 asks: UTF-8, CRLF, quoted when needed, formula guard.

public enum CSV {
    /// One record, CRLF-terminated.
    public static func record(_ cells: [String]) -> String {
        var bytes: [UInt8] = []
        appendRecord(cells, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One record's bytes, CRLF-terminated, appended to `out` (the report writer's path: no
    /// String per line).
    public static func appendRecord(_ cells: [String], to out: inout [UInt8]) {
        for (index, cell) in cells.enumerated() {
            if index > 0 { out.append(44) }
            appendField(cell, to: &out)
        }
        out.append(13)
        out.append(10)
    }

    /// One field: the formula guard first (a cell starting with `=`, `+`, `-`, `@`, tab or CR gets
    /// a leading `'`, so a spreadsheet never runs it), then RFC 4180 quoting.
    public static func field(_ raw: String) -> String {
        var bytes: [UInt8] = []
        appendField(raw, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `field`, as bytes. Quoting looks at bytes, as a CSV reader splits: a comma, quote, CR or
    /// LF byte quotes the field even where a combining mark follows it (`,\u{301}` is one
    /// Character, which a test by Characters would have let through unquoted, cutting the row).
    static func appendField(_ raw: String, to out: inout [UInt8]) {
        let guarded = raw.unicodeScalars.first.map { "=+-@\t\r".unicodeScalars.contains($0) } ?? false
        let quoted = raw.utf8.contains { $0 == 44 || $0 == 34 || $0 == 13 || $0 == 10 }
        if quoted { out.append(34) }
        if guarded { out.append(39) }
        if quoted {
            for byte in raw.utf8 {
                out.append(byte)
                if byte == 34 { out.append(34) }
            }
            out.append(34)
        } else {
            out.append(contentsOf: raw.utf8)
        }
    }
}

/// ISO 8601 UTC times and dates without Foundation (exact, allocation-light, thread-safe).
public enum UTC {
    /// `2026-11-21T03:08:45Z` (whole seconds; milliseconds are dropped, as the contract's example shows).
    public static func timestamp(_ ms: EpochMillis) -> String { iso(ms, millis: false) }

    /// `2026-11-21T03:08:45.123Z`: to the millisecond, as `timestamptz` input (COPY into the
    /// job's tables, StagedAnswers).
    public static func timestampMillis(_ ms: EpochMillis) -> String { iso(ms, millis: true) }

    /// Both forms, written byte by byte into one string for the years 0 to 9999 (the answer
    /// writer formats one per StoreKit 2 upload, the reports one per time cell); other years are
    /// padded to at least four digits.
    private static func iso(_ ms: EpochMillis, millis: Bool) -> String {
        let seconds = floorDiv(ms, 1000)
        let days = floorDiv(seconds, 86_400)
        let secOfDay = seconds - days * 86_400
        let (y, m, d) = civil(fromDays: days)
        let milli = ms - seconds * 1000
        guard y >= 0 && y <= 9999 else {
            let fraction = millis ? "." + pad(milli, 3) : ""
            return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(secOfDay / 3600, 2)):\(pad(secOfDay % 3600 / 60, 2)):"
                + "\(pad(secOfDay % 60, 2))\(fraction)Z"
        }
        return String(unsafeUninitializedCapacity: millis ? 24 : 20) { b in
            func put(_ value: Int64, _ width: Int, at start: Int) {
                var v = value
                for k in stride(from: start + width - 1, through: start, by: -1) {
                    b[k] = 48 + UInt8(v % 10)
                    v /= 10
                }
            }
            put(y, 4, at: 0); b[4] = 45; put(m, 2, at: 5); b[7] = 45; put(d, 2, at: 8); b[10] = 84
            put(secOfDay / 3600, 2, at: 11); b[13] = 58; put(secOfDay % 3600 / 60, 2, at: 14); b[16] = 58
            put(secOfDay % 60, 2, at: 17)
            guard millis else { b[19] = 90; return 20 }
            b[19] = 46; put(milli, 3, at: 20); b[23] = 90
            return 24
        }
    }

    /// `2026-11-21`.
    public static func date(_ ms: EpochMillis) -> String {
        let (y, m, d) = civil(fromDays: floorDiv(floorDiv(ms, 1000), 86_400))
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))"
    }

    /// Milliseconds at a UTC civil date and time (00:00:00Z unless given).
    public static func millis(year: Int64, month: Int64, day: Int64, hour: Int64 = 0, minute: Int64 = 0,
                              second: Int64 = 0) -> EpochMillis {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 86_400) + hour * 3600 + minute * 60 + second) * 1000
    }

    /// The number written by `count` ASCII digits at `from`; nil when one is not a digit or the
    /// text is too short. (Date fields: no sign, no overflow possible at these widths.)
    @inlinable
    public static func digits<C: RandomAccessCollection>(_ s: C, from: Int, count: Int) -> Int64?
    where C.Element == UInt8, C.Index == Int {
        guard from >= s.startIndex, from + count <= s.endIndex else { return nil }
        var v: Int64 = 0
        for i in from..<(from + count) {
            let c = s[i]
            guard c >= 48, c <= 57 else { return nil }
            v = v * 10 + Int64(c - 48)
        }
        return v
    }

    /// Parses `yyyy-MM-dd HH:mm:ss Etc/GMT` (Apple's `*_date`; also ` GMT`, ` UTC`), ISO 8601
    /// `yyyy-MM-ddTHH:mm:ss[.fff](Z|±HH:MM|±HHMM|±HH)` (no zone = UTC) and `yyyy-MM-dd` (00:00Z).
    /// Returns nil for anything else, including dates that do not exist (`2026-02-30`).
    public static func parse(_ text: String) -> EpochMillis? {
        let s = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? { digits(s, from: from, count: count) }
        guard s.count >= 10, s[4] == UInt8(ascii: "-"), s[7] == UInt8(ascii: "-"),
              let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), (1...12).contains(mo),
              (1...daysIn(month: mo, year: y)).contains(d)
        else { return nil }
        if s.count == 10 { return millis(year: y, month: mo, day: d) }
        guard s.count >= 19, s[10] == UInt8(ascii: " ") || s[10] == UInt8(ascii: "T"),
              s[13] == UInt8(ascii: ":"), s[16] == UInt8(ascii: ":"),
              let h = num(11, 2), let mi = num(14, 2), let se = num(17, 2), h < 24, mi < 60, se < 61
        else { return nil }
        var ms = millis(year: y, month: mo, day: d, hour: h, minute: mi, second: se)
        var rest = s[19...]
        if rest.first == UInt8(ascii: ".") {
            var digits = 0
            var frac: Int64 = 0
            rest = rest.dropFirst()
            while let c = rest.first, c >= 48, c <= 57 {
                if digits < 3 { frac = frac * 10 + Int64(c - 48) }
                digits += 1
                rest = rest.dropFirst()
            }
            guard digits > 0 else { return nil }
            for _ in 0..<max(0, 3 - digits) { frac *= 10 }
            ms += frac
        }
        let tail = String(decoding: rest, as: UTF8.self)
        switch tail {
        case "Z", "z", " Etc/GMT", " GMT", " UTC", "": return ms
        default: break
        }
        // A numeric offset: local time = UTC + offset, so UTC = local − offset.
        let t = Array(rest)
        guard let sign = t.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else { return nil }
        func two(_ at: Int) -> Int64? {
            guard at + 2 <= t.count, (48...57).contains(t[at]), (48...57).contains(t[at + 1]) else { return nil }
            return Int64(t[at] - 48) * 10 + Int64(t[at + 1] - 48)
        }
        let offsetMinutes: Int64
        switch t.count {
        case 3: guard let oh = two(1) else { return nil }; offsetMinutes = oh * 60
        case 5: guard let oh = two(1), let om = two(3), om < 60 else { return nil }; offsetMinutes = oh * 60 + om
        case 6:
            guard t[3] == UInt8(ascii: ":"), let oh = two(1), let om = two(4), om < 60 else { return nil }
            offsetMinutes = oh * 60 + om
        default: return nil
        }
        guard offsetMinutes < 24 * 60 else { return nil }
        return sign == UInt8(ascii: "+") ? ms - offsetMinutes * 60_000 : ms + offsetMinutes * 60_000
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Division rounding towards minus infinity (times before 1970 stay right).
    public static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// Howard Hinnant's civil_from_days: (year, month, day) of a day number since 1970-01-01.
    public static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = floorDiv(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, m, d)
    }

    private static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}

/// JSON string literals for the job's own small JSON (summary.json, answer records) and the
/// simulator's answers: RFC 8259 escaping, no Foundation.
public enum JSONText {
    public static func quote(_ s: String) -> String {
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
