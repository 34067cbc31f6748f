// Whose purchase a transaction is (docs/rules.md "Whose purchase"). The night's SQL gathers the
// candidates (the `T` rows' first receipt, `who`: Attribution.swift) and, for speed, picks among
// them itself; a test compares its pick with these functions on generated data.

public enum Owner {
    /// A transaction's user: the uploader of its receipt, else the user of the order its
    /// `appAccountToken` names, else the user on whose behalf transaction history returned it, else
    /// the family's first claimant (`familyUser`). Nil: nobody (never compensated).
    public static func of(receiptUploader: String?, tokenOrderUser: String?, historyUser: String?,
                          familyUser: String?) -> String? {
        receiptUploader ?? tokenOrderUser ?? historyUser ?? familyUser
    }

    /// An upload (`iap_receipts`) or a grant that names a transaction of the family.
    public struct Claim: Sendable, Equatable {
        public var userID: String
        public var isUpload: Bool
        /// `submitted_at` of an upload, `granted_at` of a grant.
        public var at: EpochMillis
        /// The receipt or grant id.
        public var id: String

        public init(userID: String, isUpload: Bool, at: EpochMillis, id: String) {
            self.userID = userID
            self.isUpload = isUpload
            self.at = at
            self.id = id
        }
    }

    /// The family's user: the earliest upload (by time, then id in byte order), else the earliest
    /// grant.
    public static func familyUser(_ claims: [Claim]) -> String? {
        claims.min { a, b in
            if a.isUpload != b.isUpload { return a.isUpload }
            if a.at != b.at { return a.at < b.at }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }?.userID
    }
}
