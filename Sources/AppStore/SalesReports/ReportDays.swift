// The days of Apple's daily sales reports (docs/contract.md, "Apple's daily sales reports"): a
// report day is a calendar day in the report time zone (`--sales-report-timezone`,
// default America/Los_Angeles: Apple's older FAQ; its current help leaves the boundary open, see
// docs/contract.md). Which days a night asks for, and when a 404 ("no sales") may be believed.

import Foundation
import Reconciliation

/// A calendar day, without a zone: what `filter[reportDate]` names.
public struct ReportDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int, month: Int, day: Int

    /// nil for a day the Gregorian calendar does not have (2026-02-30).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1, day <= Self.length(year, month) else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// `YYYY-MM-DD`.
    public init?(_ text: String) {
        let p = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, p.count == 3, p[0].count == 4, p[1].count == 2, p[2].count == 2,
              let y = Int(p[0]), let m = Int(p[1]), let d = Int(p[2]) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// `YYYY-MM-DD`, as the request and the tables name it.
    public var text: String {
        func pad(_ n: Int, _ w: Int) -> String { String(repeating: "0", count: max(0, w - String(n).count)) + String(n) }
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
    }
    public var description: String { text }

    public static func < (a: ReportDay, b: ReportDay) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    static func length(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 (UTC's civil arithmetic: a day has no zone).
    public var ordinal: Int {
        Int(UTC.millis(year: Int64(year), month: Int64(month), day: Int64(day)) / 86_400_000)
    }

    /// The day `ordinal` days after 1970-01-01.
    public init(ordinal z: Int) {
        let (y, m, d) = UTC.civil(fromDays: Int64(z))
        (year, month, day) = (Int(y), Int(m), Int(d))
    }

    public func adding(days n: Int) -> ReportDay { ReportDay(ordinal: ordinal + n) }
}

/// The night's report days in one time zone.
public struct ReportDays: Sendable {
    public let zone: TimeZone
    /// Apple keeps daily reports a year: a night asks for at most this many days.
    public static let mostDays = 365
    /// A 404 is believed ("no sales", kept as an empty day) only once the day ended this long
    /// before `--as-of`: before that it may be a day Apple has not published yet (about 8 a.m.
    /// Pacific the next day).
    public static let emptyAfterMs: EpochMillis = 48 * 3_600_000

    public init(zone: TimeZone) { self.zone = zone }

    private var calendar: Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = zone
        return c
    }

    /// The day an instant (UNIX ms) falls on in the zone.
    public func day(of ms: EpochMillis) -> ReportDay {
        let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(ms) / 1000))
        return ReportDay(year: c.year!, month: c.month!, day: c.day!)!
    }

    /// When `day` begins in the zone (UNIX ms).
    public func start(of day: ReportDay) -> EpochMillis {
        let date = calendar.date(from: DateComponents(year: day.year, month: day.month, day: day.day))!
        return EpochMillis((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// When `day` ends in the zone: the start of the next (a day of a DST change is 23 or 25 hours).
    public func end(of day: ReportDay) -> EpochMillis { start(of: day.adding(days: 1)) }

    /// The days a night at `asOf` asks about: from the day `windowDays` (at most 365) before
    /// `asOf` up to the day before `asOf`'s own day, oldest first. Apple has no report of a day
    /// that has not ended.
    public func window(asOf: EpochMillis, windowDays: Int) -> [ReportDay] {
        let days = max(1, min(windowDays, Self.mostDays))
        let last = day(of: asOf).adding(days: -1)
        let first = max(day(of: asOf - EpochMillis(days) * 86_400_000), last.adding(days: -(Self.mostDays - 1)))
        guard first <= last else { return [] }
        return (first.ordinal...last.ordinal).map(ReportDay.init(ordinal:))
    }

    /// Whether Apple's 404 for `day` is kept as an empty day at `asOf`: the day ended more than
    /// two days before. A younger day's 404 is asked again the next night.
    public func mayKeepEmpty(_ day: ReportDay, asOf: EpochMillis) -> Bool {
        asOf - end(of: day) > Self.emptyAfterMs
    }
}
