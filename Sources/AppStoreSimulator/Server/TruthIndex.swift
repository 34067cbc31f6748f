// The Apple truth as the simulated Server API looks it up (by transaction, original transaction,
// customer and order id), and Apple's signed transaction payload made from one of its rows.

import Foundation
import Reconciliation

/// The truth rows and their indexes. Immutable; refunds that change while serving (the refund
/// list) are passed to each answer instead.
public struct AppleTruth: Sendable {
    public let rows: [AppleTruthRow]
    let byTransaction: [String: Int]
    let byOriginal: [String: [Int]]
    let byCustomer: [String: [Int]]
    let byOrder: [String: [Int]]

    public init(rows: [AppleTruthRow]) {
        self.rows = rows
        var t: [String: Int] = [:], o: [String: [Int]] = [:], c: [String: [Int]] = [:], ord: [String: [Int]] = [:]
        t.reserveCapacity(rows.count)
        for (i, r) in rows.enumerated() {
            if t[r.transactionID] == nil { t[r.transactionID] = i }
            o[r.originalTransactionID, default: []].append(i)
            c[r.customer, default: []].append(i)
            ord[r.orderID, default: []].append(i)
        }
        byTransaction = t
        byOriginal = o
        byCustomer = c
        byOrder = ord
    }

    /// Reads a truth file (`AppleTruthFile`).
    public static func load(path: String) throws -> AppleTruth {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SimulatorError(message: "cannot read apple truth \(path): \(error.localizedDescription)")
        }
        return AppleTruth(rows: try AppleTruthFile.parse(text))
    }

    /// The row Get Transaction Info shows for `id` in `environment` for `bundle`: the transaction
    /// of that id, else (an original transaction id) the first transaction of that original.
    func row(forAnyID id: String, environment: AppStoreEnvironment, bundle: String) -> Int? {
        func fits(_ i: Int) -> Bool { rows[i].environment == environment && rows[i].bundleID == bundle }
        if let i = byTransaction[id], fits(i) { return i }
        return byOriginal[id]?.first(where: fits)
    }

    /// The customer's transactions in `environment` for `bundle`.
    func customerRows(of index: Int) -> [Int] {
        let r = rows[index]
        return (byCustomer[r.customer] ?? []).filter { rows[$0].environment == r.environment && rows[$0].bundleID == r.bundleID }
    }
}

/// Transaction ids in a path: Apple's are 1 to 20 digits.
enum TransactionIDForm {
    static func isWellFormed(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.count <= 20 && s.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }
}

extension AppleTruthRow {
    /// Apple's `type` of the payload.
    var appleType: String {
        switch productType {
        case .consumable: return SignedTransactionPayload.consumable
        case .nonConsumable: return SignedTransactionPayload.nonConsumable
        case .autoRenewable: return SignedTransactionPayload.autoRenewable
        case .nonRenewing: return SignedTransactionPayload.nonRenewing
        }
    }

    /// Apple's `environment` value.
    var appleEnvironment: String { environment == .production ? "Production" : "Sandbox" }

    /// The last time Apple changed the transaction (history is ordered by it): its purchase, its
    /// refund, or the refund's reversal.
    func modifiedMs(refund: SimRefund?) -> Int64 {
        max(purchaseDateMs, refund?.cancellationDateMs ?? purchaseDateMs, refund?.reversedMs ?? purchaseDateMs)
    }

    /// Apple's JWSTransactionDecodedPayload for this transaction as signed at `signedDate`, with
    /// `refund` shown as its revocation (pass nil for a reversed one: Apple then shows none).
    /// Storefront and price are the truth's, so the same transaction always costs the same.
    func payload(signedDate: Int64, refund: SimRefund?) -> SignedTransactionPayload {
        var p = SignedTransactionPayload(
            transactionId: transactionID, originalTransactionId: originalTransactionID,
            webOrderLineItemId: webOrderLineItemID, bundleId: bundleID, productId: productID,
            purchaseDate: purchaseDateMs, originalPurchaseDate: originalPurchaseDateMs, expiresDate: expiresDateMs,
            quantity: quantity, type: appleType, inAppOwnershipType: familyShared ? "FAMILY_SHARED" : "PURCHASED", signedDate: signedDate,
            environment: appleEnvironment,
            transactionReason: productType == .autoRenewable && transactionID != originalTransactionID ? "RENEWAL" : "PURCHASE",
            storefront: storefront.code, storefrontId: storefront.id, price: price, currency: currency,
            appAccountToken: appAccountToken)
        if let refund {
            p.revocationDate = refund.cancellationDateMs
            p.revocationReason = Int(refund.reason) ?? 0
            p.revocationType = refund.revocationType
            p.revocationPercentage = refund.percentage
        }
        return p
    }
}
