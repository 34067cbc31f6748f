// The scenarios the generator plays, one per user (two users for cross_account), and the
// report rows the job must write for each on its first run (docs/rules.md). The expected rows
// come from what each scenario built, not from a rule engine.

import AppStoreSimulator
import Reconciliation

/// What happens to one user. `perMille` is the chance per user slot.
public enum Scenario: String, CaseIterable, Sendable {
    case cleanConsumable = "clean_consumable"
    case cleanNonConsumable = "clean_non_consumable"
    case cleanSubscription = "clean_subscription"
    case paidNotGrantedReceiptOrder = "paid_not_granted_exact_receipt_order"
    case paidNotGrantedOrderTransaction = "paid_not_granted_exact_order_transaction"
    case paidNotGrantedEarliestReceipt = "paid_not_granted_earliest_receipt"
    case inferredSingle = "inferred_single"
    case inferredClosest = "inferred_closest"
    case inferredWindowEdge = "inferred_window_edge"
    case inferredEachOrderOnce = "inferred_each_order_once"
    case noOrder = "none_no_order"
    case partiallyGranted = "partially_granted"
    case revokedNotRefunded = "revoked_not_refunded"
    case sameTransaction = "same_transaction"
    case restoreNonConsumable = "restore_as_purchase_non_consumable"
    case restoreNonRenewing = "restore_as_purchase_non_renewing"
    case restoreAutoRenewable = "restore_as_purchase_auto_renewable"
    case restoreNotGranted = "restore_not_granted"
    case crossAccount = "cross_account"
    case refunded = "refunded"
    case refundedDuplicate = "refunded_duplicate"
    case invalidReceipt = "invalid_receipt"
    case wrongBundle = "wrong_bundle"
    case transactionNotFound = "transaction_not_found"
    case sandboxGranted = "sandbox_granted"
    case sandboxMissed = "sandbox_missed"
    case outsideWindow = "missed_outside_window"
    case renewalNotGranted = "renewal_not_granted"
    case expiredSubscription = "expired_subscription_21006"
    case malformedReceipt = "malformed_receipt_21002"
    // StoreKit 2 uploads (signed transactions); only with a PKI (`iap-sim seed --pki`), else clean.
    case signedMissed = "signed_paid_not_granted"
    case signedTampered = "signed_tampered"
    case signedOtherBundle = "signed_other_bundle"
    case signedUnknownRoot = "signed_unknown_root"
    case signedSandbox = "signed_sandbox_granted"
    // Seen only through the App Store Server API: expected rows only with
    // `--apple-truth`, the generator's sign that the job sweeps notification and transaction history.
    case notificationRefund = "notification_refund_consumable"
    case notificationRefundProrated = "notification_refund_prorated"
    case refundReversed = "refund_reversed"
    case historyOnlyPurchase = "history_only_purchase"
    case notificationPurchaseToken = "notification_purchase_account_token"
    case notificationPurchaseUnattributed = "notification_purchase_unattributed"
    /// `iap-sim seed --api-bench N` only (never drawn): a verified purchase refunded in the
    /// notification history and a later open order, so the night asks one customer's history.
    case apiBench = "api_bench"

    /// Chance per user slot, in thousandths (they add up to 1000).
    public var perMille: Int {
        switch self {
        case .cleanConsumable: return 594
        case .cleanNonConsumable: return 30
        case .cleanSubscription: return 30
        case .paidNotGrantedReceiptOrder, .paidNotGrantedOrderTransaction, .sameTransaction: return 14
        case .paidNotGrantedEarliestReceipt, .inferredClosest, .inferredWindowEdge, .inferredEachOrderOnce,
            .restoreNotGranted, .wrongBundle, .transactionNotFound, .sandboxGranted, .outsideWindow,
            .expiredSubscription:
            return 10
        case .inferredSingle, .noOrder, .partiallyGranted, .revokedNotRefunded, .restoreNonConsumable,
            .restoreNonRenewing, .restoreAutoRenewable, .refunded, .invalidReceipt, .renewalNotGranted:
            return 12
        case .crossAccount: return 8
        case .sandboxMissed: return 8
        case .refundedDuplicate, .malformedReceipt, .signedMissed: return 6
        case .signedTampered, .signedOtherBundle, .signedUnknownRoot, .signedSandbox: return 4
        case .notificationRefund, .notificationRefundProrated, .refundReversed, .historyOnlyPurchase,
            .notificationPurchaseToken, .notificationPurchaseUnattributed:
            return 4
        case .apiBench: return 0
        }
    }

    /// How many user slots the scenario uses.
    var userSlots: Int { self == .crossAccount ? 2 : 1 }

    var isClean: Bool { self == .cleanConsumable || self == .cleanNonConsumable || self == .cleanSubscription }

    /// Its uploads are signed transactions: it needs the generator's PKI.
    var isSigned: Bool {
        switch self {
        case .signedMissed, .signedTampered, .signedOtherBundle, .signedUnknownRoot, .signedSandbox: return true
        default: return false
        }
    }
}

/// Everything the generator needs to know, shared by every pass.
struct GeneratorSettings {
    var users: Int
    var seed: UInt64
    var asOf: Int64
    /// The first app's products (the only app's, unless `otherApps` names more).
    var catalog: Catalog
    /// More apps (`iap-sim seed --bundle` repeated): every user slot plays in one app, chosen
    /// by a hash of the seed and the slot (`app(ofSlot:)`), with that app's products.
    var otherApps: [Catalog] = []
    /// Refunds are served (the refund list is written): refund scenarios expect clawbacks.
    var refundsServed: Bool
    var badRows: Bool
    /// Signed transactions can be made (`iap-sim seed --pki`): the signed scenarios play, and
    /// `storeKit2Share` of the users upload signed transactions instead of receipts.
    var signing = false
    var storeKit2Share = 0.0
    /// The job sweeps the Server API's notification and transaction history (the generator writes
    /// `--apple-truth`, and the job gets API credentials exactly then): what only Apple's
    /// notifications and histories show is expected too.
    var apiSweeps = false
    /// `--api-bench N`: N more users of the `api_bench` scenario after the others.
    var apiBench = 0
    /// `--extra-findings N`: every `clean_consumable` user makes N more purchases, each a finding
    /// (`ScenarioBuilder.extraFindings`).
    var extraFindings = 0
    /// `--unseen-share P`: purchases the shop never saw, P of Apple's production purchases, in the
    /// truth only (UnseenPurchases.swift).
    var unseenShare = 0.0

    var firstSeen: String { UTC.date(asOf) }

    /// Every app, the first one first.
    var apps: [Catalog] { [catalog] + otherApps }

    /// The app user slot `u` plays in: always the first with one app (so a one-app seed is what it
    /// always was), else a hash of the seed and the slot. A cross-account pair plays in its first
    /// slot's app; the bad-row block in the first app.
    func app(ofSlot u: Int) -> Catalog {
        guard !otherApps.isEmpty else { return catalog }
        let apps = self.apps
        return apps[Int(SimHash.combine(seed, UInt64(u), 0xA995) % UInt64(apps.count))]
    }

    /// The app whose products these are (by `Catalog.owns`); nil for none.
    func app(ofProduct productID: String) -> Catalog? { apps.first { $0.owns(productID) } }

    /// `iap_products` of every app. With several apps every product names its app in
    /// `bundle_id` (the job ties a product to its app by it); with one, the gems pack keeps its
    /// NULL as always.
    var productRows: [ProductRow] {
        guard !otherApps.isEmpty else { return catalog.products }
        return apps.flatMap { app in
            app.products.map { p in
                var p = p
                p.bundleID = app.bundle
                return p
            }
        }
    }
}
