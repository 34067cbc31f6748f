import Reconciliation
import Testing

/// The rules that hold a night which looks wrong (docs/contract.md, "Held nights"), each
/// at its edge: one row on the publishing side, one on the held side.
@Suite("Held nights: the rules at their edges")
struct NightHoldTests {
    typealias Relation = NightFigures.Relation

    static func night(orders: Relation = Relation(rows: 1_000, inputErrors: 0, inWindow: 800),
                      receipts: Relation = Relation(rows: 1_000, inputErrors: 0, inWindow: 800),
                      compensate: Int = 10, clawback: Int = 5) -> NightFigures {
        NightFigures(relations: ["iap_orders": orders, "iap_receipts": receipts,
                                 "iap_products": Relation(rows: 20, inputErrors: 0)],
                     reports: ["compensate": compensate, "clawback": clawback, "duplicate_grants": 3])
    }

    static let good = night()
    static let lastGood = PublishedNights(last: night(), reportRows: ["compensate": [10], "clawback": [5]], count: 1)

    static func checks(_ tonight: NightFigures, _ published: PublishedNights = lastGood,
                       _ adjust: (inout HoldThresholds) -> Void = { _ in }) -> [String] {
        var t = HoldThresholds()
        adjust(&t)
        return NightHold.reasons(tonight: tonight, published: published, thresholds: t).map { "\($0.check) \($0.subject)" }
    }

    @Test("the defaults are the contract's: 5%, 100 rows, 25%, 5 times over 7 of the last 30 nights, a fifth, 1% of keys, publish")
    func defaults() {
        let t = HoldThresholds()
        #expect(t.inputErrorsPercent == 5 && t.minRows == 100 && t.findingsPercent == 25)
        #expect(t.medianTimes == 5 && t.medianNights == 7 && HoldThresholds.medianOver == 30)
        #expect(t.rowsPercent == 20 && t.keysPercent == 1 && t.holdFirstNight == false)
    }

    @Test("a good night after a good one is published: no reason")
    func goodNight() {
        #expect(Self.checks(Self.good).isEmpty)
        #expect(Self.checks(Self.good, PublishedNights()).isEmpty)
    }

    @Test("input errors: 5% of 1,000 rows publishes, 51 holds; 99 rows are too few to judge, 100 are not")
    func inputErrors() {
        #expect(Self.checks(Self.night(orders: Relation(rows: 1_000, inputErrors: 50, inWindow: 800))).isEmpty)
        #expect(Self.checks(Self.night(orders: Relation(rows: 1_000, inputErrors: 51, inWindow: 800)))
            == ["input_errors iap_orders"])
        #expect(Self.checks(Self.night(receipts: Relation(rows: 99, inputErrors: 99, inWindow: 0)),
                            PublishedNights()).isEmpty)
        #expect(Self.checks(Self.night(receipts: Relation(rows: 100, inputErrors: 6, inWindow: 0)),
                            PublishedNights()) == ["input_errors iap_receipts"])
        #expect(Self.checks(Self.night(receipts: Relation(rows: 100, inputErrors: 5, inWindow: 0)),
                            PublishedNights()).isEmpty)
        // the option moves the edge
        #expect(Self.checks(Self.night(orders: Relation(rows: 1_000, inputErrors: 51, inWindow: 800))) {
            $0.inputErrorsPercent = 10 }.isEmpty)
    }

    @Test("rows: a fifth of the last published night's publishes, one row fewer holds; a small last night never measures")
    func rowsShrank() {
        #expect(Self.checks(Self.night(orders: Relation(rows: 200, inputErrors: 0, inWindow: 800))).isEmpty)
        #expect(Self.checks(Self.night(orders: Relation(rows: 199, inputErrors: 0, inWindow: 800)))
            == ["rows_shrank iap_orders"])
        let small = PublishedNights(last: Self.night(orders: Relation(rows: 99, inputErrors: 0, inWindow: 99)), count: 1)
        #expect(Self.checks(Self.night(orders: Relation(rows: 1, inputErrors: 0, inWindow: 1)), small).isEmpty)
        #expect(Self.checks(Self.night(orders: Relation(rows: 199, inputErrors: 0, inWindow: 800))) {
            $0.rowsPercent = 19.9 }.isEmpty)
    }

    @Test("rows in the window: 160 of 800 publishes, 159 holds (every order in 1970: none)")
    func windowShrank() {
        #expect(Self.checks(Self.night(orders: Relation(rows: 1_000, inputErrors: 0, inWindow: 160))).isEmpty)
        #expect(Self.checks(Self.night(orders: Relation(rows: 1_000, inputErrors: 0, inWindow: 159)))
            == ["window_rows_shrank iap_orders"])
        #expect(Self.checks(Self.night(orders: Relation(rows: 1_000, inputErrors: 0, inWindow: 0),
                                       receipts: Relation(rows: 1_000, inputErrors: 0, inWindow: 0)))
            == ["window_rows_shrank iap_orders", "window_rows_shrank iap_receipts"])
    }

    @Test("findings share: 200 of 800 window orders publishes, 201 holds; 99 rows never; no order in the window at all holds")
    func findingsShare() {
        #expect(Self.checks(Self.night(compensate: 200), PublishedNights()).isEmpty)
        #expect(Self.checks(Self.night(compensate: 201), PublishedNights()) == ["findings_share compensate"])
        #expect(Self.checks(Self.night(clawback: 201), PublishedNights()) == ["findings_share clawback"])
        let fewOrders = Self.night(orders: Relation(rows: 90, inputErrors: 0, inWindow: 90), compensate: 99)
        #expect(Self.checks(fewOrders, PublishedNights()).isEmpty)
        let noWindow = Self.night(orders: Relation(rows: 90, inputErrors: 0, inWindow: 0), compensate: 100)
        let reasons = NightHold.reasons(tonight: noWindow, published: PublishedNights(), thresholds: HoldThresholds())
        #expect(reasons.map(\.check) == ["findings_share"])
        #expect(reasons.first?.text.contains("while the window holds no order") == true)
    }

    @Test("two stores: Google Play's rows alone are held to the same rules, though the whole night would publish")
    func playAlone() {
        // 150 of Play's 400 window orders listed to compensate, beside 10 of the App Store's 800.
        var night = Self.night(orders: Relation(rows: 1_400, inputErrors: 0, inWindow: 1_200), compensate: 160)
        night.relations[NightHold.playPrefix + "iap_orders"] = Relation(rows: 400, inputErrors: 0, inWindow: 400)
        night.reports[NightHold.playPrefix + "compensate"] = 150
        #expect(Self.checks(night) == ["findings_share google_play compensate"])
        night.reports[NightHold.playPrefix + "compensate"] = 100  // a quarter: publishes
        #expect(Self.checks(night).isEmpty)
        // Play's grants broken (a null transaction_id): 30 of its 400 rows, 2% of the shop's 1,400.
        night.relations[NightHold.playPrefix + "iap_grants"] = Relation(rows: 400, inputErrors: 30, inWindow: 370)
        night.relations["iap_grants"] = Relation(rows: 1_400, inputErrors: 30, inWindow: 1_170)
        #expect(Self.checks(night) == ["input_errors google_play iap_grants"])
    }

    @Test("the median: 5 times the median publishes, one more holds; only once there are 7 published nights; over the last 30")
    func findingsMedian() {
        let six = PublishedNights(last: Self.good, reportRows: ["compensate": [20, 20, 20, 20, 20, 20]], count: 6)
        #expect(Self.checks(Self.night(compensate: 150), six).isEmpty)
        let seven = PublishedNights(last: Self.good, reportRows: ["compensate": [20, 20, 20, 20, 20, 20, 20]], count: 7)
        #expect(Self.checks(Self.night(compensate: 100), seven).isEmpty)
        #expect(Self.checks(Self.night(compensate: 101), seven) == ["findings_median compensate"])
        // the median of an even count is the mean of the middle two: [10, 30] → 20 → edge 100
        let even = PublishedNights(last: Self.good, reportRows: ["compensate": [10, 10, 10, 10, 30, 30, 30, 30]], count: 8)
        #expect(Self.checks(Self.night(compensate: 100), even).isEmpty)
        #expect(Self.checks(Self.night(compensate: 101), even) == ["findings_median compensate"])
        // only the newest 30 count: 30 nights of 40 then older nights of 1 keep the median at 40
        let long = PublishedNights(last: Self.good,
                                   reportRows: ["compensate": Array(repeating: 40, count: 30) + Array(repeating: 1, count: 30)],
                                   count: 60)
        #expect(Self.checks(Self.night(compensate: 200), long).isEmpty)
        // below the floor of 100 rows a report is never held by its median
        let quiet = PublishedNights(last: Self.good, reportRows: ["clawback": Array(repeating: 1, count: 10)], count: 10)
        #expect(Self.checks(Self.night(clawback: 99), quiet).isEmpty)
        #expect(Self.checks(Self.night(clawback: 100), quiet) == ["findings_median clawback"])
        #expect(Self.checks(Self.night(compensate: 101), seven) { $0.medianNights = 8 }.isEmpty)
    }

    @Test("keys: 1% of the keys compared now holding other content publishes, more holds; fewer than 100 compared never")
    func keysChanged() {
        func receipts(_ compared: Int?, _ changed: Int?) -> NightFigures {
            Self.night(receipts: Relation(rows: 1_000, inputErrors: 0, inWindow: 800, keysCompared: compared, keysChanged: changed))
        }
        #expect(Self.checks(receipts(1_000, 10)).isEmpty)
        #expect(Self.checks(receipts(1_000, 11)) == ["keys_changed iap_receipts"])
        #expect(Self.checks(receipts(99, 99)).isEmpty)
        #expect(Self.checks(receipts(100, 2)) == ["keys_changed iap_receipts"])
        #expect(Self.checks(receipts(nil, nil)).isEmpty)
        #expect(Self.checks(receipts(1_000, 11)) { $0.keysPercent = 1.1 }.isEmpty)
        let reasons = NightHold.reasons(tonight: receipts(1_000, 500), published: Self.lastGood, thresholds: HoldThresholds())
        #expect(reasons.first?.text.contains("500 of 1000 keys") == true && reasons.first?.text.contains("--hold-keys-percent") == true)
    }

    @Test("the first night: published by default, held with --first-night hold, and only the first")
    func firstNight() {
        #expect(Self.checks(Self.good, PublishedNights()).isEmpty)
        #expect(Self.checks(Self.good, PublishedNights()) { $0.holdFirstNight = true } == ["first_night "])
        #expect(Self.checks(Self.good) { $0.holdFirstNight = true }.isEmpty)
    }

    @Test("the reasons come in a fixed order and each names its option")
    func orderAndText() {
        let bad = Self.night(orders: Relation(rows: 150, inputErrors: 100, inWindow: 0),
                             receipts: Relation(rows: 100, inputErrors: 50, inWindow: 0), compensate: 500)
        let reasons = NightHold.reasons(tonight: bad, published: Self.lastGood, thresholds: HoldThresholds())
        #expect(reasons.map { "\($0.check) \($0.subject)" } == [
            "input_errors iap_orders", "rows_shrank iap_orders", "window_rows_shrank iap_orders",
            "input_errors iap_receipts", "rows_shrank iap_receipts", "window_rows_shrank iap_receipts",
            "findings_share compensate",
        ])
        let options = ["input_errors": "--hold-input-errors-percent", "rows_shrank": "--hold-rows-percent",
                       "window_rows_shrank": "--hold-rows-percent", "findings_share": "--hold-findings-percent"]
        for reason in reasons { #expect(reason.text.contains(options[reason.check]!), "\(reason.text)") }
        #expect(reasons[0].text.contains("100 of its 150 rows are input errors (66.7%)"))
    }

    @Test("the median of nothing is nil; odd and even counts")
    func median() {
        #expect(NightHold.median([]) == nil)
        #expect(NightHold.median([3, 1, 2]) == 2)
        #expect(NightHold.median([4, 1, 3, 2]) == 2.5)
        #expect(NightHold.median([Int.max / 4, Int.max / 4]) == Double(Int.max / 4))
    }
}
