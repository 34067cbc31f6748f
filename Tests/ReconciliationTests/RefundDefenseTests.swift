// Refund defense: the answer to Apple's CONSUMPTION_REQUEST, decided through the rule book
// (`Decide.family`, then `Lookup.verdict`, then `RefundDefense.decide`), rule by rule.

import Testing

@testable import Reconciliation

@Suite("Refund defense: answers to Apple's consumption requests")
struct RefundDefenseTests {
    static let tid = "2000000000000042"
    static let paidAt = asOf - 3 * day
    static let requested = asOf - 2 * hour
    static let consented: [String: EpochMillis] = ["U1": paidAt - day]

    static func tx(_ env: AppStoreEnvironment = .production, quantity: Int = 1, cancelled: EpochMillis? = nil,
                   at: EpochMillis = paidAt) -> AppleTransaction {
        apple(tid, product: "coins", quantity: quantity, at: at, cancelled: cancelled, env: env)
    }
    static func g(_ id: String, user: String = "U1", quantity: Int = 1, revoked: EpochMillis? = nil,
                  type: ProductType = .consumable) -> GrantFacts {
        facts(grant(id, tx: tid, user: user, product: "coins", quantity: quantity, at: paidAt + minute, revoked: revoked), type)
    }

    /// The decision for `tid` in a family, through the night's rules and lookup's verdict.
    static func decide(_ transactions: [KnownTransaction], _ grants: [GrantFacts] = [],
                       shop: ShopConsumptionFacts = ShopConsumptionFacts(consentedAt: consented),
                       env: AppStoreEnvironment = .production, requestedAt: EpochMillis = requested,
                       now: EpochMillis = asOf, settings: RefundDefenseSettings = RefundDefenseSettings()) -> ConsumptionDecision {
        let family = Family(key: tid, transactions: transactions, grants: grants)
        let verdict = Lookup.verdict(transactionID: tid, environment: env, in: family,
                                     decision: Decide.family(family, settings: standardSettings), settings: standardSettings)!
        return RefundDefense.decide(transactionID: tid, environment: env, in: family, verdict: verdict, shop: shop,
                                    requestedAt: requestedAt, now: now, settings: settings)
    }

    static func answer(_ d: ConsumptionDecision) -> ConsumptionAnswer? {
        if case .answer(let a) = d { return a }
        return nil
    }

    @Test("granted and covered: DELIVERED with the shop's consumption; unknown consumption left out")
    func delivered() {
        let shop = ShopConsumptionFacts(consentedAt: Self.consented, consumptionPercentage: 67_932)
        let a = Self.answer(Self.decide([known(Self.tx(), user: "U1")], [Self.g("G1")], shop: shop))
        #expect(a == ConsumptionAnswer(deliveryStatus: .delivered, sampleContentProvided: false, consumptionPercentage: 67_932,
                                       refundPreference: nil))
        #expect(a?.customerConsented == true)
        let unknown = Self.answer(Self.decide([known(Self.tx(), user: "U1")], [Self.g("G1")]))
        #expect(unknown?.deliveryStatus == .delivered && unknown?.consumptionPercentage == nil)
        // A percentage out of Apple's range is never sent.
        let wild = ShopConsumptionFacts(consentedAt: Self.consented, consumptionPercentage: 100_001)
        #expect(Self.answer(Self.decide([known(Self.tx(), user: "U1")], [Self.g("G1")], shop: wild))?.consumptionPercentage == nil)
    }

    @Test("never granted, or granted in part: UNDELIVERED_OTHER with 0; the shop's own UNDELIVERED value wins")
    func undelivered() {
        let shop = ShopConsumptionFacts(consentedAt: Self.consented, consumptionPercentage: 40_000)
        let never = Self.answer(Self.decide([known(Self.tx(), user: "U1")], shop: shop))
        #expect(never?.deliveryStatus == .undeliveredOther && never?.consumptionPercentage == 0)
        let partly = Self.answer(Self.decide([known(Self.tx(quantity: 3), user: "U1")], [Self.g("G1", quantity: 2)]))
        #expect(partly?.deliveryStatus == .undeliveredOther && partly?.consumptionPercentage == 0)
        let revoked = Self.answer(Self.decide([known(Self.tx(), user: "U1")], [Self.g("G1", revoked: Self.paidAt + hour)]))
        #expect(revoked?.deliveryStatus == .undeliveredOther)
        var outage = shop
        outage.deliveryStatus = .undeliveredServerOutage
        #expect(Self.answer(Self.decide([known(Self.tx(), user: "U1")], shop: outage))?.deliveryStatus == .undeliveredServerOutage)
        // Said of a granted purchase, the shop's value still wins (it knows a broken item), with 0.
        var quality = shop
        quality.deliveryStatus = .undeliveredQualityIssue
        let q = Self.answer(Self.decide([known(Self.tx(), user: "U1")], [Self.g("G1")], shop: quality))
        #expect(q?.deliveryStatus == .undeliveredQualityIssue && q?.consumptionPercentage == 0)
        // The shop cannot make an undelivered purchase delivered.
        var claims = shop
        claims.deliveryStatus = .delivered
        #expect(Self.answer(Self.decide([known(Self.tx(), user: "U1")], shop: claims))?.deliveryStatus == .undeliveredOther)
        // Outside the night's window, still undelivered: the night does not compensate it, but it was not delivered.
        let old = Self.tx(at: asOf - 40 * day)
        #expect(Self.answer(Self.decide([known(old, user: "U1")]))?.deliveryStatus == .undeliveredOther)
    }

    @Test("no consent, consent after the request, another user's consent: nothing sent")
    func consent() {
        let family = [known(Self.tx(), user: "U1")]
        #expect(Self.decide(family, [Self.g("G1")], shop: ShopConsumptionFacts()) == .noConsent)
        #expect(Self.decide(family, [Self.g("G1")], shop: ShopConsumptionFacts(consentedAt: ["U1": Self.requested + 1])) == .noConsent)
        #expect(Self.decide(family, [Self.g("G1")], shop: ShopConsumptionFacts(consentedAt: ["U2": Self.paidAt])) == .noConsent)
        #expect(Self.answer(Self.decide(family, [Self.g("G1")], shop: ShopConsumptionFacts(consentedAt: ["U1": Self.requested]))) != nil)
        // Unknown to us: no user, so no consent can be ours.
        #expect(Self.decide([known(Self.tx(), user: nil, receipt: nil)]) == .noConsent)
        // The grant's user is the one whose consent counts.
        let granted = Self.decide([known(Self.tx(), user: nil, receipt: nil)], [Self.g("G1", user: "U9")],
                                  shop: ShopConsumptionFacts(consentedAt: ["U9": Self.paidAt]))
        #expect(Self.answer(granted)?.deliveryStatus == .delivered)
    }

    @Test("older than 12 hours from the signed date: expired, whatever the facts; exactly 12 hours: answered")
    func expired() {
        let family = [known(Self.tx(), user: "U1")]
        #expect(Self.decide(family, [Self.g("G1")], requestedAt: asOf - 12 * hour - 1) == .expired)
        #expect(Self.decide(family, shop: ShopConsumptionFacts(), requestedAt: asOf - 13 * hour) == .expired)
        #expect(Self.answer(Self.decide(family, [Self.g("G1")], requestedAt: asOf - 12 * hour)) != nil)
    }

    @Test("auto-renewable: consumptionPercentage left out, delivered or not (Apple's 4000209)")
    func autoRenewable() {
        let shop = ShopConsumptionFacts(consentedAt: Self.consented, consumptionPercentage: 90_000)
        let sub = known(Self.tx(), .autoRenewable, user: "U1")
        let a = Self.answer(Self.decide([sub], [Self.g("G1", type: .autoRenewable)], shop: shop,
                                        settings: RefundDefenseSettings(refundPreference: .fromDelivery)))
        #expect(a?.deliveryStatus == .delivered && a?.consumptionPercentage == nil && a?.refundPreference == nil)
        let none = Self.answer(Self.decide([sub], shop: shop))
        #expect(none?.deliveryStatus == .undeliveredOther && none?.consumptionPercentage == nil)
    }

    @Test("refund preference: off sends none; from-delivery declines at or above the threshold, grants undelivered")
    func preferences() {
        let fromDelivery = RefundDefenseSettings(refundPreference: .fromDelivery, declineAbove: 50_000)
        func pref(_ pct: Int?, granted: Bool, _ s: RefundDefenseSettings) -> RefundPreference? {
            let shop = ShopConsumptionFacts(consentedAt: Self.consented, consumptionPercentage: pct)
            return Self.answer(Self.decide([known(Self.tx(), user: "U1")], granted ? [Self.g("G1")] : [], shop: shop,
                                           settings: s))?.refundPreference
        }
        #expect(pref(90_000, granted: true, RefundDefenseSettings()) == nil)
        #expect(pref(nil, granted: false, RefundDefenseSettings()) == nil)
        #expect(pref(50_000, granted: true, fromDelivery) == .decline)
        #expect(pref(49_999, granted: true, fromDelivery) == nil)
        #expect(pref(nil, granted: true, fromDelivery) == nil)
        #expect(pref(nil, granted: false, fromDelivery) == .grantFull)
        #expect(pref(10_000, granted: true, RefundDefenseSettings(refundPreference: .fromDelivery, declineAbove: 0)) == .decline)
        // GRANT_PRORATED is never decided.
        for p in [0, 25_000, 50_000, 100_000] {
            #expect(pref(p, granted: true, fromDelivery) != .grantProrated)
        }
    }

    @Test("sample content: the product's flag, else the setting")
    func sampleContent() {
        let family = [known(Self.tx(), user: "U1")]
        #expect(Self.answer(Self.decide(family, [Self.g("G1")]))?.sampleContentProvided == false)
        #expect(Self.answer(Self.decide(family, [Self.g("G1")],
                                        settings: RefundDefenseSettings(sampleContentProvided: true)))?.sampleContentProvided == true)
        let shop = ShopConsumptionFacts(consentedAt: Self.consented, sampleContentProvided: false)
        #expect(Self.answer(Self.decide(family, [Self.g("G1")], shop: shop,
                                        settings: RefundDefenseSettings(sampleContentProvided: true)))?.sampleContentProvided == false)
    }

    @Test("what the rules cannot judge is recorded, not answered: refunded, clawed back, unknown product, restore")
    func notJudged() {
        let refunded = Self.decide([known(Self.tx(cancelled: asOf - day), user: "U1")])
        #expect(refunded == .notJudged("refunded"))
        let clawBack = Self.decide([known(Self.tx(cancelled: asOf - day), user: "U1")], [Self.g("G1")])
        #expect(clawBack == .notJudged("claw_back"))
        let product = Self.decide([known(Self.tx(), nil, user: "U1")])
        #expect(product == .notJudged("unknown_product"))
        // A restore of a non-consumable the user holds through its original purchase.
        let original = "2000000000000001"
        let first = apple(original, product: "coins", at: Self.paidAt - 5 * day)
        let restore = apple(Self.tid, original: original, product: "coins", at: Self.paidAt)
        let held = facts(grant("G0", tx: original, user: "U1", product: "coins", at: Self.paidAt - 5 * day), .nonConsumable)
        #expect(Self.decide([known(first, .nonConsumable, user: "U1"), known(restore, .nonConsumable, user: "U1")], [held])
                == .notJudged("restore"))
    }

    @Test("the sandbox is answered as production: covered is delivered")
    func sandbox() {
        let a = Self.answer(Self.decide([known(Self.tx(.sandbox), user: "U1")], [Self.g("G1")], env: .sandbox))
        #expect(a?.deliveryStatus == .delivered)
        let b = Self.answer(Self.decide([known(Self.tx(.sandbox), user: "U1")], env: .sandbox))
        #expect(b?.deliveryStatus == .undeliveredOther && b?.consumptionPercentage == 0)
    }
}
