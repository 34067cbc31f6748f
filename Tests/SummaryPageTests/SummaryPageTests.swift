import Foundation
import Reconciliation
import Testing
@testable import SummaryPage

@Suite struct SummaryPageTests {
    static func input() -> SummaryPage.Input {
        var history = SummaryPage.HistoryTally(nights: ["2026-11-19", "2026-11-20", "2026-11-21", "2026-11-20"])
        history.add(report: "compensate.csv", firstSeen: "2026-11-18", closedOn: "2026-11-20") // open 19, closed 20
        history.add(report: "compensate.csv", firstSeen: "2026-11-20", closedOn: nil)          // opened 20
        history.add(report: "compensate.csv", firstSeen: "2026-11-21", closedOn: nil)          // opened 21
        history.add(report: "clawback.csv", firstSeen: "2026-11-19", closedOn: "2026-11-21")
        return SummaryPage.Input(
            asOf: "2026-11-21T03:00:00Z", runID: 4711,
            counts: ["compensate": 1234, "duplicate_grants": 56, "clawback": 7, "refunds": 89, "unattributed": 3,
                     "unresolved": 21, "input_errors": 0],
            reasons: ["compensate": ["paid_not_granted": 1200, "restore_as_purchase": 34], "duplicate_grants": ["same_transaction": 56]],
            money: ["CNY": ["owed": "8123.40", "claw_back": "63.00"], "USD": ["refunded": "99.995", "refunded_still_granted": "4.99"]],
            oldestOpen: .init(report: "compensate", key: "2000000847061981", firstSeen: "2026-10-01"),
            history: history.nights)
    }

    @Test func historyCountsOpenedClosedAndStillOpenPerNight() {
        let nights = Self.input().history
        #expect(nights.map(\.date) == ["2026-11-19", "2026-11-20", "2026-11-21"])
        #expect(nights[0].reports["compensate"] == .init(opened: 0, closed: 0, stillOpen: 1))
        #expect(nights[1].reports["compensate"] == .init(opened: 1, closed: 1, stillOpen: 1))
        #expect(nights[2].reports["compensate"] == .init(opened: 1, closed: 0, stillOpen: 2))
        #expect(nights[0].reports["clawback"] == .init(opened: 1, closed: 0, stillOpen: 1))
        #expect(nights[2].reports["clawback"] == .init(opened: 0, closed: 1, stillOpen: 0))
        // Only the last 30 nights are kept.
        let many = SummaryPage.HistoryTally(nights: (1...40).map { "2026-10-\($0 < 10 ? "0" : "")\($0)" })
        #expect(many.dates.count == 30 && many.dates.last == "2026-10-40")
    }

    @Test(arguments: Language.allCases)
    func thePageIsSelfContained(language: Language) {
        let page = SummaryPage.render(Self.input(), language: language).lowercased()
        for forbidden in ["http", "//", "src=", "url(", "@import", "<script", "<link", "@font-face", "<img", "<iframe",
                          "href=", "xlink"] {
            #expect(!page.contains(forbidden), "the page contains \(forbidden)")
        }
        #expect(page.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"))
        #expect(page.contains("<svg"))
    }

    @Test func theNumbersShownAreTheInput() {
        let input = Self.input()
        let page = SummaryPage.render(input, language: .en)
        for (report, n) in input.counts {
            #expect(page.contains("<div class=\"card\(n == 0 ? " zero" : "")\" data-report=\"\(report)\"><span class=\"n\">\(n)</span>"))
        }
        #expect(page.contains("<code>paid_not_granted</code></th><td class=\"num\">1200</td>"))
        #expect(page.contains("<code>same_transaction</code></th><td class=\"num\">56</td>"))
        // A column per currency, a row per measure, each amount in its row under its currency.
        for (currency, kinds) in input.money {
            #expect(page.contains("<th scope=\"col\" class=\"num\">\(currency)</th>"))
            for (kind, amount) in kinds {
                let row = Self.row(page, "<tr data-kind=\"\(kind)\">")
                #expect(row.contains("<td class=\"num\" data-currency=\"\(currency)\">\(amount)</td>"), "\(kind) \(currency)")
            }
        }
        // A measure a currency lacks: a dash, hidden where the table is stacked.
        #expect(Self.row(page, "<tr data-kind=\"owed\">").contains("<td class=\"num none\" data-currency=\"USD\">–</td>"))
        #expect(page.contains("2000000847061981") && page.contains("2026-10-01") && page.contains("(51 days open)"))
        #expect(page.contains("4711") && page.contains("2026-11-21T03:00:00Z"))
        // The history table under the compensate chart: night, opened, closed, still open.
        #expect(page.contains("<th scope=\"row\">2026-11-20</th><td class=\"num\">1</td><td class=\"num\">1</td><td class=\"num\">1</td>"))
        #expect(page.contains("<figure data-report=\"compensate\">") && page.contains("<figure data-report=\"clawback\">"))
        #expect(!page.contains("<figure data-report=\"refunds\">")) // nothing in its history
    }

    /// The text from `start` to the end of its table row.
    static func row(_ page: String, _ start: String) -> String {
        guard let from = page.range(of: start) else { return "" }
        let rest = page[from.lowerBound...]
        return String(rest[..<(rest.range(of: "</tr>")?.upperBound ?? rest.endIndex)])
    }

    @Test("the money table: measures in the order of the kinds, each labelled; on a phone, blocks of amounts by currency")
    func moneyTable() {
        let page = SummaryPage.render(Self.input(), language: .en)
        let rows = ["owed", "claw_back", "refunded", "refunded_still_granted"].map { page.range(of: "<tr data-kind=\"\($0)\">")?.lowerBound }
        #expect(rows.allSatisfy { $0 != nil } && rows.map { $0! } == rows.map { $0! }.sorted())
        #expect(page.contains("<th scope=\"row\">Owed (compensate)</th>") && page.contains("<th>Measure</th>"))
        #expect(SummaryPage.render(Self.input(), language: .zh).contains("<th scope=\"row\">应补发</th>"))
        // Two short currencies fit a table from about 400 px on (25rem); below it, the stacked form.
        let style = SummaryPage.moneyStyle(Self.input())
        #expect(style.hasPrefix("@media (max-width:") && style.contains("content:attr(data-currency)"))
        let breakpoint = Int(style.dropFirst("@media (max-width:".count).prefix { $0.isNumber })!
        #expect((25...40).contains(breakpoint), "breakpoint \(breakpoint)rem")
        #expect(page.contains(style))
        // Forty currencies never fit a table: stacked at every width.
        var many = Self.input()
        many.money = Dictionary(uniqueKeysWithValues: (0..<40).map { ("C\($0 < 10 ? "0" : "")\($0)", ["owed": "12345.67"]) })
        #expect(SummaryPage.moneyStyle(many).hasPrefix("table.money,"))
        // No money, no table and no rule for it.
        #expect(!SummaryPage.render(.init(asOf: "x", runID: 1, counts: [:]), language: .en).contains("table.money"))
    }

    @Test("every card says in words, in both languages, what it counts")
    func everyCardIsLabelledInBothLanguages() {
        var input = Self.input()
        input.counts = Dictionary(uniqueKeysWithValues: ReportFile.allCases.map { ($0.name, 1) })
        let en = Labels.of(.en), zh = Labels.of(.zh)
        func isChinese(_ s: String) -> Bool { s.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) } }
        for file in ReportFile.allCases {
            let name = file.name
            #expect(en.reports[name] != nil && zh.reports[name] != nil, "\(name) has no label")
            let english = en.report(name), chinese = zh.report(name)
            #expect(english != name && english.first!.isUppercase, "\(name): \(english) is not words")
            #expect(!isChinese(english) && isChinese(chinese), "\(name): \(english) / \(chinese)")
            for (language, label) in [(Language.en, english), (.zh, chinese)] {
                let page = SummaryPage.render(input, language: language)
                #expect(page.contains("data-report=\"\(name)\"><span class=\"n\">1</span><span class=\"label\">\(HTML.escape(label))</span>"),
                        "\(name) in \(language)")
            }
        }
        #expect(en.report("coverage").contains("Apple's sales reports") && zh.report("coverage").contains("苹果销售报告"))
    }

    @Test("nothing in the style is set wider than a phone's page (390 px less its 28 px of padding)")
    func noFixedWidthWiderThanAPhone() {
        let style = SummaryPage.style + SummaryPage.moneyStyle(Self.input())
        // A least width (min-width, width, flex-basis, a grid track's minimum) is at most a phone's
        // page; a maximum (max-width, a media query's) may be anything.
        var least: [String] = []
        for m in style.matches(of: /[^-a-z](min-width|width|flex-basis):([^;}]*)/) { least.append(String(m.output.2)) }
        for m in style.matches(of: /minmax\(([^,]*),/) { least.append(String(m.output.1)) }
        #expect(least.count >= 4)
        for value in least {
            for n in value.matches(of: /([0-9.]+)(rem|px|em)/) {
                let px = Double(n.output.1)! * (n.output.2 == "px" ? 1 : 16)
                #expect(px <= 362, "\(value): \(px) px")
            }
        }
    }

    @Test func bothLanguagesRender() {
        let en = SummaryPage.render(Self.input(), language: .en)
        let zh = SummaryPage.render(Self.input(), language: .zh)
        #expect(en.contains("<html lang=\"en\">") && en.contains("Duplicate grants") && en.contains("still open"))
        #expect(zh.contains("<html lang=\"zh-CN\">"))
        for word in ["补发", "重复发放", "追回", "退款", "对账摘要", "仍未关闭"] { #expect(zh.contains(word)) }
        #expect(!zh.contains("Duplicate grants"))
        // The same figures in both.
        #expect(zh.contains("<span class=\"n\">1234</span>") && zh.contains("8123.40"))
    }

    @Test("the refund request funnel: shown with each figure as given, in both languages; absent without requests")
    func refundRequestFunnel() {
        var input = Self.input()
        #expect(!SummaryPage.render(input, language: .en).contains("data-section=\"refund_requests\""))
        input.refundRequests = ["requests": "12", "answered_in_time": "7", "refunded": "3", "declined": "2", "pending": "6",
                                "no_outcome": "1", "refund_rate_answered": "0.25"]
        let en = SummaryPage.render(input, language: .en), zh = SummaryPage.render(input, language: .zh)
        #expect(en.contains("data-section=\"refund_requests\"") && en.contains("Answered within 12 hours <code>answered_in_time</code></th><td class=\"num\">7</td>"))
        #expect(en.contains("<code>refund_rate_answered</code></th><td class=\"num\">0.25</td>"))
        #expect(zh.contains("苹果的退款请求") && zh.contains("<code>declined</code></th><td class=\"num\">2</td>"))
        // Requests first, then in the funnel's order.
        let first = en.range(of: "<code>requests</code>")!.lowerBound, refunded = en.range(of: "<code>refunded</code>")!.lowerBound
        #expect(first < refunded)
    }

    @Test func hostileTextIsEscaped() {
        let hostile = "</script><script>alert(1)</script><b>bold</b>\"'&\u{0}\u{1B}"
        let input = SummaryPage.Input(
            asOf: hostile, runID: -1, counts: [hostile: -5],
            reasons: [hostile: [hostile: 1]], money: [hostile: [hostile: "<img src=x onerror=alert(1)>"]],
            oldestOpen: .init(report: hostile, key: "\"><svg onload=alert(1)>", firstSeen: "not a date"),
            history: [.init(date: hostile, reports: [hostile: .init(opened: 1, closed: -2, stillOpen: 3)])])
        for language in Language.allCases {
            let page = SummaryPage.render(input, language: language)
            #expect(!page.contains("<script") && !page.contains("</script>"))
            #expect(!page.contains("<b>") && !page.contains("<img") && !page.contains("<svg onload"))
            #expect(page.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;&quot;&#39;&amp;"))
            #expect(!page.contains("\u{0}") && !page.contains("\u{1B}"))
            #expect(!page.contains("days open")) // no age from a date that is not one
            #expect(page.hasSuffix("</html>\n"))
        }
    }

    @Test func anEmptyNightStillRenders() {
        let page = SummaryPage.render(.init(asOf: "2026-11-21T03:00:00Z", runID: 1, counts: [:]), language: .en)
        #expect(page.contains("No finding is open.") && page.contains("No history yet"))
    }

    @Test func daysBetweenDates() {
        #expect(SummaryPage.daysBetween("2026-02-28", "2026-03-01") == 1)
        #expect(SummaryPage.daysBetween("2024-02-28", "2024-03-01") == 2)
        #expect(SummaryPage.daysBetween("1999-12-31", "2000-01-01") == 1)
        #expect(SummaryPage.daysBetween("x", "2000-01-01") == nil)
    }
}

/// `SUMMARY_PAGE_SAMPLE=/some/folder`: leaves summary-en.html and summary-zh.html there, with a
/// 30-night history, for a person (or headless Chromium) to look at.
@Suite struct SummaryPageSample {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["SUMMARY_PAGE_SAMPLE"] != nil))
    func keepSamplePages() throws {
        let folder = ProcessInfo.processInfo.environment["SUMMARY_PAGE_SAMPLE"]!
        var input = SummaryPageTests.input()
        input.history = (1...30).map { day in
            let date = "2026-11-\(day < 10 ? "0" : "")\(day)"
            return .init(date: date, reports: [
                "compensate": .init(opened: (day * 7) % 11, closed: (day * 5) % 9, stillOpen: 40 + (day * 13) % 17),
                "clawback": .init(opened: day % 3, closed: day % 2, stillOpen: 5 + day % 4),
            ])
        }
        // The rest as a night of the demo has it: three currencies with every kind, two apps, the
        // refund request funnel and Apple's sales reports.
        let kinds = ["owed", "claw_back", "refunded", "refunded_still_granted", "refund_declined", "proceeds_owed",
                     "proceeds_claw_back", "proceeds_refunded", "proceeds_refunded_still_granted"]
        input.money = ["EUR": Dictionary(uniqueKeysWithValues: kinds.map { ($0, "215.40") }),
                       "JPY": Dictionary(uniqueKeysWithValues: kinds.map { ($0, "28240") }),
                       "USD": Dictionary(uniqueKeysWithValues: kinds.map { ($0, "1844.79") })]
        input.counts["consumption_requests"] = 468
        input.counts["coverage"] = 136
        input.refundRequests = ["requests": "468", "answered_in_time": "219", "refunded": "0", "declined": "105",
                                "pending": "363", "no_outcome": "0", "refund_rate_unanswered": "0.0"]
        input.apps = [
            .init(bundleID: "com.example.game", counts: ["compensate": 384, "duplicate_grants": 172, "clawback": 202],
                  money: ["EUR": ["owed": "116.49", "claw_back": "36.17"], "JPY": ["owed": "12240", "claw_back": "4480"],
                          "USD": ["owed": "1035.60", "claw_back": "598.21"]], requests: 266, refused: false),
            .init(bundleID: "(other)", counts: ["compensate": 96, "clawback": 75],
                  money: ["USD": ["owed": "809.19", "claw_back": "669.33"]], requests: 0, refused: true),
        ]
        input.coverage = SalesCoverage(timeZone: "America/Los_Angeles", from: "2026-11-05", to: "2026-12-04", daysHeld: 30,
                                       products: [.init(productID: "com.example.game.coins100", appleSold: 1271, jobSold: 1245,
                                                        appleRefunded: 17, jobRefunded: 17,
                                                        daysDiffering: ["2026-11-07", "2026-11-10", "2026-11-12", "2026-11-14"])])
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for language in Language.allCases {
            try SummaryPage.render(input, language: language)
                .write(toFile: folder + "/summary-\(language.rawValue).html", atomically: true, encoding: .utf8)
        }
    }
}

@Suite struct SummaryPagePerAppTests {
    static func apps(_ list: [SummaryPage.App]) -> SummaryPage.Input {
        var input = SummaryPageTests.input()
        input.apps = list
        return input
    }

    static let game = SummaryPage.App(bundleID: "com.example.game", counts: ["compensate": 3, "clawback": 1],
                                      money: ["JPY": ["owed": "1600", "claw_back": "120"], "USD": ["owed": "4.99"]],
                                      requests: 42, refused: false)

    @Test(arguments: Language.allCases)
    func onlyFromTwoAppsOn(language: Language) {
        #expect(!SummaryPage.render(Self.apps([Self.game]), language: language).contains("data-section=\"apps\""))
        let hostile = SummaryPage.App(bundleID: "com.evil.<script>alert(1)</script>", counts: [:], money: [:],
                                      requests: 2, refused: true)
        let page = SummaryPage.render(Self.apps([Self.game, hostile]), language: language)
        #expect(page.contains("data-section=\"apps\""))
        // Amounts per currency as summary.json has them; the refused key said in its row; the id escaped.
        #expect(page.contains("<span class=\"amount\">1600 JPY</span>; <span class=\"amount\">4.99 USD</span>"))
        #expect(page.contains("<span class=\"amount\">120 JPY</span>"))
        // Each figure under its words.
        let gameBlock = page.components(separatedBy: "data-app=").dropFirst().first ?? ""
        #expect(gameBlock.contains("<dd>3</dd>") && gameBlock.contains("<dd>42</dd>"))
        #expect(page.contains("com.evil.&lt;script&gt;alert(1)&lt;/script&gt;") && !page.contains("<script>"))
        let refusedRow = page.components(separatedBy: "data-app=").last ?? ""
        #expect(refusedRow.contains("401"), "the refused key is not said in its row")
        #expect(!(page.components(separatedBy: "data-app=").dropFirst().first ?? "").contains("401"))
    }
}
