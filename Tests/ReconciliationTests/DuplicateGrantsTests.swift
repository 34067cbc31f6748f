// Contract §4 duplicate_grants: same_transaction, restore_as_purchase, cross_account, their
// precedence, the kept grant, and which grants take part at all.

import Testing

@testable import Reconciliation

/// What a duplicate row should say: grant, kind, kept grant.
struct Dup: Equatable, Sendable, CustomStringConvertible {
    var grant: String
    var kind: DuplicateKind
    var kept: String
    init(_ grant: String, _ kind: DuplicateKind, kept: String) { (self.grant, self.kind, self.kept) = (grant, kind, kept) }
    var description: String { "\(grant) \(kind.rawValue) (kept \(kept))" }
}

struct DuplicateCase: NamedCase {
    var name: String
    var transactions: [KnownTransaction] = []
    var grants: [GrantFacts]
    /// In grant order (granted_at, grant_id).
    var expected: [Dup]
}

/// Apple transactions outside the compensation window, so these cases test duplicates alone.
func old(_ id: String, original: String? = nil, quantity: Int = 1, webOrder: String? = nil,
         env: AppStoreEnvironment = .production, cancelled: EpochMillis? = nil) -> AppleTransaction {
    apple(id, original: original, quantity: quantity, at: asOf - 100 * day, cancelled: cancelled, webOrder: webOrder,
          env: env)
}

let t0 = asOf - 90 * day

@Suite("duplicate_grants")
struct DuplicateGrantsTests {
    static let sameTransactionCases: [DuplicateCase] = [
        .init(name: "same_transaction: a second grant of a one-unit transaction",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0)), facts(grant("g2", tx: "t1", at: t0 + hour))],
              expected: [Dup("g2", .sameTransaction, kept: "g1")]),
        .init(name: "grants within the quantity are all kept",
              transactions: [known(old("t1", quantity: 2))],
              grants: [facts(grant("g1", tx: "t1", at: t0)), facts(grant("g2", tx: "t1", at: t0 + hour))],
              expected: []),
        .init(name: "beyond quantity: the third one-unit grant of a two-unit transaction",
              transactions: [known(old("t1", quantity: 2))],
              grants: [facts(grant("g1", tx: "t1", at: t0)), facts(grant("g2", tx: "t1", at: t0 + hour)),
                       facts(grant("g3", tx: "t1", at: t0 + 2 * hour))],
              expected: [Dup("g3", .sameTransaction, kept: "g1")]),
        .init(name: "once over the quantity, every later grant is a duplicate",
              transactions: [known(old("t1", quantity: 3))],
              grants: [facts(grant("g1", tx: "t1", at: t0)), facts(grant("g2", tx: "t1", quantity: 3, at: t0 + hour)),
                       facts(grant("g3", tx: "t1", at: t0 + 2 * hour))],
              expected: [Dup("g2", .sameTransaction, kept: "g1"), Dup("g3", .sameTransaction, kept: "g1")]),
        .init(name: "the kept grant is the earliest by granted_at, whatever the grant_id",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0 + hour)), facts(grant("g2", tx: "t1", at: t0))],
              expected: [Dup("g1", .sameTransaction, kept: "g2")]),
        .init(name: "same granted_at: the lower grant_id is kept",
              transactions: [known(old("t1"))],
              grants: [facts(grant("gB", tx: "t1", at: t0)), facts(grant("gA", tx: "t1", at: t0))],
              expected: [Dup("gB", .sameTransaction, kept: "gA")]),
        .init(name: "Apple never showed it: the first grant's quantity is the limit",
              grants: [facts(grant("g1", tx: "t1", quantity: 2, at: t0)),
                       facts(grant("g2", tx: "t1", at: t0 + hour))],
              expected: [Dup("g2", .sameTransaction, kept: "g1")]),
        .init(name: "Apple never showed it: a 2-unit order delivered as two grants of 1 is no duplicate",
              grants: [facts(grant("g1", tx: "t1", at: t0), linkedOrder: 2),
                       facts(grant("g2", tx: "t1", at: t0 + hour), linkedOrder: 2)],
              expected: []),
        .init(name: "Apple never showed it: a third unit beyond the 2-unit order is a duplicate",
              grants: [facts(grant("g1", tx: "t1", at: t0), linkedOrder: 2),
                       facts(grant("g2", tx: "t1", at: t0 + hour), linkedOrder: 2),
                       facts(grant("g3", tx: "t1", at: t0 + 2 * hour), linkedOrder: 2)],
              expected: [Dup("g3", .sameTransaction, kept: "g1")]),
        .init(name: "Apple's quantity wins over the linked order's",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0), linkedOrder: 2),
                       facts(grant("g2", tx: "t1", at: t0 + hour), linkedOrder: 2)],
              expected: [Dup("g2", .sameTransaction, kept: "g1")]),
        .init(name: "a first grant larger than the quantity is still kept",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", quantity: 5, at: t0))], expected: []),
        .init(name: "revoked grants never appear and are never kept",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0, revoked: t0 + day)),
                       facts(grant("g2", tx: "t1", at: t0 + hour)), facts(grant("g3", tx: "t1", at: t0 + 2 * hour))],
              expected: [Dup("g3", .sameTransaction, kept: "g2")]),
        .init(name: "a revoked second grant is not a duplicate",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0)),
                       facts(grant("g2", tx: "t1", at: t0 + hour, revoked: t0 + day))],
              expected: []),
        .init(name: "consumables: two transactions of one original are two purchases",
              transactions: [known(old("t1")), known(old("t2", original: "t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0)), facts(grant("g2", tx: "t2", at: t0 + hour))],
              expected: []),
    ]

    @Test(arguments: sameTransactionCases)
    func sameTransaction(_ c: DuplicateCase) { check(c) }

    static let restoreAsPurchaseCases: [DuplicateCase] = [
        .init(name: "non_consumable: a new transaction of the same original granted again to the user",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .nonConsumable)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1")]),
        .init(name: "non_consumable: the grant row's original when Apple never showed the transaction",
              transactions: [known(old("t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t2", original: "t1", at: t0 + hour), .nonConsumable)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1")]),
        .init(name: "non_consumable: an earlier grant kept only because it is earlier (restore points back)",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g2", tx: "t2", at: t0), .nonConsumable),
                       facts(grant("g1", tx: "t1", at: t0 + hour), .nonConsumable)],
              expected: [Dup("g1", .restoreAsPurchase, kept: "g2")]),
        .init(name: "non_consumable: a revoked earlier grant makes no restore",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", at: t0, revoked: t0 + day), .nonConsumable),
                       facts(grant("g2", tx: "t2", at: t0 + 2 * day), .nonConsumable)],
              expected: []),
        .init(name: "non_renewing: transaction ≠ original, original granted to the user",
              transactions: [known(old("t1"), .nonRenewing), known(old("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonRenewing),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .nonRenewing)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1")]),
        .init(name: "non_renewing: the original's grant counts even when made later",
              transactions: [known(old("t1"), .nonRenewing), known(old("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g2", tx: "t2", at: t0), .nonRenewing),
                       facts(grant("g1", tx: "t1", at: t0 + hour), .nonRenewing)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1")]),
        .init(name: "non_renewing: the grant row's original when Apple never showed the transaction",
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonRenewing),
                       facts(grant("g2", tx: "t2", original: "t1", at: t0 + hour), .nonRenewing)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1")]),
        .init(name: "non_renewing: two renewals of an ungranted original are two purchases",
              transactions: [known(old("t2", original: "t1"), .nonRenewing), known(old("t3", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g2", tx: "t2", at: t0), .nonRenewing),
                       facts(grant("g3", tx: "t3", at: t0 + hour), .nonRenewing)],
              expected: []),
        .init(name: "non_renewing: the original granted to another user is no restore (and not cross_account)",
              transactions: [known(old("t1"), .nonRenewing), known(old("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1", user: "u2", at: t0), .nonRenewing),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .nonRenewing)],
              expected: []),
        .init(name: "auto_renewable: same web_order_line_item_id granted again to the user",
              transactions: [known(old("t1", webOrder: "w1"), .autoRenewable),
                             known(old("t2", original: "t1", webOrder: "w1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .autoRenewable),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .autoRenewable)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1")]),
        .init(name: "auto_renewable: renewals (new web_order_line_item_id) are not restores",
              transactions: [known(old("t1", webOrder: "w1"), .autoRenewable),
                             known(old("t2", original: "t1", webOrder: "w2"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .autoRenewable),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .autoRenewable)],
              expected: []),
        .init(name: "auto_renewable: the same period to another user is cross_account, not restore_as_purchase",
              transactions: [known(old("t1", webOrder: "w1"), .autoRenewable),
                             known(old("t2", original: "t1", webOrder: "w1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .autoRenewable),
                       facts(grant("g2", tx: "t2", user: "u2", at: t0 + hour), .autoRenewable)],
              expected: [Dup("g2", .crossAccount, kept: "g1")]),
        .init(name: "non_consumable: two grants within a two-unit transaction are not restores of each other",
              transactions: [known(old("t1", quantity: 2), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t1", at: t0 + hour), .nonConsumable)],
              expected: []),
        .init(name: "non_renewing: two grants within a two-unit original are not restores",
              transactions: [known(old("t1", quantity: 2), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonRenewing),
                       facts(grant("g2", tx: "t1", at: t0 + hour), .nonRenewing)],
              expected: []),
        .init(name: "auto_renewable: two grants within a two-unit transaction are not restores",
              transactions: [known(old("t1", quantity: 2, webOrder: "w1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .autoRenewable),
                       facts(grant("g2", tx: "t1", at: t0 + hour), .autoRenewable)],
              expected: []),
        .init(name: "a same_transaction duplicate is not a kept grant to restore against",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u2", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t1", user: "u1", at: t0 + hour), .nonConsumable),
                       facts(grant("g3", tx: "t2", user: "u1", at: t0 + 2 * hour), .nonConsumable)],
              expected: [Dup("g2", .sameTransaction, kept: "g1"), Dup("g3", .crossAccount, kept: "g1")]),
    ]

    @Test(arguments: restoreAsPurchaseCases)
    func restoreAsPurchase(_ c: DuplicateCase) { check(c) }

    static let crossAccountCases: [DuplicateCase] = [
        .init(name: "cross_account: a non_consumable on two accounts; the earliest user keeps it",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t2", user: "u2", at: t0 + hour), .nonConsumable)],
              expected: [Dup("g2", .crossAccount, kept: "g1")]),
        .init(name: "cross_account: an auto_renewable on three accounts, every other user's grant",
              transactions: [known(old("t1", webOrder: "w1"), .autoRenewable),
                             known(old("t2", original: "t1", webOrder: "w2"), .autoRenewable),
                             known(old("t3", original: "t1", webOrder: "w3"), .autoRenewable)],
              grants: [facts(grant("g2", tx: "t2", user: "u2", at: t0), .autoRenewable),
                       facts(grant("g1", tx: "t1", user: "u1", at: t0 + hour), .autoRenewable),
                       facts(grant("g3", tx: "t3", user: "u3", at: t0 + 2 * hour), .autoRenewable),
                       facts(grant("g4", tx: "t3", user: "u2", at: t0 + 3 * hour), .autoRenewable)],
              expected: [Dup("g1", .crossAccount, kept: "g2"), Dup("g3", .crossAccount, kept: "g2"),
                         Dup("g4", .sameTransaction, kept: "g3")]),
        .init(name: "no cross_account for non_renewing",
              transactions: [known(old("t1"), .nonRenewing), known(old("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0), .nonRenewing),
                       facts(grant("g2", tx: "t1", user: "u2", at: t0 + hour), .nonRenewing),
                       facts(grant("g3", tx: "t2", user: "u3", at: t0 + 2 * hour), .nonRenewing)],
              expected: [Dup("g2", .sameTransaction, kept: "g1")]),
        .init(name: "no cross_account for consumables",
              transactions: [known(old("t1"), .consumable), known(old("t2", original: "t1"), .consumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0), .consumable),
                       facts(grant("g2", tx: "t2", user: "u2", at: t0 + hour), .consumable)],
              expected: []),
        .init(name: "one user only: no cross_account",
              transactions: [known(old("t1", webOrder: "w1"), .autoRenewable),
                             known(old("t2", original: "t1", webOrder: "w2"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .autoRenewable),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .autoRenewable)],
              expected: []),
        .init(name: "a revoked first grant does not decide who keeps it",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0, revoked: t0 + day), .nonConsumable),
                       facts(grant("g2", tx: "t2", user: "u2", at: t0 + 2 * day), .nonConsumable)],
              expected: []),
    ]

    @Test(arguments: crossAccountCases)
    func crossAccount(_ c: DuplicateCase) { check(c) }

    static let precedenceCases: [DuplicateCase] = [
        .init(name: "same_transaction before restore_as_purchase",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t2", at: t0 + hour), .nonConsumable),
                       facts(grant("g3", tx: "t2", at: t0 + 2 * hour), .nonConsumable)],
              expected: [Dup("g2", .restoreAsPurchase, kept: "g1"), Dup("g3", .sameTransaction, kept: "g2")]),
        .init(name: "same_transaction before cross_account",
              transactions: [known(old("t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t1", user: "u2", at: t0 + hour), .nonConsumable)],
              expected: [Dup("g2", .sameTransaction, kept: "g1")]),
        .init(name: "restore_as_purchase before cross_account",
              transactions: [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable),
                             known(old("t3", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t2", user: "u2", at: t0 + hour), .nonConsumable),
                       facts(grant("g3", tx: "t3", user: "u2", at: t0 + 2 * hour), .nonConsumable)],
              expected: [Dup("g2", .crossAccount, kept: "g1"), Dup("g3", .restoreAsPurchase, kept: "g2")]),
    ]

    @Test(arguments: precedenceCases)
    func precedence(_ c: DuplicateCase) { check(c) }

    static let withClawbackCases: [DuplicateCase] = [
        .init(name: "grants of a refunded transaction are clawed back, not duplicated",
              transactions: [known(old("t1", cancelled: t0 + day))],
              grants: [facts(grant("g1", tx: "t1", at: t0)), facts(grant("g2", tx: "t1", at: t0 + hour))],
              expected: []),
        .init(name: "a clawed-back grant is not kept: the next grant of the family stands",
              transactions: [known(old("t1", env: .sandbox), .nonConsumable),
                             known(old("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u1", at: t0), .nonConsumable),
                       facts(grant("g2", tx: "t2", user: "u2", at: t0 + hour), .nonConsumable)],
              expected: []),
        .init(name: "grants of an unknown product are left out",
              transactions: [known(old("t1"))],
              grants: [facts(grant("g1", tx: "t1", at: t0), nil), facts(grant("g2", tx: "t1", at: t0 + hour))],
              expected: []),
    ]

    @Test(arguments: withClawbackCases)
    func withClawback(_ c: DuplicateCase) {
        check(c)
        let decision = decide(c.transactions, c.grants)
        let both = Set(decision.duplicates.map(\.grantID)).intersection(decision.clawbacks.map(\.grantID))
        #expect(both.isEmpty)
    }

    private func check(_ c: DuplicateCase) {
        let decision = decide(c.transactions, c.grants)
        #expect(decision.duplicates.map { Dup($0.grantID, $0.kind, kept: $0.keptGrantID) } == c.expected)
        #expect(decision.compensations.isEmpty)
    }

    @Test func rowCellsFollowTheDuplicateColumns() throws {
        let decision = decide(
            [known(old("t1"), .nonConsumable), known(old("t2", original: "t1"), .nonConsumable)],
            [facts(grant("g1", tx: "t1", at: t0), .nonConsumable),
             facts(grant("g2", tx: "t2", user: "u2", product: "gems", at: UTC.millis(year: 2026, month: 9, day: 1, hour: 12),
                         order: "=cmd"), .nonConsumable)])
        let row = try #require(decision.duplicates.first)
        #expect(ReportFile.duplicateGrants.columns.dropLast() == ["grant_id", "user_id", "order_id", "product_id",
            "product_type", "transaction_id", "original_transaction_id", "kind", "kept_grant_id", "granted_at"])
        #expect(row.cells == ["g2", "u2", "=cmd", "gems", "non_consumable", "t2", "t1", "cross_account", "g1",
                              "2026-09-01T12:00:00Z"])
        #expect(row.findingKey == "duplicate|g2")
        let noOrder = DuplicateGrantRow(grantID: "g", userID: "u", orderID: nil, productID: "p", productType: .consumable,
                                        transactionID: "t", originalTransactionID: nil, kind: .sameTransaction,
                                        keptGrantID: "k", grantedAt: 0)
        #expect(noOrder.cells[2] == "" && noOrder.cells[6] == "")
    }
}
