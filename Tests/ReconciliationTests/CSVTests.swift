// Contract §6: RFC 4180 CSV with CRLF and the formula guard; ISO 8601 UTC times; Apple dates.

import Testing

@testable import Reconciliation

struct TextCase: NamedCase {
    var name: String
    var input: String
    var expected: String
}

struct ParseCase: NamedCase {
    var name: String
    var input: String
    var expected: EpochMillis?
}

@Suite("CSV")
struct CSVTests {
    static let fields: [TextCase] = [
        .init(name: "plain text as is", input: "gems_100", expected: "gems_100"),
        .init(name: "empty", input: "", expected: ""),
        .init(name: "comma → quoted", input: "a,b", expected: "\"a,b\""),
        .init(name: "quote → doubled and quoted", input: "say \"hi\"", expected: "\"say \"\"hi\"\"\""),
        .init(name: "LF → quoted", input: "a\nb", expected: "\"a\nb\""),
        .init(name: "CR → quoted", input: "a\rb", expected: "\"a\rb\""),
        .init(name: "CRLF → quoted", input: "a\r\nb", expected: "\"a\r\nb\""),
        .init(name: "= guarded", input: "=HYPERLINK(\"x\")", expected: "\"'=HYPERLINK(\"\"x\"\")\""),
        .init(name: "+ guarded", input: "+1", expected: "'+1"),
        .init(name: "- guarded", input: "-1", expected: "'-1"),
        .init(name: "@ guarded", input: "@SUM(A1)", expected: "'@SUM(A1)"),
        .init(name: "tab guarded", input: "\tx", expected: "'\tx"),
        .init(name: "CR guarded and quoted", input: "\rx", expected: "\"'\rx\""),
        .init(name: "CRLF at the start guarded and quoted", input: "\r\nx", expected: "\"'\r\nx\""),
        .init(name: "guard only at the start", input: "a=b-c+d@e", expected: "a=b-c+d@e"),
        .init(name: "guarded and quoted for a comma", input: "=1,2", expected: "\"'=1,2\""),
        .init(name: "a leading space is not a formula", input: " =1", expected: " =1"),
        .init(name: "UTF-8 passes through", input: "漏单 ✓", expected: "漏单 ✓"),
        .init(name: "timestamps are not touched", input: "2026-11-21T03:08:45Z", expected: "2026-11-21T03:08:45Z"),
        // A comma or quote followed by a combining mark is one Character but still the byte a CSV
        // reader splits on: quoted, the quote doubled.
        .init(name: "comma + combining mark → quoted", input: "a,\u{301}b", expected: "\"a,\u{301}b\""),
        .init(name: "quote + combining mark → doubled", input: "\"\u{301}", expected: "\"\"\"\u{301}\""),
        .init(name: "LF + combining mark → quoted", input: "a\n\u{301}", expected: "\"a\n\u{301}\""),
        .init(name: "= + combining mark guarded", input: "=\u{301}1", expected: "'=\u{301}1"),
        .init(name: "only quotes", input: "\"\"", expected: "\"\"\"\"\"\""),
    ]

    @Test(arguments: fields)
    func field(_ c: TextCase) { #expect(CSV.field(c.input) == c.expected) }

    @Test func recordJoinsWithCommasAndEndsWithCRLF() {
        #expect(CSV.record(["a", "b,c", "", "-x"]) == "a,\"b,c\",,'-x\r\n")
        #expect(CSV.record(["only"]) == "only\r\n")
        #expect(CSV.record([]) == "\r\n")
        #expect(CSV.record(ReportFile.inputErrors.columns) == "relation,key,column,problem\r\n")
    }
}

@Suite("UTC")
struct UTCTests {
    static let timestamps: [(EpochMillis, String, String)] = [
        (0, "1970-01-01T00:00:00Z", "1970-01-01"),
        (1_500_001_725_000, "2017-07-14T03:08:45Z", "2017-07-14"),
        (1_795_230_525_999, "2026-11-21T03:08:45Z", "2026-11-21"),  // milliseconds are dropped
        (1_709_251_199_000, "2024-02-29T23:59:59Z", "2024-02-29"),  // leap day
        (951_868_800_000, "2000-03-01T00:00:00Z", "2000-03-01"),
        (-1, "1969-12-31T23:59:59Z", "1969-12-31"),
    ]

    @Test(arguments: timestamps)
    func timestampAndDate(_ ms: EpochMillis, _ timestamp: String, _ date: String) {
        #expect(UTC.timestamp(ms) == timestamp)
        #expect(UTC.date(ms) == date)
    }

    @Test("to the millisecond: the seconds' text, then three digits of milliseconds; parsed back exactly")
    func timestampMillis() {
        for (ms, timestamp, _) in Self.timestamps {
            let text = UTC.timestampMillis(ms)
            let milli: Int64 = ((ms % 1000) + 1000) % 1000
            let digits = String(String(milli + 1000).dropFirst())
            let want: String = String(timestamp.dropLast()) + "." + digits + "Z"
            #expect(text == want)
            #expect(UTC.parse(text) == ms, "\(text)")
        }
        #expect(UTC.timestampMillis(253_402_300_799_999) == "9999-12-31T23:59:59.999Z")
        #expect(UTC.timestampMillis(253_402_300_800_000) == "10000-01-01T00:00:00.000Z")
        #expect(UTC.timestamp(253_402_300_800_000) == "10000-01-01T00:00:00Z")
    }

    @Test func millisOfACivilTime() {
        #expect(UTC.millis(year: 2017, month: 7, day: 14, hour: 3, minute: 8, second: 45) == 1_500_001_725_000)
        #expect(UTC.millis(year: 1970, month: 1, day: 1) == 0)
        #expect(UTC.millis(year: 2024, month: 2, day: 29, hour: 23, minute: 59, second: 59) == 1_709_251_199_000)
    }

    static let parses: [ParseCase] = [
        .init(name: "Apple *_date", input: "2017-07-14 03:08:45 Etc/GMT", expected: 1_500_001_725_000),
        .init(name: "Apple style with GMT", input: "2017-07-14 03:08:45 GMT", expected: 1_500_001_725_000),
        .init(name: "ISO Z", input: "2017-07-14T03:08:45Z", expected: 1_500_001_725_000),
        .init(name: "ISO with milliseconds", input: "2017-07-14T03:08:45.123Z", expected: 1_500_001_725_123),
        .init(name: "ISO with one fraction digit", input: "2017-07-14T03:08:45.5Z", expected: 1_500_001_725_500),
        .init(name: "ISO with microseconds (truncated)", input: "2017-07-14T03:08:45.123456Z", expected: 1_500_001_725_123),
        .init(name: "ISO without zone is UTC", input: "2017-07-14T03:08:45", expected: 1_500_001_725_000),
        .init(name: "ISO +00:00", input: "2017-07-14T03:08:45+00:00", expected: 1_500_001_725_000),
        .init(name: "ISO +08:00", input: "2017-07-14T11:08:45+08:00", expected: 1_500_001_725_000),
        .init(name: "ISO -05:30", input: "2017-07-13T21:38:45-05:30", expected: 1_500_001_725_000),
        .init(name: "ISO +0800", input: "2017-07-14T11:08:45+0800", expected: 1_500_001_725_000),
        .init(name: "ISO +08", input: "2017-07-14T11:08:45+08", expected: 1_500_001_725_000),
        .init(name: "date only", input: "2017-07-14", expected: 1_499_990_400_000),
        .init(name: "leap day", input: "2024-02-29T00:00:00Z", expected: 1_709_164_800_000),
        .init(name: "no Feb 29 in 2026", input: "2026-02-29T00:00:00Z", expected: nil),
        .init(name: "no Feb 30", input: "2024-02-30", expected: nil),
        .init(name: "no Apr 31", input: "2026-04-31 00:00:00 Etc/GMT", expected: nil),
        .init(name: "no month 13", input: "2026-13-01", expected: nil),
        .init(name: "hour 24", input: "2026-01-01T24:00:00Z", expected: nil),
        .init(name: "PST is not UTC", input: "2017-07-13 20:08:45 America/Los_Angeles", expected: nil),
        .init(name: "garbage", input: "yesterday", expected: nil),
        .init(name: "empty", input: "", expected: nil),
        .init(name: "truncated time", input: "2017-07-14T03:08", expected: nil),
        .init(name: "bad offset", input: "2017-07-14T03:08:45+8", expected: nil),
        .init(name: "offset minutes past 59", input: "2017-07-14T03:08:45+09:99", expected: nil),
        .init(name: "offset minutes past 59, no colon", input: "2017-07-14T03:08:45+0960", expected: nil),
        .init(name: "empty fraction", input: "2017-07-14T03:08:45.Z", expected: nil),
    ]

    @Test(arguments: parses)
    func parse(_ c: ParseCase) { #expect(UTC.parse(c.input) == c.expected) }

    @Test(arguments: [0, 1_500_001_725_000, 1_795_230_525_000, 951_868_800_000] as [EpochMillis])
    func parseReadsWhatTimestampWrites(_ ms: EpochMillis) {
        #expect(UTC.parse(UTC.timestamp(ms)) == ms)
    }
}

@Suite("JSON string literals")
struct JSONTextTests {
    @Test(arguments: [
        ("plain", "\"plain\""),
        ("say \"hi\"", "\"say \\\"hi\\\"\""),
        ("a\\b", "\"a\\\\b\""),
        ("line\nnext\r\t", "\"line\\nnext\\r\\t\""),
        ("\u{01}bell\u{1f}", "\"\\u0001bell\\u001f\""),
        ("漏单 ✓", "\"漏单 ✓\""),
    ])
    func quote(raw: String, literal: String) {
        #expect(JSONText.quote(raw) == literal)
    }
}
