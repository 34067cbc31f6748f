// Money (contract §6 amounts) and the rules of the Server API's transactions: transactions learned from the App
// Store Server API alone, family_revoked, unattributed purchases.

import Testing

@testable import Reconciliation

@Suite("money")
struct MoneyTests {
    /// Every class of ISO 4217 minor units: none (JPY, KRW), two (USD, EUR, and a code the table
    /// does not know), three (KWD, BHD); exact values print exactly and read back.
    @Test(arguments: [(4990, "USD", "4.99"), (160_000, "JPY", "160"), (160_000, "USD", "160.00"), (1_250, "KWD", "1.250"),
                      (0, "EUR", "0.00"), (0, "JPY", "0"), (-990, "USD", "-0.99"), (-160_000, "KRW", "-160"),
                      (5, "BHD", "0.005"), (1_000_000_000_000_000, "USD", "1000000000000.00"), (1_230, "ZZZ", "1.23"),
                      (1_000_000_000_000_000, "JPY", "1000000000000")] as [(Int64, String, String)])
    func printed(_ milli: Int64, _ currency: String, _ text: String) {
        #expect(Money.text(milli, currency: currency) == text)
        #expect(Money.milliunits(Substring(text)) == milli)
    }

    /// What is not a whole minor unit is rounded once, half away from zero, to one.
    @Test(arguments: [(53_333, "JPY", "53"), (53_500, "JPY", "54"), (-53_500, "JPY", "-54"), (2_495, "USD", "2.50"),
                      (2_494, "EUR", "2.49"), (-2_495, "USD", "-2.50"), (1, "USD", "0.00"), (5, "USD", "0.01"),
                      (499, "KRW", "0"), (500, "KRW", "1"), (1_234, "KWD", "1.234")] as [(Int64, String, String)])
    func rounded(_ milli: Int64, _ currency: String, _ text: String) {
        #expect(Money.text(milli, currency: currency) == text)
        #expect(Money.milliunits(Substring(Money.text(milli, currency: currency))) == Money.rounded(milli, currency: currency))
    }

    @Test func minorUnitsFollowISO4217() {
        #expect(Currencies.minorUnits("JPY") == 0 && Currencies.minorUnits("KRW") == 0 && Currencies.minorUnits("VND") == 0)
        #expect(Currencies.minorUnits("USD") == 2 && Currencies.minorUnits("EUR") == 2 && Currencies.minorUnits("CNY") == 2)
        #expect(Currencies.minorUnits("KWD") == 3 && Currencies.minorUnits("BHD") == 3 && Currencies.minorUnits("TND") == 3)
        #expect(Currencies.minorUnits("") == 2 && Currencies.minorUnits("jpy") == 2, "not a code of the table: two")
        #expect(Currencies.zeroDecimals.isDisjoint(with: Currencies.threeDecimals))
    }

    @Test(arguments: ["", "1.", ".5", "1.2345", "1,00", "abc", "1e3", "--1", "1.-5", "9999999999999999"])
    func refusedText(_ text: String) {
        #expect(Money.milliunits(Substring(text)) == nil)
    }

    @Test func scaledRoundsHalfAwayFromZero() {
        #expect(Money.scaled(1000, 1, 3) == 333)
        #expect(Money.scaled(2000, 1, 3) == 667)
        #expect(Money.scaled(5, 1, 2) == 3)
        #expect(Money.scaled(-5, 1, 2) == -3)
        #expect(Money.scaled(Int64.max, 2, 2) == Int64.max)  // no overflow in between
        #expect(Money.scaled(10, 1, 0) == 0)
    }

    @Test func applePriceWinsAndIsProratedByUnits() {
        let both = PriceFacts(apple: Money(milliunits: 480_000, currency: "JPY"), listUnit: Money(milliunits: 990, currency: "USD"))
        #expect(both.amount(units: 1, transactionQuantity: 3) == Money(milliunits: 160_000, currency: "JPY"))
        let list = PriceFacts(listUnit: Money(milliunits: 990, currency: "USD"))
        #expect(list.amount(units: 2, transactionQuantity: 3) == Money(milliunits: 1980, currency: "USD"))
        // Prorated once, straight to the minor unit: 160 yen for 3 units, 1 of them: 53 yen, not 53.333.
        let yen = PriceFacts(apple: Money(milliunits: 160_000, currency: "JPY"))
        #expect(yen.amount(units: 1, transactionQuantity: 3) == Money(milliunits: 53_000, currency: "JPY"))
        #expect(yen.amount(units: 2, transactionQuantity: 3) == Money(milliunits: 107_000, currency: "JPY"))
        let dollars = PriceFacts(apple: Money(milliunits: 9_990, currency: "USD"))
        #expect(dollars.amount(units: 1, transactionQuantity: 4) == Money(milliunits: 2_500, currency: "USD"), "2.4975 → 2.50")
        #expect(PriceFacts().amount(units: 1, transactionQuantity: 1) == nil)
    }
}

@Suite("Server API rules")
struct ServerAPIRulesTests {
    func learned(_ t: AppleTransaction, user: String?, source: TransactionSource = .notification,
                 price: PriceFacts = PriceFacts(apple: Money(milliunits: 1090, currency: "EUR")),
                 familyRevoked: EpochMillis? = nil, exact: OrderRef? = nil) -> KnownTransaction {
        KnownTransaction(transaction: t, productType: .consumable, receiptID: nil, userID: user, exactOrder: exact,
                         source: source, price: price, familyRevokedDate: familyRevoked, storefront: "DEU")
    }

    @Test func aPurchaseNoUploadShowedIsCompensatedWithItsSourceAndAmount() throws {
        let t = apple("t1", quantity: 2)
        let o = OrderRef(orderID: "6f1c…", userID: "u9", productID: "gems", createdAt: t.purchaseDate - minute)
        let d = decide([learned(t, user: "u9", price: PriceFacts(apple: Money(milliunits: 2180, currency: "EUR")), exact: o)],
                       [facts(grant("g1", tx: "t1", quantity: 1))])
        let c = try #require(d.compensations.first)
        #expect(c.receiptID == nil && c.owed == 1 && c.reason == .partiallyGranted)
        #expect(c.amount == Money(milliunits: 1090, currency: "EUR"))
        let row = Decide.matchOrders([c], openOrders: [])[0]
        #expect(row.cells[11] == "" && row.cells[12] == "1.09" && row.cells[13] == "EUR" && row.cells[14] == "notification")
        #expect(row.match == .exact)
        #expect(d.unattributed.isEmpty)
    }

    @Test func noUserMeansUnattributedNeverCompensated() throws {
        let d = decide([learned(apple("t1"), user: nil)])
        #expect(d.compensations.isEmpty)
        let u = try #require(d.unattributed.first)
        #expect(u.cells == ["t1", "gems", UTC.timestamp(asOf - 2 * day), "1.09", "EUR", "DEU"])
        #expect(u.findingKey == "unattributed|t1")
    }

    @Test func unattributedOnlyForServerAPIPurchasesInTheWindowInProduction() {
        #expect(decide([learned(apple("t1"), user: nil, source: .receipt)]).unattributed.isEmpty)
        #expect(decide([learned(apple("t1", at: asOf - 40 * day), user: nil)]).unattributed.isEmpty)
        #expect(decide([learned(apple("t1", env: .sandbox), user: nil)]).unattributed.isEmpty)
        #expect(decide([learned(apple("t1", cancelled: asOf - day), user: nil)]).unattributed.isEmpty)
        #expect(decide([learned(apple("t1"), user: nil, familyRevoked: asOf - day)]).unattributed.isEmpty)
        #expect(decide([learned(apple("t1"), user: nil, source: .transactionHistory)]).unattributed.count == 1)
    }

    @Test func familyRevokeIsClawedBackWithoutMoneyReturnedAndNeverCompensated() throws {
        let revoked = asOf - day
        let d = decide([learned(apple("t1"), user: "u1", familyRevoked: revoked)], [facts(grant("g1", tx: "t1"))])
        let row = try #require(d.clawbacks.first)
        #expect(row.reason == .familyRevoked && row.cancellationDate == revoked && row.cancellationReason == nil)
        #expect(row.amount == Money(milliunits: 1090, currency: "EUR"))
        #expect(decide([learned(apple("t1"), user: "u1", familyRevoked: revoked)]).compensations.isEmpty)
    }

    @Test func aRefundBeatsAFamilyRevoke() throws {
        let d = decide([learned(apple("t1", cancelled: asOf - day), user: "u1", familyRevoked: asOf - day)],
                       [facts(grant("g1", tx: "t1"))])
        #expect(try #require(d.clawbacks.first).reason == .refunded)
    }

    @Test func clawbackAmountUsesTheListPriceWhenAppleSignedNone() throws {
        var g = facts(grant("g1", tx: "t9", quantity: 3), links: ReceiptLinks(linked: 1, rejectedInvalid: 1))
        g.listUnitPrice = Money(milliunits: 990, currency: "USD")
        let row = try #require(decide([], [g]).clawbacks.first)
        #expect(row.reason == .invalidReceipt)
        #expect(row.cells.suffix(2) == ["2.97", "USD"])
    }
}
