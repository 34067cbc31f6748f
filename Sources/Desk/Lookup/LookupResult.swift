import Reconciliation

/// The answer of `lookup`, for people (`lines`) and for tools (`--json`, every member but `lines`).
public struct LookupResult: Sendable, Encodable {
    /// One purchase and its verdict (`Lookup.verdict`).
    public struct Item: Sendable, Encodable {
        public var transaction_id, original_transaction_id, product_id: String
        /// Apple's; absent for a purchase Apple never showed the job (only our grants of it are known).
        public var environment, purchase_date: String?
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

    /// An order of ours that `--our-order` or `--user` asked about, and the purchases that pay it.
    public struct OrderItem: Sendable, Encodable {
        public var order_id: String
        public var user_id, product_id, status, created_at, transaction_id: String?
        public var quantity: Int?
        /// The listed transactions that pay it (empty: no verified payment known).
        public var paid_by: [String]
        public var text: String
    }

    /// `source` when Apple was asked now, and when only our data and the nights' answers were read.
    public static let fromApple = "apple"
    public static let fromOurData = "our data and what the nights learned"

    /// `order`, `transaction`, `our_order` or `user`, and the id asked about.
    public var asked: String
    public var id: String
    /// `found` or `not_found` ("Apple has no such order / transaction for this app"); `not_asked`
    /// without Server API credentials.
    public var apple: String
    /// `apple` or `our data and what the nights learned` (`fromApple`, `fromOurData`).
    public var source: String
    /// `google_play` for a Play purchase (`play_order`, `play_token`); absent for the App Store's.
    public var store: String?
    /// `our_order`, `user`: whether our data knows the id (an order, receipt or grant names it).
    public var known: Bool?
    /// `user`: the days listed (`--days`) and the first instant of them.
    public var days: Int?
    public var since: String?
    public var transactions: [Item]
    /// `our_order`: the order; `user`: the user's orders created in the days listed.
    public var orders: [OrderItem]?
    /// The answer in sentences, one a line.
    public var lines: [String]

    enum CodingKeys: String, CodingKey {
        case asked, id, apple, source, store, known, days, since, transactions, orders
    }

    /// The line of an item: `TRANSACTION PRODUCT × N: verdict text`.
    static func line(_ item: Item) -> String {
        "\(item.transaction_id) \(item.product_id) × \(item.quantity): \(item.text)"
    }

    /// The first line of an answer without Apple.
    static let notAskedLine =
        "Apple was not asked (no App Store Server API key: IAP_ISSUER_ID, IAP_KEY_ID, IAP_PRIVATE_KEY_FILE): "
        + "this answer is from our data and what the nights learned from Apple"
}
