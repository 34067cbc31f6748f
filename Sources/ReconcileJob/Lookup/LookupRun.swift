import AppStore
import Foundation
import HTTP
import Postgres
import Reconciliation

/// What `iap-reconcile lookup` was asked about.
public enum LookupTarget: Sendable {
    /// The order ID on Apple's invoice e-mail (`MK5TTTVWJH`): Look Up Order ID.
    case order(String)
    /// A transaction id: Get Transaction Info (production, then the sandbox on 4040010).
    case transaction(String)

    /// Checked before anything is asked: an order ID is letters and digits, a transaction id
    /// digits (exit 64 otherwise).
    public static func parse(orderID: String?, transactionID: String?) throws -> LookupTarget {
        switch (orderID, transactionID) {
        case (let o?, nil):
            guard ServerAPI.isPathSafe(o), o.utf8.count <= 32 else {
                throw JobError(.usage, "'\(o.prefix(40))' is not an Apple order ID (letters and digits, as on the invoice: MK5TTTVWJH)")
            }
            return .order(o)
        case (nil, let t?):
            guard !t.isEmpty, t.utf8.count <= 20, t.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw JobError(.usage, "'\(t.prefix(40))' is not a transaction id (1 to 20 digits)")
            }
            return .transaction(t)
        default:
            throw JobError(.usage, "give either an Apple order ID or --transaction ID")
        }
    }
}

/// The answer of `lookup`, for people (`lines`) and for tools (`--json`).
public struct LookupResult: Sendable, Encodable {
    public struct Item: Sendable, Encodable {
        public var transaction_id, original_transaction_id, product_id, environment, purchase_date: String
        public var quantity: Int
        public var revocation_date: String?
        public var verdict: String
        public var text: String
        public var user_id, order_id: String?
        public var grant_ids: [String]
        public var owed: Int?
    }
    /// `order` or `transaction`, and the id asked about.
    public var asked: String
    public var id: String
    /// `found` or `not_found` ("Apple has no such order / transaction for this app").
    public var apple: String
    public var transactions: [Item]

    public var lines: [String] {
        if transactions.isEmpty {
            return asked == "order"
                ? ["Apple has no order \(id) with a purchase in this app: check the order ID on the invoice e-mail (e.g. MK5TTTVWJH) and the app"]
                : ["Apple knows no transaction \(id) in production or the sandbox for this app"]
        }
        return transactions.map { "\($0.transaction_id) \($0.product_id) × \($0.quantity): \($0.text)" }
    }
}

/// Asks Apple about one purchase, verifies every signed transaction of the answer, and says for
/// each what our data shows and what to do (`Lookup.verdict`). Reads only: nothing is stored.
public struct LookupRun {
    var settings: JobSettings

    public init(settings: JobSettings) { self.settings = settings }

    public mutating func run(_ target: LookupTarget) throws -> LookupResult {
        if let list = settings.rootCertificateFiles { try settings.useRootCertificates(pemFiles: list) }
        try settings.configureServerAPI()
        guard let api = settings.serverAPI else {
            throw JobError(.configuration, "lookup asks the App Store Server API: set IAP_ISSUER_ID, IAP_KEY_ID and "
                + "IAP_PRIVATE_KEY_FILE (an In-App Purchase key of App Store Connect), and IAP_BUNDLE_IDS")
        }
        var caller = ServerAPICaller(api: api, settings: settings)
        var signed: [String] = []
        let asked: String, id: String
        switch target {
        case .order(let orderID):
            (asked, id) = ("order", orderID)
            // Look Up Order ID exists in production only.
            if let body = try caller.get(.orderLookup, ServerAPI.orderLookupPath(orderID), in: .production) {
                do { signed = try ServerAPI.orderLookup(body).signed } catch {
                    throw JobError(.temporary, "Look Up Order ID answered something that is not Apple's answer (\(error)); try again later")
                }
            }
        case .transaction(let transactionID):
            (asked, id) = ("transaction", transactionID)
            for environment in [AppStoreEnvironment.production, .sandbox] {
                guard let body = try caller.get(.transactionInfo, ServerAPI.transactionInfoPath(transactionID),
                                                in: environment) else { continue }
                do { signed = [try ServerAPI.signedTransactionInfo(body)] } catch {
                    throw JobError(.temporary, "Get Transaction Info answered something that is not Apple's answer (\(error)); try again later")
                }
                break
            }
        }
        let verified = try signed.map { jws -> SignedTransaction in
            switch settings.signedData.verifyTransaction(jws, bundleIDs: settings.bundleIDs.isEmpty ? nil : settings.bundleIDs) {
            case .success(let t): return t
            case .failure(.unknownRoot):
                throw JobError(.configuration, "Apple's answer does not chain to the configured roots (\(settings.rootCertificatesSource)); "
                    + "check IAP_ROOT_CERTIFICATES")
            case .failure(let rejection):
                throw JobError(.temporary, "Apple's answer failed verification (\(rejection)); nothing in it is believed: try again later")
            }
        }
        var items: [LookupResult.Item] = []
        if !verified.isEmpty {
            let db: PGConnection
            do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
            defer { db.close() }
            let facts = OurFacts(db: db, settings: settings)
            for s in verified.sorted(by: { ($0.transaction.purchaseDate, $0.transaction.transactionID) < ($1.transaction.purchaseDate, $1.transaction.transactionID) }) {
                let t = s.transaction
                let ours = try Result { try facts.record(for: t, appAccountToken: s.appAccountToken) }
                    .mapError { JobError.from($0, doing: "reading our data") }.get()
                var v = Lookup.verdict(t, revokedAt: s.revocationDate ?? t.cancellationDate,
                                       familyRevoke: s.revocationType == "FAMILY_REVOKE", ours: ours)
                if v.kind == .unknownToUs, let since = facts.unattributedSince(t.transactionID) {
                    v.text += " (listed in unattributed.csv since \(since))"
                }
                items.append(LookupResult.Item(
                    transaction_id: t.transactionID, original_transaction_id: t.originalTransactionID, product_id: t.productID,
                    environment: t.environment.rawValue, purchase_date: UTC.timestamp(t.purchaseDate), quantity: t.quantity,
                    revocation_date: s.revocationDate.map(UTC.timestamp), verdict: v.kind.rawValue, text: v.text,
                    user_id: v.userID, order_id: v.orderID, grant_ids: v.grantIDs, owed: v.owed))
            }
        }
        return LookupResult(asked: asked, id: id, apple: items.isEmpty ? "not_found" : "found", transactions: items)
    }
}

/// Our source relations' view of one transaction.
struct OurFacts {
    let db: PGConnection
    let settings: JobSettings

    /// The night a purchase no order, upload or grant ties to a user was first listed in
    /// unattributed.csv, while it still is; nil otherwise (or before the job schema exists).
    func unattributedSince(_ transactionID: String) -> String? {
        guard let r = try? db.query("""
            SELECT to_char(first_seen, 'YYYY-MM-DD') FROM \(settings.jobSchema.quoted).findings
            WHERE finding_key = $1 AND closed_on IS NULL
            """, ["unattributed|" + transactionID]), r.rowCount > 0 else { return nil }
        return r.value(0, 0)
    }

    func record(for t: AppleTransaction, appAccountToken: String?) throws -> OurRecord {
        let src = "\"\(settings.sourceSchema)\""
        var record = OurRecord()
        let grants = try db.query("""
            SELECT grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity,
                   \(SourceRelation.epochMilliseconds("granted_at")), \(SourceRelation.epochMilliseconds("revoked_at"))
            FROM \(src).iap_grants WHERE transaction_id = $1 AND grant_id IS NOT NULL AND user_id IS NOT NULL
            ORDER BY granted_at, grant_id
            """, [t.transactionID])
        for r in 0..<grants.rowCount {
            guard let g = grants.value(r, 0), let u = grants.value(r, 1), let p = grants.value(r, 3),
                  let at = grants.value(r, 7).flatMap(Int64.init) else { continue }
            record.grants.append(Grant(grantID: g, userID: u, orderID: grants.value(r, 2), productID: p,
                                       transactionID: t.transactionID, originalTransactionID: grants.value(r, 5),
                                       quantity: grants.value(r, 6).flatMap(Int.init) ?? 1, grantedAt: at,
                                       revokedAt: grants.value(r, 8).flatMap(Int64.init)))
        }
        // Uploads that name it, and (once a night verified them) uploads whose answer showed it:
        // the missed order of a receipt uploaded without its transaction id.
        let job = settings.jobSchema.quoted
        let learned = try db.query("SELECT to_regclass($1) IS NOT NULL", [settings.jobSchema.name + ".receipt_transactions"])
            .value(0, 0) == "t"
        let uploads = try db.query("""
            SELECT user_id, order_id FROM \(src).iap_receipts
            WHERE (transaction_id = $1\(learned ? " OR receipt_id IN (SELECT receipt_id FROM \(job).receipt_transactions WHERE transaction_id = $1)" : ""))
              AND user_id IS NOT NULL
            ORDER BY submitted_at, receipt_id
            """, [t.transactionID])
        var uploadOrders: [String] = []
        for r in 0..<uploads.rowCount {
            if let u = uploads.value(r, 0), !record.uploaders.contains(u) { record.uploaders.append(u) }
            if let o = uploads.value(r, 1) { uploadOrders.append(o) }
        }
        let orders = try db.query("""
            SELECT order_id, user_id, product_id, quantity, status, transaction_id, \(SourceRelation.epochMilliseconds("created_at"))
            FROM \(src).iap_orders
            WHERE (transaction_id = $1 OR order_id = ANY($2::text[]) OR lower(order_id) = lower($3))
              AND order_id IS NOT NULL AND user_id IS NOT NULL
            ORDER BY created_at, order_id
            """, [t.transactionID, "{" + uploadOrders.map(Self.arrayItem).joined(separator: ",") + "}", appAccountToken ?? ""])
        for r in 0..<orders.rowCount {
            guard let o = orders.value(r, 0), let u = orders.value(r, 1), let p = orders.value(r, 2) else { continue }
            record.orders.append(Order(orderID: o, userID: u, productID: p, quantity: orders.value(r, 3).flatMap(Int.init) ?? 1,
                                       status: orders.value(r, 4) ?? "", transactionID: orders.value(r, 5),
                                       createdAt: orders.value(r, 6).flatMap(Int64.init) ?? 0))
        }
        return record
    }

    /// One element of a Postgres text array literal, quoted.
    static func arrayItem(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}
