import Foundation
import Reconciliation

// How a report column is shown (`ColumnKind`) is part of its description (Reconciliation's
// `ReportFile.layout`).

/// The cell formats of styles.xml, by their index in `cellXfs` (see `Parts.styles`).
enum Style: Int, CaseIterable {
    case general = 0
    case header = 1
    /// Text with the "@" number format, so a person who edits the cell keeps text.
    case text = 2
    /// Text whose CSV cell carried the formula guard's `'`: stored without the `'` but with
    /// `quotePrefix`, which is how Excel itself keeps a leading apostrophe. The cell shows the
    /// value, stays text, and Excel shows the `'` again in the edit line, so it never runs.
    case guardedText = 3
    case dateTime = 4
    case date = 5
    case integer = 6
    case money1 = 7
    case money2 = 8
    case money3 = 9
    /// A fraction shown as a percentage with three decimals (`33.333%`).
    case percent = 10
}

/// One cell as written: a number (serial or count, with its style) or text.
enum Cell {
    case empty
    case text(String, Style)
    case number(String, Style)

    /// The CSV field `raw` in a column of `kind`. A value the kind does not fit (a time that
    /// does not parse, a count with 16 digits) is kept as text rather than lost.
    static func from(_ raw: String, kind: ColumnKind, zone: ZoneOffsets) -> Cell {
        if raw.isEmpty { return .empty }
        switch kind {
        case .text: break
        case .integer:
            if plainDecimal(raw) == 0 { return .number(raw, .integer) }
        case .money:
            if let decimals = plainDecimal(raw) {
                switch decimals {
                case 0: return .number(raw, .integer)
                case 1: return .number(raw, .money1)
                case 2: return .number(raw, .money2)
                default: return .number(raw, .money3)
                }
            }
        case .dateTime:
            if raw.utf8.count >= 19, let ms = UTC.parse(raw), let serial = Serial.dateTime(ms, zone: zone) {
                return .number(serial, .dateTime)
            }
        case .date:
            if raw.utf8.count == 10, let ms = UTC.parse(raw), let serial = Serial.date(ms) {
                return .number(serial, .date)
            }
        case .percentMilli:
            // Apple's range is 0…100000; anything else stays text, as Apple gave it.
            if plainDecimal(raw) == 0, raw.utf8.count <= 6, let n = Int(raw), (0...100_000).contains(n) {
                let f = String(n % 100_000)
                return .number("\(n / 100_000)." + String(repeating: "0", count: 5 - f.count) + f, .percent)
            }
        }
        if let first = raw.unicodeScalars.first, first == "'", raw.unicodeScalars.count > 1,
           "=+-@\t\r".unicodeScalars.contains(raw.unicodeScalars[raw.unicodeScalars.index(after: raw.unicodeScalars.startIndex)]) {
            return .text(String(raw.unicodeScalars.dropFirst()), .guardedText)
        }
        return .text(raw, .text)
    }

    /// `-?digits(.digits)?` with at most 15 significant digits (what a double keeps exactly)
    /// and 3 decimals; nil otherwise. Returns the number of decimals.
    private static func plainDecimal(_ s: String) -> Int? {
        var bytes = Substring(s).utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        var whole = 0, fraction = 0, seenPoint = false
        for b in bytes {
            if b == UInt8(ascii: ".") {
                if seenPoint { return nil }
                seenPoint = true
            } else if b >= 48, b <= 57 {
                if seenPoint { fraction += 1 } else { whole += 1 }
            } else {
                return nil
            }
        }
        guard whole > 0, !(seenPoint && fraction == 0), fraction <= 3, whole + fraction <= 15 else { return nil }
        return fraction
    }

    /// Characters a person sees, wide (CJK) characters counted twice, capped: the basis of the
    /// fitted column width.
    var displayWidth: Int {
        switch self {
        case .empty: return 0
        case .number(let s, let style):
            switch style {
            case .dateTime: return 19
            case .date: return 10
            default: return s.utf8.count
            }
        case .text(let s, _): return Self.width(of: s, cap: Self.textWidthCap)
        }
    }

    /// A text cell counts at most this many characters toward its column's width.
    static let textWidthCap = 80

    static func width(of s: String, cap: Int) -> Int {
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return min(s.utf8.count, cap) }
        var w = 0
        for u in s.unicodeScalars {
            let v = u.value
            let wide = (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
                || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
                || (0xFFE0...0xFFE6).contains(v) || (0x1F300...0x1FAFF).contains(v) || (0x20000...0x3FFFD).contains(v)
            w += wide ? 2 : 1
            if w >= cap { return cap }
        }
        return w
    }
}

/// UTC offsets of one time zone, remembered per hour of UTC, so a report of a million rows
/// asks Foundation's zone rules once per distinct hour rather than once per cell.
final class ZoneOffsets {
    let zone: TimeZone
    private var byHour: [Int64: Int] = [:]

    init(_ zone: TimeZone) { self.zone = zone }

    /// Seconds east of UTC at the UTC instant `ms`.
    func offset(atMillis ms: EpochMillis) -> Int {
        let hour = UTC.floorDiv(ms, 3_600_000)
        if let known = byHour[hour] { return known }
        // Every zone in use changes its offset on a whole quarter hour, so the hour's start is
        // not enough; ask for the instant itself and remember it only when the hour is uniform.
        let start = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(hour * 3600)))
        let end = zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(hour * 3600 + 3599)))
        if start == end {
            if byHour.count > 100_000 { byHour.removeAll(keepingCapacity: true) }
            byHour[hour] = start
            return start
        }
        return zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}

/// Spreadsheet serial numbers: days since 1899-12-30 (the 1900 date system that Excel,
/// LibreOffice and WPS agree on for every date after 1900-03-01), time as the day's fraction.
enum Serial {
    /// Days from 1899-12-30 to 1970-01-01.
    static let unixEpoch: Int64 = 25_569

    /// The wall-clock time in `zone` at the UTC instant `ms`; nil before 1900-03-01, where the
    /// 1900 system's phantom leap day makes serials ambiguous (such a value stays text).
    static func dateTime(_ ms: EpochMillis, zone: ZoneOffsets) -> String? {
        let local = ms + Int64(zone.offset(atMillis: ms)) * 1000
        let days = UTC.floorDiv(local, 86_400_000)
        let msOfDay = local - days * 86_400_000
        let serialDays = days + unixEpoch
        guard serialDays >= 61 else { return nil }
        if msOfDay == 0 { return String(serialDays) }
        return String(Double(serialDays) + Double(msOfDay) / 86_400_000)
    }

    /// A UTC date (the instant is its midnight) as a whole serial day.
    static func date(_ ms: EpochMillis) -> String? {
        let serialDays = UTC.floorDiv(ms, 86_400_000) + unixEpoch
        return serialDays >= 61 ? String(serialDays) : nil
    }
}
