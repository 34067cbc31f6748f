// The report rows the job must write for each scenario (docs/rules.md, Server API transactions included).
// A scenario records what it built; the rows are rendered once the user's data is final, because
// a StoreKit 2 client turns receipts into signed uploads afterwards, and that changes how the job
// learns a transaction (`source`) and which storefront's price it was bought at.

import AppStoreSimulator
import Reconciliation

/// The expected files and their columns, as the job writes them.
enum ExpectedReport: String, CaseIterable {
    case compensate = "compensate.csv"
    case duplicateGrants = "duplicate_grants.csv"
    case clawback = "clawback.csv"
    case inputErrors = "input_errors.csv"
    case refunds = "refunds.csv"
    case unattributed = "unattributed.csv"

    var columns: [String] {
        switch self {
        case .compensate:
            return [
                "order_id", "user_id", "product_id", "product_type", "quantity", "transaction_id",
                "original_transaction_id", "purchase_date", "environment", "match", "reason", "receipt_id",
                "first_seen", "amount", "currency", "source", "proceeds", "proceeds_currency",
            ]
        case .duplicateGrants: return ReportFile.duplicateGrants.columns
        case .clawback:
            return [
                "grant_id", "user_id", "order_id", "product_id", "product_type", "quantity", "transaction_id",
                "original_transaction_id", "granted_at", "reason", "cancellation_date", "cancellation_reason",
                "first_seen", "amount", "currency", "proceeds", "proceeds_currency",
            ]
        case .inputErrors: return ReportFile.inputErrors.columns
        case .refunds:
            return [
                "transaction_id", "original_transaction_id", "user_id", "product_id", "product_type",
                "revocation_date", "revocation_reason", "revocation_type", "revocation_percentage", "amount",
                "refunded_amount", "currency", "state", "grant_ids", "first_seen", "proceeds", "proceeds_currency",
            ]
        case .unattributed:
            return ["transaction_id", "product_id", "purchase_date", "amount", "currency", "storefront", "first_seen"]
        }
    }
}

/// How the job learns a purchase no upload shows (compensate.csv `source`); uploads make it
/// `receipt` or `signed_transaction`, whichever is more direct.
enum APISource: String {
    case transactionHistory = "transaction_history"
    case notification
}

struct PendingCompensation {
    var order: String?
    var user: Int
    var tx: SimTransaction
    var owed: Int
    var match: String
    var reason: String
    /// Empty when no verified receipt contains the transaction.
    var receipt: String
    /// How the job learns it when no upload shows it.
    var apiSource: APISource?
}

struct PendingClawback {
    var grant: GrantRow
    var reason: String
    var refund: SimRefund?
    /// The grant's transaction is one Apple has (price: Apple's, at its storefront); false for a
    /// grant whose payment never existed or was never believed (rejected, another app's, not
    /// found): the list price of the granted product.
    var applePaid: Bool
}

struct PendingRefund {
    var tx: SimTransaction
    var user: Int
    var refund: SimRefund
    /// `revocation_type` as the job learns it: from a notification, or empty (verifyReceipt only).
    var revocationType: String
    var state: String
    var grants: [GrantRow]
}

struct PendingFindings {
    var compensate: [PendingCompensation] = []
    var clawback: [PendingClawback] = []
    var refunds: [PendingRefund] = []
    var unattributed: [SimTransaction] = []
}

extension ScenarioBuilder {
    mutating func expectCompensate(
        order: String?, user: Int, _ t: SimTransaction, owed: Int, match: String,
        reason: String, receipt: String, apiSource: APISource? = nil
    ) {
        data.pending.compensate.append(
            PendingCompensation(
                order: order, user: user, tx: t, owed: owed, match: match,
                reason: reason, receipt: receipt, apiSource: apiSource))
    }

    mutating func expectDuplicate(_ g: GrantRow, kind: String, kept: GrantRow) {
        data.duplicates.append([
            g.grantID, g.userID ?? "", g.orderID ?? "", g.productID, cat.type(of: g.productID).rawValue, g.transactionID,
            g.originalTransactionID ?? "", kind, kept.grantID, UTC.timestamp(g.grantedAt), settings.firstSeen,
        ])
    }

    mutating func expectClawback(_ g: GrantRow, reason: String, refund: SimRefund? = nil) {
        let unpaid: Set<String> = ["invalid_receipt", "wrong_bundle", "transaction_not_found"]
        data.pending.clawback.append(
            PendingClawback(
                grant: g, reason: reason, refund: refund,
                applePaid: !unpaid.contains(reason)))
    }

    mutating func expectRefund(
        _ t: SimTransaction, user: Int, _ refund: SimRefund, revocationType: String, state: String,
        grants: [GrantRow]
    ) {
        data.pending.refunds.append(
            PendingRefund(
                tx: t, user: user, refund: refund, revocationType: revocationType,
                state: state, grants: grants))
    }

    mutating func expectUnattributed(_ t: SimTransaction) { data.pending.unattributed.append(t) }

    // MARK: - Rendering

    /// Renders the pending findings into report rows (once, after the last change to the data).
    mutating func finish() {
        let p = data.pending
        data.pending = PendingFindings()
        for c in p.compensate {
            let t = c.tx
            let (amount, currency) = money(t.tid, t.pid, units: c.owed)
            data.compensate.append([
                c.order ?? "", IDs.user(c.user), t.pid, t.type, String(c.owed), t.tid, t.otid, UTC.timestamp(t.pd),
                "production", c.match, c.reason, c.receipt, settings.firstSeen, amount, currency,
                source(of: t.tid, else: c.apiSource),
            ])
        }
        for c in p.clawback {
            let g = c.grant
            let (amount, currency) =
                c.applePaid
                ? money(g.transactionID, g.productID, units: g.quantity)
                : listMoney(g.productID, units: g.quantity)
            data.clawback.append([
                g.grantID, g.userID ?? "", g.orderID ?? "", g.productID, cat.type(of: g.productID).rawValue,
                String(g.quantity), g.transactionID, g.originalTransactionID ?? "", UTC.timestamp(g.grantedAt), c.reason,
                c.refund.map { UTC.timestamp($0.cancellationDateMs) } ?? "", c.refund?.reason ?? "", settings.firstSeen,
                amount, currency,
            ])
        }
        for r in p.refunds {
            let t = r.tx
            let store = data.storefront(of: t.tid)
            let amount = (PriceList.unit(t.pid, at: store) ?? 0) * Int64(t.qty)
            let refunded = r.refund.percentage.map { MoneyText.prorated(amount, Int64($0), 100_000, currency: store.currency) } ?? amount
            data.refundRows.append([
                t.tid, t.otid, IDs.user(r.user), t.pid, t.type, UTC.timestamp(r.refund.cancellationDateMs),
                r.refund.reason, r.revocationType, r.refund.percentage.map { String($0) } ?? "",
                MoneyText.text(amount, currency: store.currency), MoneyText.text(refunded, currency: store.currency), store.currency,
                r.state,
                r.grants.map(\.grantID).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
                    .joined(separator: " "),
                settings.firstSeen,
            ])
        }
        for t in p.unattributed {
            let store = data.storefront(of: t.tid)
            let (amount, currency) = money(t.tid, t.pid, units: t.qty)
            data.unattributed.append([t.tid, t.pid, UTC.timestamp(t.pd), amount, currency, store.code, settings.firstSeen])
        }
    }

    /// `units` of a transaction at its storefront's price (Apple's price per unit; in the USA
    /// storefront also the list price).
    private func money(_ tid: String, _ product: String, units: Int) -> (String, String) {
        let store = data.storefront(of: tid)
        guard let unit = PriceList.unit(product, at: store) else { return ("", "") }
        return (MoneyText.text(unit * Int64(units), currency: store.currency), store.currency)
    }

    private func listMoney(_ product: String, units: Int) -> (String, String) {
        guard let unit = PriceList.list(product) else { return ("", "") }
        return (MoneyText.text(unit * Int64(units), currency: PriceList.listCurrency), PriceList.listCurrency)
    }

    /// The most direct way the job learns the transaction: a receipt Apple answers with data, else
    /// a genuine signed upload, else what the scenario says the Server API shows.
    private func source(of tid: String, else apiSource: APISource?) -> String {
        var signed = false
        for r in data.receipts {
            guard let sim = r.sim, sim.st == nil || sim.st == 0 || sim.st == 21006,
                sim.txs.contains(where: { $0.tid == tid })
            else { continue }
            switch r.signed {
            case nil: return "receipt"
            case .genuine?: signed = true
            case .tampered?, .unknownRoot?: break
            }
        }
        return signed ? "signed_transaction" : apiSource?.rawValue ?? "receipt"
    }
}
