import AppStore
import Foundation
import HTTP
import JobStore
import Logging
import NightDecide
import NightLearn
import NightReview
import Postgres
import Reconciliation
import StoreIO

/// Asks Apple about one purchase, verifies every signed transaction of the answer, and says for
/// each what our data shows and what to do (`Lookup.verdict`). From what customer service holds
/// (`--our-order`, `--user`) it finds the purchases in our data and what the nights learned first
/// (LookupOurs.swift). Reads only: nothing is stored.
public struct LookupRun {
    var settings: JobSettings

    public init(settings: JobSettings) { self.settings = settings }

    public mutating func run(_ target: LookupTarget) throws -> LookupResult {
        if let list = settings.rootCertificateFiles { try settings.useRootCertificates(pemFiles: list) }
        try settings.configureServerAPI()
        switch target {
        case .order(let orderID):
            // Apple's invoice order ID is Apple's alone: no table of ours holds it.
            guard let api = settings.serverAPI else {
                throw JobError(
                    .configuration,
                    "lookup of Apple's invoice order ID asks the App Store Server API: set IAP_ISSUER_ID, "
                        + "IAP_KEY_ID and IAP_PRIVATE_KEY_FILE (an In-App Purchase key of App Store Connect), and IAP_BUNDLE_IDS; "
                        + "without them, lookup --transaction, --our-order and --user answer from our data")
            }
            return try appleOrder(orderID, api: api)
        case .transaction(let transactionID):
            guard let api = settings.serverAPI else { return try ours(target) }
            return try appleTransaction(transactionID, api: api)
        case .ourOrder, .user:
            return try ours(target)
        case .playOrder, .playToken:
            return try play(target)
        }
    }

    /// Apple's apps in the order asked: each app of IAP_BUNDLE_IDS in turn (Apple answers per app,
    /// the token's `bid`); the first that knows the order or transaction answers.
    var apps: [String?] { settings.bundleIDList.isEmpty ? [nil] : settings.bundleIDList }

    /// Look Up Order ID (production only: Apple has no sandbox for it).
    func appleOrder(_ orderID: String, api: ServerAPISettings) throws -> LookupResult {
        var caller = ServerAPICaller(api: api, settings: settings)
        var signed: [String] = []
        for app in apps {
            if let answer = try caller.get(AppStoreEndpoints.orderLookup, "Look Up Order ID", id: orderID, in: .production, app: app),
                !answer.signed.isEmpty
            {
                signed = answer.signed
                break
            }
        }
        return try fromApple(asked: "order", id: orderID, verified: try verify(signed))
    }

    func appleTransaction(_ transactionID: String, api: ServerAPISettings) throws -> LookupResult {
        var caller = ServerAPICaller(api: api, settings: settings)
        let signed = try askTransaction(transactionID, caller: &caller).map { [$0] } ?? []
        return try fromApple(asked: "transaction", id: transactionID, verified: try verify(signed))
    }

    /// Get Transaction Info for one id: each app, production then the sandbox (4040010 there).
    func askTransaction(_ transactionID: String, caller: inout ServerAPICaller) throws -> String? {
        for app in apps {
            for environment in [AppStoreEnvironment.production, .sandbox] {
                if let jws = try caller.get(
                    AppStoreEndpoints.transactionInfo, "Get Transaction Info", id: transactionID,
                    in: environment, app: app)
                {
                    return jws
                }
            }
        }
        return nil
    }

    /// Every signed transaction of Apple's answer, verified as an upload is; one that fails stops
    /// the lookup (75, or 78 for roots that are not the configured ones).
    func verify(_ signed: [String]) throws -> [SignedTransaction] {
        try signed.map { jws -> SignedTransaction in
            switch settings.signedData.verifyTransaction(jws, bundleIDs: settings.bundleIDs.isEmpty ? nil : settings.bundleIDs) {
            case .success(let t): return t
            case .failure(.unknownRoot):
                throw JobError(
                    .configuration,
                    "Apple's answer does not chain to the configured roots (\(settings.rootCertificatesSource)); "
                        + "check IAP_ROOT_CERTIFICATES")
            case .failure(let rejection):
                throw JobError(.temporary, "Apple's answer failed verification (\(rejection)); nothing in it is believed: try again later")
            }
        }
    }

    /// The answer of `lookup ORDER` and `lookup --transaction ID`: each transaction Apple returned,
    /// decided on our data.
    func fromApple(asked: String, id: String, verified: [SignedTransaction]) throws -> LookupResult {
        var items: [LookupResult.Item] = []
        if !verified.isEmpty {
            items = try reading { db, source, settings in
                let decided = try LookupFamilies(db: db, source: source, settings: settings).decide(verified)
                let ordered = verified.sorted {
                    ($0.transaction.purchaseDate, $0.transaction.transactionID) < (
                        $1.transaction.purchaseDate, $1.transaction.transactionID
                    )
                }
                return try ordered.map { s in
                    let t = s.transaction
                    guard let (family, decision) = decided.family(of: t.transactionID, t.environment),
                        let known = family.transactions.first(where: {
                            $0.transaction.transactionID == t.transactionID && $0.transaction.environment == t.environment
                        })
                    else {
                        throw JobError(.internalCheck, "transaction \(t.transactionID) was not among the families decided for it")
                    }
                    let v = try verdict(known, family: family, decision: decision, decided: decided, settings: settings)
                    return try item(t, revocationDate: s.revocationDate, verdict: v, db: db)
                }
            }
        }
        var lines = items.map(LookupResult.line)
        if items.isEmpty {
            lines = [
                asked == "order"
                    ? "Apple has no order \(id) with a purchase in this app: check the order ID on the invoice e-mail (e.g. MK5TTTVWJH) and the app"
                    : "Apple knows no transaction \(id) in production or the sandbox for this app"
            ]
        }
        return LookupResult(
            asked: asked, id: id, apple: items.isEmpty ? "not_found" : "found", source: LookupResult.fromApple,
            transactions: items, lines: lines)
    }

    /// Runs `body` with the job's session, the session that reads the source relations (the
    /// same without SOURCE_DATABASE_URL) and the settings with the source's list-price columns,
    /// once the job schema is checked to be this build's.
    func reading<T>(_ body: (PGConnection, PGConnection, JobSettings) throws -> T) throws -> T {
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        return try Result {
            try SourceDatabase.reading(settings, job: db, retry: true, logger: Logger(label: "iap-reconcile lookup")) { source in
                // The night's statements read the job schema as its latest migration left it, and as
                // this build's migrations made it (rows without a checksum yet: the next night fills them).
                try SchemaCheck.requireCurrent(
                    db, schema: settings.jobSchema,
                    why: "lookup decides as the night does, from what the "
                        + "nights learned; run `iap-reconcile migrate` (or a night) first")
                var settings = settings
                try StoreViews.checkSources(&settings, db: db, source: source, command: "lookup")
                return try body(db, source, settings)
            }
        }.mapError { JobError.from($0, doing: "reading our data") }.get()
    }
}

extension LookupRun {
    /// The verdict on one Apple transaction of a decided family (`Lookup.verdict`, the night's
    /// rules), with the inferred order the night would give it.
    func verdict(
        _ known: KnownTransaction, family: Family, decision: FamilyDecision, decided: LookupFamilies.Decided,
        settings: JobSettings
    ) throws -> LookupVerdict {
        let t = known.transaction
        guard
            let v = Lookup.verdict(
                transactionID: t.transactionID, environment: t.environment, in: family, decision: decision,
                inferredOrder: decided.inferredOrder(t.transactionID, t.environment),
                settings: settings.decisionSettings)
        else { throw JobError(.internalCheck, "transaction \(t.transactionID) was not among the families decided for it") }
        return v
    }

    /// A transaction's item: its verdict, and the report that lists it (the night that first
    /// did, while the finding is open; else the report the next night lists it in).
    func item(_ t: AppleTransaction, revocationDate: EpochMillis?, verdict v: LookupVerdict, db: PGConnection) throws -> LookupResult.Item {
        let seen = try firstSeen(v.findingKeys, db: db)
        return LookupResult.Item(
            transaction_id: t.transactionID, original_transaction_id: t.originalTransactionID, product_id: t.productID,
            environment: t.environment.rawValue, purchase_date: UTC.timestamp(t.purchaseDate), quantity: t.quantity,
            revocation_date: revocationDate.map(UTC.timestamp), verdict: v.kind.rawValue, text: v.text + listed(v, seen),
            user_id: v.userID, order_id: v.orderID, grant_ids: v.grantIDs, owed: v.owed,
            report: v.report?.rawValue, first_seen: seen)
    }

    /// ` (listed in compensate.csv since 2026-11-21)`, or ` (compensate.csv lists it from the next
    /// night)` when no night has yet (or the night that did closed it since).
    func listed(_ v: LookupVerdict, _ seen: String?) -> String {
        guard let report = v.report else { return "" }
        if let seen { return " (listed in \(report.rawValue) since \(seen))" }
        return " (\(report.rawValue) lists it from the next night)"
    }

    /// The earliest night (UTC date) that listed one of these findings and has not closed it; nil
    /// when no night has.
    func firstSeen(_ keys: [String], db: PGConnection) throws -> String? {
        guard !keys.isEmpty else { return nil }
        return try db.query(
            """
            SELECT to_char(min(first_seen), 'YYYY-MM-DD') FROM \(settings.jobSchema.sql).findings
            WHERE finding_key = ANY(\(keys)::text[]) AND closed_on IS NULL
            """
        ).value(0, 0)
    }
}
