// Google Play's rules through the rule book (docs/rules.md "Google Play"): each case one purchase
// token, as a finance worksheet would put it.

import Testing

@testable import Reconciliation

private let gpa = "GPA.3312-0001-2233-44556"
private let token = "tok-abcdefghijklmnop"
private let products: [String: PlayProduct] = [
    "coins": PlayProduct(.consumable, listUnit: Money(milliunits: 990, currency: "USD")),
    "sword": PlayProduct(.nonConsumable, listUnit: Money(milliunits: 4990, currency: "USD")),
]

/// A Play purchase of `quantity` units of `product`, completed `ago` before `asOf`.
private func play(
    _ product: String = "coins", quantity: Int = 1, ago: EpochMillis = 2 * day,
    verdict: GooglePurchase.Verdict = .purchased, order: String? = gpa, acknowledged: Bool = true,
    test: Bool = false, consumed: Bool = false
) -> GooglePurchase {
    GooglePurchase(
        token: token, package: "com.example.game", verdict: verdict, orderID: order, acknowledged: acknowledged,
        completedAt: asOf - ago, test: test,
        lines: [
            .init(
                productID: product, quantity: quantity,
                consumptionState: consumed ? "CONSUMPTION_STATE_CONSUMED" : "CONSUMPTION_STATE_YET_TO_BE_CONSUMED")
        ])
}

private func decide(
    _ purchase: GooglePurchase, voids: [PlayVoid] = [], grants: [Grant] = [], user: String? = "u1",
    total: Money? = Money(milliunits: 9900, currency: "USD"), state: String? = nil,
    settings: DecisionSettings = DecisionSettings(asOf: asOf, windowDays: 30, refundWindowDays: 90)
) -> PlayDecision {
    PlayRules.decide(
        PlayFacts(
            purchase: purchase, voids: voids, order: PlayOrderFacts(state: state, total: total, askedAt: asOf),
            userID: user,
            receiptID: "r1", products: products, grants: grants),
        settings: settings)
}

private func playGrant(
    _ id: String, user: String = "u1", product: String = "coins", quantity: Int = 1,
    at: EpochMillis = asOf - day, revoked: EpochMillis? = nil
) -> Grant {
    grant(id, tx: gpa, user: user, product: product, quantity: quantity, at: at, revoked: revoked)
}

@Suite("Google Play's rules: one purchase token through the rule book")
struct PlayRulesTests {
    @Test("compensate: PURCHASED and paid units uncovered; PENDING, CANCELLED, a tester's, out of the window or nobody's owe nothing")
    func compensate() {
        let missed = decide(play(quantity: 10))
        #expect(missed.compensations.map(\.owed) == [10] && missed.compensations[0].reason == .paidNotGranted)
        #expect(missed.compensations[0].transaction.transactionID == gpa && missed.compensations[0].amount?.text == "9.90")
        let partly = decide(play(quantity: 10), grants: [playGrant("g1", quantity: 4)])
        #expect(partly.compensations.map(\.owed) == [6] && partly.compensations[0].reason == .partiallyGranted)
        #expect(partly.compensations[0].amount == Money(milliunits: 5940, currency: "USD"))
        let revoked = decide(play(), grants: [playGrant("g1", revoked: asOf - hour)])
        #expect(revoked.compensations.map(\.reason) == [.revokedNotRefunded])
        #expect(decide(play(), grants: [playGrant("g1")]).compensations.isEmpty)
        for nothing in [
            decide(play(verdict: .pending)), decide(play(verdict: .cancelled)), decide(play(test: true)),
            decide(play(ago: 31 * day)), decide(play(), user: nil), decide(play(verdict: .unknown)),
        ] {
            #expect(nothing.compensations.isEmpty)
        }
        // No order id: the token is the transaction id.
        #expect(decide(play(order: nil)).compensations.first?.transaction.transactionID == token)
        // Units voided are owed to nobody: 10 bought, 3 refunded, 4 granted: 3 owed.
        let voided = decide(
            play(quantity: 10), voids: [PlayVoid(voidedAt: asOf - hour, quantity: 3)],
            grants: [playGrant("g1", quantity: 4)])
        #expect(voided.compensations.map(\.owed) == [3])
        // Every unit voided (reason 8: never acknowledged, never granted): nothing owed, a sale lost.
        let lost = decide(play(acknowledged: false), voids: [PlayVoid(voidedAt: asOf - hour, source: 2, reason: 8)])
        #expect(lost.compensations.isEmpty && lost.refunds.map(\.state) == [.salesLost])
    }

    @Test("claw back: refunded, chargeback (7), unacknowledged (8), a tester's, a token Google does not know, a cancelled one")
    func clawBack() {
        func reasons(_ d: PlayDecision) -> [ClawbackReason] { d.clawbacks.map(\.reason) }
        let g = [playGrant("g1")]
        #expect(reasons(decide(play(), voids: [PlayVoid(voidedAt: asOf - hour, reason: 1)], grants: g)) == [.refunded])
        #expect(reasons(decide(play(), voids: [PlayVoid(voidedAt: asOf - hour, reason: 7)], grants: g)) == [.chargeback])
        #expect(reasons(decide(play(), voids: [PlayVoid(voidedAt: asOf - hour, reason: 8)], grants: g)) == [.unacknowledged])
        #expect(reasons(decide(play(test: true), grants: g)) == [.sandboxTransaction])
        #expect(reasons(decide(play(verdict: .unknown), grants: g)) == [.invalidReceipt])
        #expect(reasons(decide(play(verdict: .cancelled), grants: g)) == [.cancelled])
        // A pending purchase may still be paid: nothing taken back, nothing owed.
        #expect(reasons(decide(play(verdict: .pending), grants: g)).isEmpty)
        // A revoked grant was already taken back; a grant of an unknown product takes part in no rule.
        #expect(decide(play(), voids: [PlayVoid(voidedAt: asOf - hour)], grants: [playGrant("g1", revoked: asOf)]).clawbacks.isEmpty)
        #expect(decide(play(), voids: [PlayVoid(voidedAt: asOf - hour)], grants: [playGrant("g1", product: "shield")]).clawbacks.isEmpty)
        let row = decide(play(), voids: [PlayVoid(voidedAt: asOf - hour, source: 0, reason: 7)], grants: g).clawbacks[0]
        #expect(row.cancellationDate == asOf - hour && row.cancellationReason == "7" && row.amount?.text == "9.90")
        // Claw-back's rows hold the same columns as Apple's.
        #expect(row.cells.count == ReportFile.clawback.layout.cells)
    }

    @Test("quantity refunds: 2, then 3, then the rest without voidedQuantity: exactly those units, once each")
    func quantityRefunds() {
        let ten = play(quantity: 10)
        let r1 = PlayVoid(voidedAt: asOf - 3 * day, quantity: 2, reason: 1)
        let r2 = PlayVoid(voidedAt: asOf - 2 * day, quantity: 3, reason: 1)
        let r3 = PlayVoid(voidedAt: asOf - day, reason: 7)
        // Night one: 2 of 10 voided, one grant of 10: 2 units back.
        let n1 = decide(ten, voids: [r1], grants: [playGrant("g10", quantity: 10)])
        #expect(n1.clawbacks.map(\.quantity) == [2] && n1.compensations.isEmpty && n1.duplicates.isEmpty)
        #expect(n1.refunds.map(\.percentageMilli) == [20_000] && n1.refunds[0].state == .stillGranted)
        #expect(n1.refunds[0].refunded == Money(milliunits: 1980, currency: "USD"))
        // Customer service took the 10 back and granted 8: the next night, 3 more voided: 3 back from the 8.
        let adjusted = [
            playGrant("g10", quantity: 10, revoked: asOf - 2 * day - hour), playGrant("g8", quantity: 8, at: asOf - 2 * day - hour),
        ]
        #expect(decide(ten, voids: [r1], grants: adjusted).clawbacks.isEmpty)
        let n2 = decide(ten, voids: [r1, r2], grants: adjusted)
        #expect(n2.clawbacks.map(\.grantID) == ["g8"] && n2.clawbacks.map(\.quantity) == [3])
        // Nothing done in between: the one row asks for the 5 in all, never 2 + 5.
        #expect(decide(ten, voids: [r1, r2], grants: [playGrant("g10", quantity: 10)]).clawbacks.map(\.quantity) == [5])
        // The rest, without voidedQuantity, a chargeback: every unit left, the latest reason.
        let n3 = decide(ten, voids: [r2, r1, r3], grants: [playGrant("g5", quantity: 5)])
        #expect(n3.clawbacks.map(\.quantity) == [5] && n3.clawbacks.map(\.reason) == [.chargeback])
        #expect(n3.refunds.map(\.percentageMilli) == [nil] && n3.refunds[0].reason == 7)
        // The excess comes off the latest grants first.
        let split = decide(ten, voids: [r1, r2], grants: [playGrant("a", quantity: 6, at: asOf - 3 * day), playGrant("b", quantity: 4)])
        #expect(split.clawbacks.map { "\($0.grantID):\($0.quantity)" } == ["a:1", "b:4"])
        // A hostile record (a negative quantity) takes nothing.
        #expect(
            decide(ten, voids: [PlayVoid(voidedAt: asOf - day, quantity: -4)], grants: [playGrant("g", quantity: 10)]).clawbacks.isEmpty)
    }

    @Test("duplicates: grants of one order beyond its units, a non-consumable granted to two accounts")
    func duplicates() {
        let twice = decide(play(), grants: [playGrant("g1", at: asOf - 2 * day), playGrant("g2")])
        #expect(twice.duplicates.map(\.grantID) == ["g2"] && twice.duplicates[0].kind == .sameTransaction)
        #expect(twice.duplicates[0].keptGrantID == "g1" && twice.compensations.isEmpty)
        let shared = decide(
            play("sword"),
            grants: [
                playGrant("g1", product: "sword", at: asOf - 2 * day),
                playGrant("g2", user: "u2", product: "sword"),
            ])
        #expect(shared.duplicates.map(\.grantID) == ["g2"] && shared.duplicates.map(\.kind) == [.sameTransaction])
        let tenOfTwo = decide(
            play("sword", quantity: 2),
            grants: [
                playGrant("g1", product: "sword", at: asOf - 2 * day),
                playGrant("g2", user: "u2", product: "sword"),
            ])
        #expect(tenOfTwo.duplicates.map(\.kind) == [.crossAccount] && tenOfTwo.duplicates[0].grantID == "g2")
        // A whole refund takes every grant back: no duplicate is listed besides.
        let refunded = decide(
            play(), voids: [PlayVoid(voidedAt: asOf - hour)], grants: [playGrant("g1", at: asOf - 2 * day), playGrant("g2")])
        #expect(refunded.duplicates.isEmpty && refunded.clawbacks.map(\.grantID) == ["g1", "g2"])
        // A partial refund after a duplicate: the duplicate whole, then the excess of the kept grant.
        let both = decide(
            play(quantity: 10), voids: [PlayVoid(voidedAt: asOf - hour, quantity: 2)],
            grants: [playGrant("g1", quantity: 10, at: asOf - 2 * day), playGrant("g2", quantity: 10)])
        #expect(both.duplicates.map(\.grantID) == ["g2"] && both.clawbacks.map { "\($0.grantID):\($0.quantity)" } == ["g1:2"])
    }

    @Test("acknowledge.csv: the deadline three days after completion, the action, most urgent first; the job never acknowledges")
    func acknowledge() {
        let missed = decide(play(ago: 2 * day, acknowledged: false))
        #expect(missed.acknowledge.map(\.action) == [.grantAndAcknowledge])
        #expect(missed.acknowledge[0].acknowledgeBy == asOf + day && missed.acknowledge[0].token == token)
        #expect(decide(play(ago: day, acknowledged: false), grants: [playGrant("g1")]).acknowledge.map(\.action) == [.acknowledge])
        #expect(decide(play(ago: 3 * day + 1, acknowledged: false), grants: [playGrant("g1")]).acknowledge.map(\.action) == [.overdue])
        // The deadline itself is not past.
        #expect(decide(play(ago: 3 * day, acknowledged: false), grants: [playGrant("g1")]).acknowledge.map(\.action) == [.acknowledge])
        for none in [
            decide(play(acknowledged: true)), decide(play(acknowledged: false, consumed: true)),
            decide(play(acknowledged: false, test: true)), decide(play(verdict: .pending, acknowledged: false)),
            decide(play(ago: 4 * day + 1, acknowledged: false)),
            decide(play(acknowledged: false), voids: [PlayVoid(voidedAt: asOf - hour)]),
        ] {
            #expect(none.acknowledge.isEmpty)
        }
        // Partly granted: still owed, so grant and acknowledge; the units are those still paid for.
        let part = decide(
            play(quantity: 5, acknowledged: false), voids: [PlayVoid(voidedAt: asOf - hour, quantity: 1)],
            grants: [playGrant("g", quantity: 2)])
        #expect(part.acknowledge.map(\.quantity) == [4] && part.acknowledge.map(\.action) == [.grantAndAcknowledge])
        let rows = [
            AcknowledgeRow(
                acknowledgeBy: 5, action: .acknowledge, package: "p", transactionID: "b", token: "t",
                productIDs: "x", quantity: 1, userID: nil, orderID: nil, completedAt: 1),
            AcknowledgeRow(
                acknowledgeBy: 3, action: .overdue, package: "p", transactionID: "c", token: "t",
                productIDs: "x", quantity: 1, userID: nil, orderID: nil, completedAt: 1),
        ]
        #expect(rows.sorted(by: AcknowledgeRow.urgentFirst).map(\.transactionID) == ["c", "b"])
        #expect(AcknowledgeRow.layout.first?.column.name == "acknowledge_by" && missed.acknowledge[0].cells.count == 10)
    }

    @Test("refunds.csv: Google's reason and source, the state in its order, a voided entry Google's order contradicts")
    func refunds() {
        let v = PlayVoid(voidedAt: asOf - day, source: 1, reason: 3)
        let row = decide(play(), voids: [v], grants: [playGrant("g2"), playGrant("g1", at: asOf - 2 * day)]).refunds[0]
        #expect(row.state == .stillGranted && row.reason == 3 && row.source == 1 && row.grantIDs.sorted() == ["g1", "g2"])
        #expect(
            row.cells.count == ReportFile.refunds.layout.cells
                && PlayRefundRow.layout.map(\.column.name) == ReportFile.refunds.layout.cellNames)
        #expect(decide(play(), voids: [v]).refunds.map(\.state) == [.neverGranted])
        #expect(decide(play(), voids: [v], grants: [playGrant("g1", revoked: asOf)]).refunds.map(\.state) == [.clawedBack])
        #expect(
            decide(play(), voids: [PlayVoid(voidedAt: asOf - day, reason: 8)], grants: [playGrant("g1")]).refunds.map(\.state) == [
                .salesLost
            ])
        // Google's order says PROCESSED while its voided list says refunded: listed with both.
        let contradicted = decide(play(), voids: [PlayVoid(voidedAt: asOf - day, reason: 7)], grants: [playGrant("g1")], state: "PROCESSED")
        #expect(contradicted.refunds.map(\.state) == [.contradicted] && contradicted.refunds[0].reason == 7)
        #expect(decide(play(), voids: [v], state: "REFUNDED").refunds.map(\.state) == [.neverGranted])
        #expect(decide(play(), voids: [v], state: "PENDING_REFUND").refunds.map(\.state) == [.neverGranted])
        // An order asked before the refund (stored the night after the purchase) says nothing of it.
        let stale = PlayRules.decide(
            PlayFacts(
                purchase: play(), voids: [PlayVoid(voidedAt: asOf - day, reason: 7)],
                order: PlayOrderFacts(state: "PROCESSED", askedAt: asOf - day - 1), userID: "u1",
                products: products, grants: [playGrant("g1")]), settings: standardSettings)
        #expect(stale.refunds.map(\.state) == [.stillGranted])
        // A tester's refund, a refund out of the window, a token Google does not know: not listed.
        #expect(decide(play(test: true), voids: [v]).refunds.isEmpty)
        #expect(decide(play(ago: 100 * day), voids: [PlayVoid(voidedAt: asOf - 91 * day)]).refunds.isEmpty)
        #expect(decide(play(verdict: .unknown), voids: [v]).refunds.isEmpty)
    }

    @Test("Google's money: units and nanos to milliunits, exact; signs that disagree or nanos out of range are not money")
    func money() {
        #expect(PlayOrderFacts.milliunits(units: 4, nanos: 990_000_000) == 4990)
        #expect(PlayOrderFacts.milliunits(units: -1, nanos: -500_000_000) == -1500)
        #expect(PlayOrderFacts.milliunits(units: 0, nanos: 1_500_000) == 2)  // half away from zero
        #expect(PlayOrderFacts.milliunits(units: 1, nanos: -1) == nil)
        #expect(PlayOrderFacts.milliunits(units: 0, nanos: 1_000_000_000) == nil)
        #expect(PlayOrderFacts.milliunits(units: .max, nanos: 0) == nil)
        // Several products in one purchase: the order's total says nothing of each, the list price does.
        var two = play(quantity: 1)
        two.lines.append(.init(productID: "sword", quantity: 1))
        let d = decide(two)
        #expect(d.compensations.map(\.amount?.text) == ["0.99", "4.99"])
    }

    @Test("lookup's verdict on a Play purchase: the night's decision, in words, with an acknowledgement still due")
    func lookupVerdicts() {
        func verdict(_ p: GooglePurchase, voids: [PlayVoid] = [], grants: [Grant] = [], user: String? = "u1") -> LookupVerdict {
            let facts = PlayFacts(
                purchase: p, voids: voids, order: PlayOrderFacts(total: Money(milliunits: 990, currency: "USD")),
                userID: user, products: products, grants: grants)
            return PlayLookup.verdict(facts, decision: PlayRules.decide(facts, settings: standardSettings), settings: standardSettings)
        }
        let missed = verdict(play(acknowledged: false))
        #expect(
            missed.kind == .compensate && missed.owed == 1 && missed.report == .compensate
                && missed.findingKeys == ["google_play|compensate|\(gpa)|coins"])
        #expect(
            missed.text.contains("never granted: compensate 1 × coins to user u1") && missed.text.contains("acknowledge token \(token)"))
        let back = verdict(play(), voids: [PlayVoid(voidedAt: asOf - hour, reason: 7)], grants: [playGrant("g1")])
        #expect(
            back.kind == .clawBack && back.grantIDs == ["g1"] && back.text.contains("charged back")
                && back.findingKeys == ["google_play|clawback|g1"])
        #expect(verdict(play(verdict: .pending)).kind == .notPaid && verdict(play(verdict: .cancelled)).kind == .notPaid)
        #expect(verdict(play(verdict: .unknown)).kind == .notPaid && verdict(play(test: true)).kind == .sandbox)
        #expect(verdict(play(), voids: [PlayVoid(voidedAt: asOf - hour)]).kind == .refunded)
        let granted = verdict(play(), grants: [playGrant("g1")])
        #expect(granted.kind == .granted && !granted.text.contains("acknowledge"))
        let partly = verdict(
            play(quantity: 10), voids: [PlayVoid(voidedAt: asOf - hour, quantity: 3)], grants: [playGrant("g", quantity: 4)])
        #expect(partly.kind == .compensate && partly.owed == 3 && partly.text.contains("granted 4 of 10"))
        #expect(verdict(play(), user: nil).kind == .unknownToUs && verdict(play("shield")).kind == .unknownProduct)
        #expect(verdict(play(ago: 40 * day)).kind == .outsideWindow)
    }

    @Test("several products in one purchase: each its own finding, its duplicates and partial refunds against its own units")
    func severalProducts() {
        var two = play(quantity: 1)
        two.lines.append(.init(productID: "sword", quantity: 1))
        // Nothing granted: two compensations, two keys.
        let missed = decide(two)
        let keys = Decide.matchOrders(missed.compensations, openOrders: []).map(PlayRules.compensationKey)
        #expect(keys == ["compensate|\(gpa)|coins", "compensate|\(gpa)|sword"])
        // Two coins granted for one coin bought: a duplicate, though the purchase has two units; the sword is owed.
        let twice = decide(two, grants: [playGrant("g1", at: asOf - 2 * day), playGrant("g2")])
        #expect(twice.duplicates.map(\.grantID) == ["g2"] && twice.compensations.map(\.transaction.productID) == ["sword"])
        // A unit voided is the first line's (coins): its grant is clawed back, never the sword's.
        let five = GooglePurchase(
            token: token, package: "p", verdict: .purchased, orderID: gpa, acknowledged: true,
            completedAt: asOf - day, lines: [.init(productID: "coins", quantity: 5), .init(productID: "sword", quantity: 1)])
        let back = decide(
            five, voids: [PlayVoid(voidedAt: asOf - hour, quantity: 1)],
            grants: [playGrant("c", quantity: 5, at: asOf - 2 * day), playGrant("s", product: "sword")])
        #expect(back.clawbacks.map { "\($0.grantID):\($0.quantity)" } == ["c:1"])
        // Nobody's: listed to find, one row per product.
        #expect(decide(two, user: nil).unattributed.map(\.productID) == ["coins", "sword"])
        #expect(decide(two, grants: [playGrant("g1")], user: nil).unattributed.isEmpty)
    }

    @Test("whose purchase: the uploader of its token, then the order its account id names, then its earliest grant")
    func owner() {
        #expect(PlayOwner.of(uploader: "a", accountUser: "b", earliestGrantUser: "c") == "a")
        #expect(PlayOwner.of(uploader: nil, accountUser: "b", earliestGrantUser: "c") == "b")
        #expect(PlayOwner.of(uploader: nil, accountUser: nil, earliestGrantUser: "c") == "c")
        #expect(PlayOwner.of(uploader: nil, accountUser: nil, earliestGrantUser: nil) == nil)
    }
}

@Suite("Google Play's refund defense: what respond answers a pending refund review")
struct PlayRefundDefenseTests {
    /// The answer to a review announced an hour before `now` for `facts`, under `settings`.
    private func answer(
        _ purchase: GooglePurchase, grants: [Grant] = [], voids: [PlayVoid] = [], consumption: Int? = nil, sample: Bool? = nil,
        requestedAt: EpochMillis = asOf - 3_600_000, settings: RefundDefenseSettings = .init(refundPreference: .fromDelivery)
    ) -> PlayReviewDecision {
        let rules = DecisionSettings(asOf: asOf, windowDays: 30, refundWindowDays: 90)
        let facts = PlayFacts(
            purchase: purchase, voids: voids, order: PlayOrderFacts(state: nil, total: nil, askedAt: asOf), userID: "u1",
            receiptID: "r1", products: products, grants: grants)
        let d = PlayRules.decide(facts, settings: rules)
        return PlayRefundDefense.decide(
            facts, verdict: PlayLookup.verdict(facts, decision: d, settings: rules), consumption: consumption,
            sampleContentProvided: sample, requestedAt: requestedAt, now: asOf, settings: settings)
    }

    @Test("delivered and consumed at or above the line: DECLINE; below: NEUTRAL; undelivered: APPROVE with 0; off: NEUTRAL")
    func preferences() {
        let granted = [playGrant("g1")]
        #expect(
            answer(play(), grants: granted, consumption: 80_000)
                == .answer(.init(delivered: true, preference: .decline, sampleContentProvided: false, consumptionMilliunits: 80_000)))
        #expect(
            answer(play(), grants: granted, consumption: 49_999, sample: true)
                == .answer(.init(delivered: true, preference: .neutral, sampleContentProvided: true, consumptionMilliunits: 49_999)))
        #expect(
            answer(play(), grants: granted, consumption: 100_001)
                == .answer(.init(delivered: true, preference: .neutral, sampleContentProvided: false, consumptionMilliunits: nil)))
        #expect(
            answer(play(), consumption: 90_000)
                == .answer(.init(delivered: false, preference: .approve, sampleContentProvided: false, consumptionMilliunits: 0)))
        #expect(
            answer(play(quantity: 3), grants: [playGrant("g1", quantity: 2)], consumption: 90_000)
                == .answer(.init(delivered: false, preference: .approve, sampleContentProvided: false, consumptionMilliunits: 0)))
        #expect(
            answer(play(), consumption: 90_000, settings: .init())
                == .answer(.init(delivered: false, preference: .neutral, sampleContentProvided: false, consumptionMilliunits: 0)))
    }

    @Test("past 24 hours: expired; refunded, clawed back, a tester's, cancelled or unknown: not judged")
    func notAnswered() {
        #expect(answer(play(), grants: [playGrant("g1")], requestedAt: asOf - 24 * 3_600_000 - 1) == .expired)
        #expect(answer(play(), grants: [playGrant("g1")], requestedAt: asOf - 24 * 3_600_000) != .expired)
        let chargeback = PlayVoid(voidedAt: asOf - day, quantity: nil, source: 1, reason: 7)
        #expect(answer(play(), grants: [playGrant("g1")], voids: [chargeback]) == .notJudged("claw_back"))
        #expect(answer(play(), voids: [chargeback]) == .notJudged("refunded"))
        #expect(answer(play(test: true), grants: [playGrant("g1")]) == .notJudged("claw_back"))
        #expect(answer(play(verdict: .cancelled)) == .notJudged("not_paid"))
        #expect(answer(play(verdict: .unknown)) == .notJudged("not_paid"))
    }
}
