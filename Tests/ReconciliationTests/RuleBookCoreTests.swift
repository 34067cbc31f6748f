// The rule book's decisions that the night's SQL also takes: refunds and
// reversals, the windows, whose purchase, why a finding closed, and the quiet-family predicate,
// as the core takes them. IntegrationTests/RuleBookTests compares the SQL with these.

import Testing

@testable import Reconciliation
import RuleOracles

@Suite("The rule book's core: refunds, windows, owners, closings, quiet families")
struct RuleBookCoreTests {
    @Test("a refund stands until a reversal on or after it; a family revocation is apart and never a refund")
    func revocations() {
        let refunded = Revocation(cancellationDate: asOf - day, cancellationReason: "1")
        #expect(refunded.isRevoked && !refunded.isReversed && refunded.standingCancellation == asOf - day)
        #expect(refunded.refundDate == asOf - day && refunded.standingFamilyRevocation == nil)
        var reversed = refunded
        reversed.reversedDate = asOf - day  // the same instant counts
        #expect(reversed.isReversed && reversed.standingCancellation == nil && reversed.isRevoked)
        reversed.reversedDate = asOf - day - 1  // a reversal before the refund reverses nothing
        #expect(!reversed.isReversed)
        let family = Revocation(revocationDate: asOf - 2 * day, revocationType: "FAMILY_REVOKE")
        #expect(family.refundDate == nil && family.standingFamilyRevocation == asOf - 2 * day && family.standingCancellation == nil)
        let signed = Revocation(revocationDate: asOf - 3 * day, revocationType: "REFUND_PRORATED")
        #expect(signed.refundDate == asOf - 3 * day && signed.revokedAt == asOf - 3 * day)
        // The rules see what stands.
        let known = KnownTransaction(transaction: apple("t1"), productType: .consumable, receiptID: nil, userID: "u1",
                                     exactOrder: nil).learned(Revocation(cancellationDate: asOf - day, cancellationReason: "0",
                                                                         reversedDate: asOf))
        #expect(known.transaction.cancellationDate == nil && known.transaction.cancellationReason == nil
                && known.revocation.isRevoked)
    }

    @Test("refunds.csv: production refunds whose refund or reversal is in the window; the state in its order")
    func refunds() {
        let s = DecisionSettings(asOf: asOf, windowDays: 30, refundWindowDays: 90)
        #expect(s.refundWindowStart == asOf - 90 * day && s.windowStart == asOf - 30 * day)
        #expect(Refunds.isListed(Revocation(cancellationDate: asOf - 90 * day), environment: .production, settings: s))
        #expect(!Refunds.isListed(Revocation(cancellationDate: asOf - 90 * day - 1), environment: .production, settings: s))
        #expect(Refunds.isListed(Revocation(cancellationDate: asOf - 100 * day, reversedDate: asOf - day), environment: .production, settings: s))
        #expect(!Refunds.isListed(Revocation(cancellationDate: asOf - day), environment: .sandbox, settings: s))
        #expect(!Refunds.isListed(Revocation(revocationDate: asOf - day, revocationType: "FAMILY_REVOKE"), environment: .production, settings: s))
        let r = Revocation(cancellationDate: asOf - day)
        #expect(Refunds.state(r, grants: 0, activeGrants: 0) == .neverGranted)
        #expect(Refunds.state(r, grants: 2, activeGrants: 0) == .clawedBack)
        #expect(Refunds.state(r, grants: 2, activeGrants: 1) == .stillGranted)
        #expect(Refunds.state(Revocation(cancellationDate: asOf - day, reversedDate: asOf), grants: 1, activeGrants: 1) == .reversed)
    }

    @Test("whose purchase: receipt, then token order, then history, then the family's earliest upload, else its earliest grant")
    func owners() {
        #expect(Owner.of(receiptUploader: "r", tokenOrderUser: "t", historyUser: "h", familyUser: "f") == "r")
        #expect(Owner.of(receiptUploader: nil, tokenOrderUser: "t", historyUser: "h", familyUser: "f") == "t")
        #expect(Owner.of(receiptUploader: nil, tokenOrderUser: nil, historyUser: "h", familyUser: "f") == "h")
        #expect(Owner.of(receiptUploader: nil, tokenOrderUser: nil, historyUser: nil, familyUser: "f") == "f")
        #expect(Owner.of(receiptUploader: nil, tokenOrderUser: nil, historyUser: nil, familyUser: nil) == nil)
        let grantFirst = Owner.Claim(userID: "g", isUpload: false, at: 1, id: "G1")
        let upload = Owner.Claim(userID: "u", isUpload: true, at: 9, id: "R9")
        #expect(Owner.familyUser([grantFirst, upload]) == "u")  // any upload before any grant
        #expect(Owner.familyUser([Owner.Claim(userID: "b", isUpload: true, at: 5, id: "Rb"),
                                  Owner.Claim(userID: "a", isUpload: true, at: 5, id: "RB")]) == "a")  // byte order: B < b
        #expect(Owner.familyUser([]) == nil)
    }

    @Test("closed_because per report, the first reason that fits")
    func closings() {
        let s = standardSettings
        let old = [(purchaseDate: asOf - 31 * day, revocation: Revocation())]
        #expect(Closing.reason(report: .compensate, Closing.Facts(apple: old, grantedNow: true), settings: s) == .outOfWindow)
        #expect(Closing.reason(report: .unattributed, Closing.Facts(apple: [(asOf - day, Revocation())], grantedNow: true), settings: s) == .granted)
        #expect(Closing.reason(report: .compensate, Closing.Facts(), settings: s) == .inputChanged)
        #expect(Closing.reason(report: .duplicateGrants, Closing.Facts(grantRevoked: true), settings: s) == .revoked)
        #expect(Closing.reason(report: .clawback, Closing.Facts(grantRevoked: true, grantRefundReversed: true), settings: s) == .revoked)
        #expect(Closing.reason(report: .clawback, Closing.Facts(grantRefundReversed: true), settings: s) == .refundReversed)
        let gone = [(purchaseDate: asOf - 200 * day, revocation: Revocation(cancellationDate: asOf - 91 * day))]
        #expect(Closing.reason(report: .refunds, Closing.Facts(apple: gone), settings: s) == .outOfWindow)
        let back = [(purchaseDate: asOf - 200 * day, revocation: Revocation(cancellationDate: asOf - 91 * day, reversedDate: asOf - day))]
        #expect(Closing.reason(report: .refunds, Closing.Facts(apple: back), settings: s) == .inputChanged)
    }

    @Test("a quiet family: one standing production transaction and one active grant of it that covers it")
    func quiet() {
        let t = apple("t1", quantity: 2)
        func family(_ k: KnownTransaction, _ g: [GrantFacts]) -> Family { Family(key: "t1", transactions: [k], grants: g) }
        let covering = facts(grant("g1", tx: "t1", quantity: 2))
        #expect(Decide.isQuiet(family(known(t), [covering])))
        #expect(!Decide.isQuiet(family(known(t), [facts(grant("g1", tx: "t1", quantity: 1))])))  // partly granted
        #expect(!Decide.isQuiet(family(known(t), [facts(grant("g1", tx: "t1", quantity: 2, revoked: asOf))])))
        #expect(!Decide.isQuiet(family(known(t), [facts(grant("g1", tx: "t0", quantity: 2))])))
        #expect(!Decide.isQuiet(family(known(apple("t1", quantity: 2, env: .sandbox)), [covering])))
        #expect(!Decide.isQuiet(family(known(t).learned(Revocation(cancellationDate: asOf - day, reversedDate: asOf)), [covering])))
        #expect(!Decide.isQuiet(family(known(t), [covering, facts(grant("g2", tx: "t1"))])))
        #expect(!Decide.isQuiet(Family(key: "t1", transactions: [known(t), known(apple("t1", quantity: 2, env: .sandbox))],
                                       grants: [covering])))
    }
}
