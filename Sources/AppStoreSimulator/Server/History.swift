// Get Transaction History v2 and Get Refund History v2 of the simulated Server API: the
// customer of any of their transaction ids, 20 signed transactions a page, and a `revision`
// cursor. History is ordered by the date Apple last changed a transaction (its purchase, its
// refund or the refund's reversal), so an ASCENDING revision kept from the last page later
// returns just what changed.
//
// A revision is `<date ms>_<transaction id>` of the last transaction returned (`d` in front for
// DESCENDING); anything else is 400 4000005.

import Reconciliation

/// A page position: the modified (or refund) date and the transaction id, compared in that order
/// (ids as numbers: shorter is smaller).
struct PageKey: Comparable {
    var ms: Int64
    var tid: String

    static func < (a: PageKey, b: PageKey) -> Bool {
        if a.ms != b.ms { return a.ms < b.ms }
        if a.tid.utf8.count != b.tid.utf8.count { return a.tid.utf8.count < b.tid.utf8.count }
        return a.tid < b.tid
    }

    var revision: String { "\(ms)_\(tid)" }

    /// Reads `<ms>_<digits>`; nil for anything else.
    init?(revision text: Substring) {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...15).contains(parts[0].utf8.count), parts[0].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              TransactionIDForm.isWellFormed(parts[1]), let ms = Int64(parts[0]) else { return nil }
        self.ms = ms
        tid = String(parts[1])
    }

    init(ms: Int64, tid: String) {
        self.ms = ms
        self.tid = tid
    }
}

/// The query of Get Transaction History v2, checked.
struct HistoryQuery {
    var after: PageKey?
    var descending = false
    var start: Int64?
    var end: Int64?
    var productIDs: Set<String> = []
    var productTypes: Set<ProductType> = []
    var groups = false
    var ownership: String?
    var revoked: Bool?

    /// The query, or the 400 Apple gives for it.
    static func parse(_ request: APIRequest) -> Result<HistoryQuery, APIAnswer> {
        var q = HistoryQuery()
        func one(_ name: String) -> (present: Bool, value: String?) {
            let v = request.values(name)
            return (!v.isEmpty, v.count == 1 ? v[0] : nil)
        }
        let sort = one("sort")
        if sort.present {
            guard let s = sort.value, s == "ASCENDING" || s == "DESCENDING" else {
                return .failure(.error(400, 4_000_021, "Invalid sort."))
            }
            q.descending = s == "DESCENDING"
        }
        let revision = one("revision")
        if revision.present {
            guard let value = revision.value else { return .failure(.invalidRevision) }
            var text = Substring(value)
            let descendingRevision = text.first == "d"
            if descendingRevision { text = text.dropFirst() }
            guard descendingRevision == q.descending, let key = PageKey(revision: text) else {
                return .failure(.invalidRevision)
            }
            q.after = key
        }
        for (name, code, message) in [("startDate", 4_000_015, "Invalid start date."), ("endDate", 4_000_016, "Invalid end date.")] {
            let v = one(name)
            guard v.present else { continue }
            guard let text = v.value, let ms = Int64(text), ms >= 0 else { return .failure(.error(400, code, message)) }
            if name == "startDate" { q.start = ms } else { q.end = ms }
        }
        if let s = q.start, let e = q.end, s > e { return .failure(.error(400, 4_000_013, "Start date after end date.")) }
        for p in request.values("productId") {
            guard !p.isEmpty, p.utf8.count <= 200 else { return .failure(.error(400, 4_000_023, "Invalid product id.")) }
            q.productIDs.insert(p)
        }
        let types: [String: ProductType] = ["AUTO_RENEWABLE": .autoRenewable, "NON_RENEWABLE": .nonRenewing,
                                            "CONSUMABLE": .consumable, "NON_CONSUMABLE": .nonConsumable]
        for t in request.values("productType") {
            guard let type = types[t] else { return .failure(.error(400, 4_000_022, "Invalid product type.")) }
            q.productTypes.insert(type)
        }
        for g in request.values("subscriptionGroupIdentifier") {
            guard !g.isEmpty else { return .failure(.error(400, 4_000_024, "Invalid subscription group identifier.")) }
            q.groups = true
        }
        let ownership = one("inAppOwnershipType")
        if ownership.present {
            guard let o = ownership.value, o == "PURCHASED" || o == "FAMILY_SHARED" else {
                return .failure(.error(400, 4_000_026, "Invalid in-app ownership type."))
            }
            q.ownership = o
        }
        let revoked = one("revoked")
        if revoked.present {
            guard let r = revoked.value, r == "true" || r == "false" else {
                return .failure(.error(400, 4_000_030, "Invalid revoked."))
            }
            q.revoked = r == "true"
        }
        let exclude = one("excludeRevoked")
        if exclude.present, q.revoked == nil {
            guard let r = exclude.value, r == "true" || r == "false" else {
                return .failure(.error(400, 4_000_025, "Invalid exclude revoked."))
            }
            q.revoked = r == "true" ? false : nil
        }
        return .success(q)
    }

    /// Whether a transaction passes the filters (different parameters AND, repeated values OR).
    func matches(_ r: AppleTruthRow, refunded: Bool) -> Bool {
        if let start, r.purchaseDateMs < start { return false }
        if let end, r.purchaseDateMs >= end { return false }
        if !productIDs.isEmpty, !productIDs.contains(r.productID) { return false }
        if !productTypes.isEmpty, !productTypes.contains(r.productType) { return false }
        // The truth has no subscription groups: every auto-renewable is in every group asked.
        if groups, r.productType != .autoRenewable { return false }
        if let ownership, (ownership == "FAMILY_SHARED") != r.familyShared { return false }
        if let revoked, revoked != refunded { return false }
        return true
    }
}

extension ServerAPIService {
    static let pageSize = 20

    func transactionHistory(_ id: Substring, _ request: APIRequest, refunds: RefundView, nowMs: Int64) -> APIAnswer {
        guard TransactionIDForm.isWellFormed(id) else { return .invalidTransactionID }
        let query: HistoryQuery
        switch HistoryQuery.parse(request) {
        case .failure(let answer): return answer
        case .success(let q): query = q
        }
        guard let anchor = truth.row(forAnyID: String(id), environment: request.environment,
                                     bundle: request.bundle) else { return .transactionNotFound }
        var items: [(PageKey, Int)] = []
        for i in truth.customerRows(of: anchor) {
            let row = truth.rows[i]
            let refund = refunds.refund(row)
            guard query.matches(row, refunded: refund != nil) else { continue }
            // A reversal changes the transaction too: it moves to the reversal's place.
            let key = PageKey(ms: row.modifiedMs(refund: refunds.everRefund(row)), tid: row.transactionID)
            if let after = query.after, query.descending ? !(key < after) : !(after < key) { continue }
            items.append((key, i))
        }
        items.sort { query.descending ? $1.0 < $0.0 : $0.0 < $1.0 }
        let page = items.prefix(Self.pageSize)
        let prefix = query.descending ? "d" : ""
        let revision = page.last.map { prefix + $0.0.revision }
            ?? query.after.map { prefix + $0.revision } ?? prefix + PageKey(ms: query.descending ? 999_999_999_999_999 : 0, tid: "0").revision
        var members: [(String, JSONValue)] = [
            ("revision", .string(revision)), ("hasMore", .bool(items.count > page.count)),
            ("bundleId", .string(request.bundle)),
        ]
        if request.environment == .production { members.append(("appAppleId", .int(config.appAppleID(of: request.bundle)))) }
        members.append(("environment", .string(request.environment == .production ? "Production" : "Sandbox")))
        members.append(("signedTransactions", .array(page.map { .string(signed($0.1, refunds: refunds, nowMs: nowMs)) })))
        return .json(.object(members))
    }

    func refundHistory(_ id: Substring, _ request: APIRequest, refunds: RefundView, nowMs: Int64) -> APIAnswer {
        guard TransactionIDForm.isWellFormed(id) else { return .invalidTransactionID }
        var after: PageKey?
        let revisions = request.values("revision")
        if !revisions.isEmpty {
            guard revisions.count == 1, let key = PageKey(revision: Substring(revisions[0])) else { return .invalidRevision }
            after = key
        }
        guard let anchor = truth.row(forAnyID: String(id), environment: request.environment,
                                     bundle: request.bundle) else { return .transactionNotFound }
        var items: [(PageKey, Int)] = []
        for i in truth.customerRows(of: anchor) {
            guard let refund = refunds.refund(truth.rows[i]) else { continue }
            let key = PageKey(ms: refund.cancellationDateMs, tid: truth.rows[i].transactionID)
            if let after, !(after < key) { continue }
            items.append((key, i))
        }
        items.sort { $0.0 < $1.0 }
        let page = items.prefix(Self.pageSize)
        let revision = page.last?.0.revision ?? after?.revision ?? PageKey(ms: 0, tid: "0").revision
        return .json(.object([
            ("signedTransactions", .array(page.map { .string(signed($0.1, refunds: refunds, nowMs: nowMs)) })),
            ("revision", .string(revision)), ("hasMore", .bool(items.count > page.count)),
        ]))
    }
}
