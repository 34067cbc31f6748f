// What the signed-data layer hands back: a rejection with its reason, or what a verified JWS says.

import Reconciliation

/// Why a JWS is not believed (contract §2: "a failed check is a definitive rejection with its
/// reason"). The texts are one short line; they quote at most 20 sanitized characters of the
/// input and never key material.
public enum SignedDataRejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a JWS as Apple signs it: segments, base64url, header, signature length, payload JSON or
    /// a field of the wrong type. The text names the part and the field.
    case malformed(String)
    /// The intermediate was not issued by any configured root (x5c[2] itself is never trusted, so a
    /// root that only looks like Apple's lands here).
    case unknownRoot
    /// The chain reaches a configured root but is not Apple's shape: the leaf not signed by the
    /// intermediate, a marker OID missing, a length other than 3, an RFC 5280 rule broken.
    case brokenChain(String)
    /// The chain is good, but the signature over `header.payload` is not the leaf's.
    case badSignature
    /// A certificate of the chain was not valid at the payload's `signedDate`.
    case expired(String)
    /// A genuine transaction of a bundle not in `IAP_BUNDLE_IDS`.
    case wrongBundle(String)

    /// The word the reports and the database keep.
    public var code: String {
        switch self {
        case .malformed: return "malformed"
        case .unknownRoot: return "unknown_root"
        case .brokenChain: return "broken_chain"
        case .badSignature: return "bad_signature"
        case .expired: return "expired"
        case .wrongBundle: return "wrong_bundle"
        }
    }

    public var description: String {
        switch self {
        case .malformed(let text): return "malformed: " + text
        case .unknownRoot: return "unknown_root: the chain does not lead to a configured root certificate"
        case .brokenChain(let text): return "broken_chain: " + text
        case .badSignature: return "bad_signature: the signature is not the leaf certificate's"
        case .expired(let text): return "expired: " + text
        case .wrongBundle(let text): return "wrong_bundle: " + text
        }
    }
}

/// A JWS whose chain, dates and signature were verified: the payload is what Apple signed.
public struct SignedObject: Sendable, Equatable {
    /// The payload's JSON bytes; already scanned strictly (one object, no repeated key, valid UTF-8).
    public var payload: [UInt8]
    /// The payload's `signedDate` (UNIX ms), at which the chain was judged.
    public var signedDate: EpochMillis

    public init(payload: [UInt8], signedDate: EpochMillis) {
        self.payload = payload
        self.signedDate = signedDate
    }
}

/// A verified StoreKit 2 transaction (JWSTransactionDecodedPayload): the fields the job decides
/// with, as an `AppleTransaction`, and every other field it may report, as Apple wrote them.
public struct SignedTransaction: Sendable, Equatable {
    /// `environment` maps to production only for `Production` (contract §2: every other
    /// environment counts as sandbox). `cancellationDate` / `cancellationReason` are the
    /// revocation's only when it is a refund: `revocationType` absent, REFUND_FULL or
    /// REFUND_PRORATED (a FAMILY_REVOKE returns no money; contract §4 `family_revoked`).
    public var transaction: AppleTransaction
    /// `environment` as signed: `Production`, `Sandbox`, `Xcode`, `LocalTesting`, …
    public var environmentName: String
    /// UNIX ms.
    public var signedDate: EpochMillis
    /// `Consumable`, `Non-Consumable`, `Auto-Renewable Subscription`, `Non-Renewing Subscription`.
    public var type: String
    /// Milliunits of `currency`, quantity and offers included (not revenue).
    public var price: Int64?
    /// ISO 4217, three upper-case letters.
    public var currency: String?
    /// Three-letter storefront code, e.g. `USA`.
    public var storefront: String?
    public var storefrontID: String?
    /// The UUID the app set at purchase (the job's `order_id` when it set one).
    public var appAccountToken: String?
    /// `PURCHASED`, `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    /// `PURCHASE`, `RENEWAL`.
    public var transactionReason: String?
    /// UNIX ms.
    public var revocationDate: EpochMillis?
    /// 0: another reason (e.g. an accidental purchase); 1: an issue in the app.
    public var revocationReason: Int?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Milliunits of a percent, 0…100000.
    public var revocationPercentage: Int?

    public init(transaction: AppleTransaction, environmentName: String, signedDate: EpochMillis, type: String,
                price: Int64? = nil, currency: String? = nil, storefront: String? = nil, storefrontID: String? = nil,
                appAccountToken: String? = nil, inAppOwnershipType: String? = nil, transactionReason: String? = nil,
                revocationDate: EpochMillis? = nil, revocationReason: Int? = nil, revocationType: String? = nil,
                revocationPercentage: Int? = nil) {
        self.transaction = transaction
        self.environmentName = environmentName
        self.signedDate = signedDate
        self.type = type
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.storefrontID = storefrontID
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.transactionReason = transactionReason
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
    }
}
