// `iap-sim seed --apple-truth FILE`: what Apple knows about every scenario, for the simulated App
// Store Server API (`iap-sim serve --apple-truth FILE`). The truth is the receipts' transactions,
// so verifyReceipt and the Server API tell the same story, plus what only the Server API shows
// (purchases never uploaded, refunds only notifications tell).

import AppStoreSimulator
import Foundation
import Reconciliation

enum AppleTruthWriter {
    /// Streams the truth of every user of `plan` to `path`, consumption requests marked
    /// (ConsumptionRequests.swift), then the purchases the shop never saw (UnseenPurchases.swift);
    /// returns the number of transactions, and of those unseen.
    /// `refundsServed`: the refund list's refunds are written too (without it the refund
    /// scenarios expect no clawback, so Apple must not show a refund either); refunds only the
    /// Server API shows are always written.
    static func write(plan: ScenarioPlan, refundsServed: Bool, to path: String) throws -> (all: Int, unseen: Int) {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let out = FileHandle(forWritingAtPath: path)
        else {
            throw SimulatorError(message: "cannot write \(path)")
        }
        defer { try? out.close() }
        var buffer = "# iap-sim apple truth: one Apple transaction per line\n" + AppleTruthFile.header
        var count = 0
        var sold = 0
        func flush() throws {
            do {
                try out.write(contentsOf: Data(buffer.utf8))
            } catch {
                throw SimulatorError(message: "cannot write \(path): \(error.localizedDescription)")
            }
            buffer = ""
        }
        try plan.forEach { d in
            var truth = rows(d, refundsServed: refundsServed)
            ConsumptionRequests.mark(&truth, d, settings: plan.settings)
            for row in truth {
                buffer += AppleTruthFile.line(row)
                count += 1
                if row.environment == .production { sold += 1 }
            }
            if buffer.utf8.count >= 1 << 20 { try flush() }
        }
        // After everyone else's, so that the rest of the file is the same with or without them.
        let unseen = UnseenPurchases.rows(share: plan.settings.unseenShare, sold: sold, settings: plan.settings)
        for row in unseen { buffer += AppleTruthFile.line(row) }
        try flush()
        return (count + unseen.count, unseen.count)
    }

    /// The Apple transactions of one scenario: every transaction of a receipt Apple would answer
    /// with data (no forced status, or 21006), once, as first shown, with its uploader as the
    /// customer; then the transactions only the Server API shows. Receipts Apple rejects (21003,
    /// 21010, 211xx), uploads that are no receipt, and forged signed uploads (tampered, another
    /// root: their transaction was never paid) hold no transaction Apple knows. Refunds: the
    /// refund list's when it is served, and always those only the Server API shows. Every
    /// transaction is priced at its storefront (`UserData.storefronts`).
    static func rows(_ d: UserData, refundsServed: Bool) -> [AppleTruthRow] {
        var seen = Set<String>()
        var out: [AppleTruthRow] = []
        var refunds = d.appleRefunds
        if refundsServed {
            for r in d.refunds where refunds[r.transactionID] == nil { refunds[r.transactionID] = r.refund }
        }
        func priced(_ row: AppleTruthRow) -> AppleTruthRow {
            var r = row
            r.storefront = d.storefront(of: r.transactionID)
            r.price = PriceList.unit(r.productID, at: r.storefront).map { $0 * Int64(r.quantity) }
            r.currency = r.price == nil ? nil : r.storefront.currency
            if r.refund == nil { r.refund = refunds[r.transactionID] }
            return r
        }
        for r in d.receipts {
            guard let sim = r.sim, sim.st == nil || sim.st == 0 || sim.st == 21006,
                r.signed != .tampered && r.signed != .unknownRoot, let env = sim.environment
            else { continue }
            for t in sim.txs where seen.insert(t.tid).inserted {
                out.append(
                    priced(
                        AppleTruthRow(
                            transactionID: t.tid, originalTransactionID: t.otid, productID: t.pid,
                            productType: ProductType(rawValue: t.type) ?? .consumable, quantity: t.qty, purchaseDateMs: t.pd,
                            originalPurchaseDateMs: t.opd, expiresDateMs: t.exp, webOrderLineItemID: t.wol, environment: env,
                            bundleID: sim.bundle, customer: r.userID ?? "anonymous-" + r.receiptID,
                            appAccountToken: r.orderID.flatMap { isUUID($0) ? $0.lowercased() : nil },
                            receiptID: r.receiptID)))
            }
        }
        for row in d.appleOnly where seen.insert(row.transactionID).inserted { out.append(priced(row)) }
        return out
    }

    /// An order id the app could have set as `appAccountToken` (Apple takes only UUIDs).
    static func isUUID(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.count == 36 else { return false }
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if c != UInt8(ascii: "-") { return false }
            } else if !((c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)) {
                return false
            }
        }
        return true
    }
}
