// Whose purchase a transaction is (docs/rules.md "Whose purchase"), as an oracle for the tests. The
// night picks the owner in SQL, among millions of transactions at once (`who` and the `T` rows'
// first receipt: Attribution.swift); this is the rule said plainly, and RuleBookTests holds the
// SQL's pick to it on a generated night of every scenario.

import Reconciliation

/// Whose purchase a transaction is.
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
