// StoreKit 2 uploads: a share of users upload signed transactions instead of receipts, and five
// scenarios exist only with them (a missed purchase, and four uploads the job must reject or not
// compensate: tampered, another app's, from an unknown root, from the sandbox).

import AppStoreSimulator
import Foundation
import Reconciliation

extension ScenarioBuilder {
    /// The user's client speaks StoreKit 2: every upload that a signed transaction can stand for
    /// exactly becomes one. A signed transaction carries one transaction and no App Store status,
    /// so receipts with several transactions, a later renewal, a forced status, or a refund (the
    /// refund list reaches only verifyReceipt) stay receipts. The findings stay, but how the job
    /// learns them does: `source` becomes `signed_transaction`, and an upload the job will verify
    /// may have been bought in any storefront, since the job reads Apple's price from it.
    mutating func uploadSignedTransactions() {
        let refunded = Set(data.refunds.map(\.transactionID))
        for i in data.receipts.indices {
            guard let sim = data.receipts[i].sim, data.receipts[i].signed == nil, sim.st == nil, sim.txs.count == 1,
                sim.txs[0].late != true, !refunded.contains(sim.txs[0].tid)
            else { continue }
            data.receipts[i].signed = .genuine
            let verified = data.receipts[i].verifyStatus != 0 && data.receipts[i].verifyStatus != 21006
            if verified { signedStorefront(sim.txs[0].tid) }
        }
    }

    /// A verified signed upload's storefront, by the transaction id's hash (so the scenario's
    /// draws stay the same), unless the scenario already chose one.
    mutating func signedStorefront(_ tid: String) {
        guard data.storefronts[tid] == nil else { return }
        data.storefronts[tid] = SimStorefront.all[Int(SimHash.fnv(tid) % UInt64(SimStorefront.all.count))]
    }

    /// Paid, uploaded as a signed transaction, never granted: a missed order found offline.
    mutating func signedMissed() {
        let (p, product, t, o) = purchase(cat.consumables, status: rng.pick(["created", "paid"]), linked: false)
        let r = signedReceipt(order: o.orderID, tid: t, at: p + seconds(2...30), txs: [tx(t, product, at: p)])
        expectCompensate(
            order: o.orderID, user: u, r.sim!.txs[0], owed: 1, match: "exact",
            reason: "paid_not_granted", receipt: r.receiptID)
    }

    /// Granted on a signed transaction whose payload was changed after signing: bad signature,
    /// definitively rejected, the grant has no payment.
    mutating func signedTampered() {
        let (p, product, t, o) = purchase(cat.consumables)
        signedReceipt(order: o.orderID, tid: t, at: p + seconds(2...30), txs: [tx(t, product, at: p)], kind: .tampered)
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "invalid_receipt")
    }

    /// Granted on a genuine signed transaction of another app.
    mutating func signedOtherBundle() {
        let (p, product, t, o) = purchase(cat.consumables)
        signedReceipt(
            order: o.orderID, tid: t, at: p + seconds(2...30),
            txs: [tx(t, Catalog.otherProduct, at: p, type: "consumable")], bundle: Catalog.otherBundle)
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "wrong_bundle")
    }

    /// Granted on a signed transaction whose chain ends at a root nobody trusts.
    mutating func signedUnknownRoot() {
        let (p, product, t, o) = purchase(cat.consumables)
        signedReceipt(order: o.orderID, tid: t, at: p + seconds(2...30), txs: [tx(t, product, at: p)], kind: .unknownRoot)
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "invalid_receipt")
    }

    /// Granted on a genuine signed transaction of the sandbox: no money was paid.
    mutating func signedSandbox() {
        let (p, product, t, o) = purchase(cat.consumables + cat.nonConsumables)
        signedReceipt(order: o.orderID, tid: t, at: p + seconds(2...30), txs: [tx(t, product, at: p)], env: .sandbox)
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "sandbox_transaction")
    }

    @discardableResult
    private mutating func signedReceipt(
        order: String?, tid: String, at: Int64, txs: [SimTransaction],
        env: AppStoreEnvironment = .production, bundle: String? = nil,
        kind: SignedUpload = .genuine
    ) -> ReceiptRow {
        receipt(u, order: order, tidColumn: tid, at: at, verify: nil, env: env, style: .ios7, bundle: bundle, txs: txs)
        data.receipts[data.receipts.count - 1].signed = kind
        // Forged or another app's: Apple's price of it is never believed, so it stays in the USA.
        if kind == .genuine && bundle == nil { signedStorefront(tid) }
        return data.receipts[data.receipts.count - 1]
    }
}

/// Makes the signed transactions of StoreKit 2 uploads: Apple's payload fields from the
/// simulator's transaction, signed by the generator's PKI (or another one, or tampered).
struct UploadSigner: Sendable {
    let pki: TestPKI
    /// A PKI of its own, whose root the job is never given.
    let foreign: TestPKI
    /// With `--pkcs7-receipts`: signs the app receipts (`appReceipt`).
    var receipts: ReceiptPKI?

    init(pki: TestPKI) throws {
        self.pki = pki
        foreign = try TestPKI.create()
    }

    /// An app receipt as Apple's (PKCS#7), when the receipt PKI is set and Apple would read it:
    /// iOS 7 style, not a forced 21002. SHA-1 for every other receipt, as Apple signed until 2023;
    /// a forced 21003 has its signature broken (its last byte changed), so both verifiers refuse it.
    func appReceipt(_ sim: SimReceipt) throws -> String? {
        guard let receipts, sim.style == .ios7, sim.st != 21002 else { return nil }
        let sha1 = sim.rid.utf8.reduce(0) { $0 &+ Int($1) } % 2 == 1
        var bytes = try sim.pkcs7(pki: receipts, digest: sha1 ? .sha1 : .sha256)
        if sim.st == 21003 { bytes[bytes.count - 1] ^= 0x01 }
        return Data(bytes).base64EncodedString()
    }

    func jws(_ sim: SimReceipt, kind: SignedUpload, signedAt: Int64, storefront: SimStorefront) throws -> String {
        let payload = Self.payload(sim, signedAt: signedAt, storefront: storefront)
        switch kind {
        case .genuine:
            return pki.signTransaction(payload)
        case .unknownRoot:
            return foreign.signTransaction(payload)
        case .tampered:
            // The signature of one payload over another: header and signature kept, payload swapped.
            var changed = payload
            changed.quantity += 1
            return pki.tampered(pki.signTransaction(payload), payload: changed)
        }
    }

    /// Apple's payload of the upload's transaction, bought in `storefront` (the same price the
    /// Apple truth signs for it).
    static func payload(_ sim: SimReceipt, signedAt: Int64, storefront store: SimStorefront) -> SignedTransactionPayload {
        let t = sim.txs[0]
        let type: String
        switch ProductType(rawValue: t.type) {
        case .consumable?: type = "Consumable"
        case .nonConsumable?: type = "Non-Consumable"
        case .autoRenewable?: type = "Auto-Renewable Subscription"
        case .nonRenewing?: type = "Non-Renewing Subscription"
        case nil: type = "Consumable"
        }
        var p = SignedTransactionPayload(
            transactionId: t.tid, originalTransactionId: t.otid, bundleId: sim.bundle, productId: t.pid,
            purchaseDate: t.pd, originalPurchaseDate: t.opd, quantity: t.qty, type: type,
            inAppOwnershipType: "PURCHASED", signedDate: max(signedAt, t.pd),
            environment: sim.env == AppStoreEnvironment.production.rawValue ? "Production" : "Sandbox")
        p.expiresDate = t.exp
        p.webOrderLineItemId = t.wol
        p.transactionReason = t.tid == t.otid ? "PURCHASE" : "RENEWAL"
        p.storefront = store.code
        p.storefrontId = store.id
        p.currency = store.currency
        p.price = PriceList.unit(t.pid, at: store).map { $0 * Int64(t.qty) }
        return p
    }
}
