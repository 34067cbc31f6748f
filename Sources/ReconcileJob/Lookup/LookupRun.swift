import AppStore
import Foundation
import HTTP
import Logging
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
        /// The report the night lists it in, and the night that first did (while still open).
        public var report: String?
        public var first_seen: String?
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
        // Apple answers per app (the token's `bid`): each app of IAP_BUNDLE_IDS is asked in turn,
        // the first that knows the order or transaction answers.
        let apps: [String?] = settings.bundleIDList.isEmpty ? [nil] : settings.bundleIDList
        switch target {
        case .order(let orderID):
            (asked, id) = ("order", orderID)
            // Look Up Order ID exists in production only.
            for app in apps {
                if let answer = try caller.get(AppStoreEndpoints.orderLookup, "Look Up Order ID", id: orderID, in: .production,
                                               app: app), !answer.signed.isEmpty {
                    signed = answer.signed
                    break
                }
            }
        case .transaction(let transactionID):
            (asked, id) = ("transaction", transactionID)
            search: for app in apps {
                for environment in [AppStoreEnvironment.production, .sandbox] {
                    guard let jws = try caller.get(AppStoreEndpoints.transactionInfo, "Get Transaction Info", id: transactionID,
                                                   in: environment, app: app) else { continue }
                    signed = [jws]
                    break search
                }
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
            items = try Result {
                try SourceDatabase.reading(settings, job: db, retry: true, logger: Logger(label: "iap-reconcile lookup")) { source in try verdicts(verified, db: db, source: source) }
            }.mapError { JobError.from($0, doing: "reading our data") }.get()
        }
        return LookupResult(asked: asked, id: id, apple: items.isEmpty ? "not_found" : "found", transactions: items)
    }
}

extension LookupRun {
    /// Each transaction's verdict by the night's rules on today's facts (LookupFamilies.swift),
    /// with the night that first listed it when a night did and the finding is still open.
    /// `source`: where the source relations are read (`db` without SOURCE_DATABASE_URL).
    func verdicts(_ verified: [SignedTransaction], db: PGConnection, source: PGConnection) throws -> [LookupResult.Item] {
        // The night's statements read the job schema as its latest migration left it, and as
        // this build's migrations made it (rows without a checksum yet: the next night fills them).
        try SchemaCheck.requireCurrent(db, schema: settings.jobSchema, why: "lookup decides as the night does, from what the "
            + "nights learned; run `iap-reconcile migrate` (or a night) first")
        var settings = settings
        settings.listPriceColumns = try SourceCheck.verify(source, schema: settings.sourceSchema).listPrices
        let decided = try LookupFamilies(db: db, source: source, settings: settings).decide(verified)
        let rules = settings.decisionSettings
        var items: [LookupResult.Item] = []
        let ordered = verified.sorted {
            ($0.transaction.purchaseDate, $0.transaction.transactionID) < ($1.transaction.purchaseDate, $1.transaction.transactionID)
        }
        for s in ordered {
            let t = s.transaction
            guard let (family, decision) = decided.family(of: t.transactionID, t.environment),
                  let v = Lookup.verdict(transactionID: t.transactionID, environment: t.environment, in: family,
                                         decision: decision,
                                         inferredOrder: decided.inferredOrder(t.transactionID, t.environment),
                                         settings: rules)
            else {
                throw JobError(.internalCheck, "transaction \(t.transactionID) was not among the families decided for it")
            }
            let seen = try firstSeen(v.findingKeys, db: db)
            var text = v.text
            if let report = v.report, let seen {
                text += " (listed in \(report.rawValue) since \(seen))"
            }
            items.append(LookupResult.Item(
                transaction_id: t.transactionID, original_transaction_id: t.originalTransactionID, product_id: t.productID,
                environment: t.environment.rawValue, purchase_date: UTC.timestamp(t.purchaseDate), quantity: t.quantity,
                revocation_date: s.revocationDate.map(UTC.timestamp), verdict: v.kind.rawValue, text: text,
                user_id: v.userID, order_id: v.orderID, grant_ids: v.grantIDs, owed: v.owed,
                report: v.report?.rawValue, first_seen: seen))
        }
        return items
    }

    /// The earliest night (UTC date) that listed one of these findings and has not closed it; nil
    /// when no night has.
    func firstSeen(_ keys: [String], db: PGConnection) throws -> String? {
        guard !keys.isEmpty else { return nil }
        return try db.query("""
            SELECT to_char(min(first_seen), 'YYYY-MM-DD') FROM \(settings.jobSchema.sql).findings
            WHERE finding_key = ANY(\(keys)::text[]) AND closed_on IS NULL
            """).value(0, 0)
    }
}
