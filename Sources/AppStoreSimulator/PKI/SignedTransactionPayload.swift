// What the simulator signs as a StoreKit 2 transaction (Apple's JWSTransactionDecodedPayload,
// with Apple's field names), and the hostile uploads the generator makes from it.

import AppStore
import Foundation
import X509

/// Apple's transaction payload. Dates are UNIX ms; ids are strings, as Apple sends them.
public struct SignedTransactionPayload: Codable, Sendable, Equatable {
    public static let consumable = "Consumable"
    public static let nonConsumable = "Non-Consumable"
    public static let autoRenewable = "Auto-Renewable Subscription"
    public static let nonRenewing = "Non-Renewing Subscription"

    public var transactionId: String
    public var originalTransactionId: String
    public var webOrderLineItemId: String?
    public var bundleId: String
    public var productId: String
    public var purchaseDate: Int64
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int
    /// One of the four static names above.
    public var type: String
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    public var signedDate: Int64
    /// `Production`, `Sandbox`, `Xcode`, `LocalTesting`.
    public var environment: String
    /// `PURCHASE` or `RENEWAL`.
    public var transactionReason: String?
    public var storefront: String?
    public var storefrontId: String?
    /// Milliunits of `currency`.
    public var price: Int64?
    public var currency: String?
    public var appAccountToken: String?
    public var revocationDate: Int64?
    public var revocationReason: Int?
    /// `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String?
    /// Milliunits of a percent, 0…100000.
    public var revocationPercentage: Int?

    public init(transactionId: String, originalTransactionId: String? = nil, webOrderLineItemId: String? = nil,
                bundleId: String, productId: String, purchaseDate: Int64, originalPurchaseDate: Int64? = nil,
                expiresDate: Int64? = nil, quantity: Int = 1, type: String, inAppOwnershipType: String? = "PURCHASED",
                signedDate: Int64, environment: String = "Production", transactionReason: String? = "PURCHASE",
                storefront: String? = "USA", storefrontId: String? = "143441", price: Int64? = nil,
                currency: String? = nil, appAccountToken: String? = nil, revocationDate: Int64? = nil,
                revocationReason: Int? = nil, revocationType: String? = nil, revocationPercentage: Int? = nil) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId ?? transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate ?? purchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.environment = environment
        self.transactionReason = transactionReason
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.price = price
        self.currency = currency
        self.appAccountToken = appAccountToken
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
    }

    /// The JSON bytes (sorted keys, absent fields left out). Our own output, so JSONEncoder is fine;
    /// it fails only on non-finite floating-point numbers, and this payload has none.
    public func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            return Array(try encoder.encode(self))
        } catch {
            fatalError("SignedTransactionPayload cannot be encoded: \(error)")
        }
    }
}

// MARK: Hostile uploads

extension TestPKI {
    /// `jws` with its payload replaced after signing (the signature no longer matches): bad_signature.
    public func tampered(_ jws: String, payload: SignedTransactionPayload) -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return jws }
        return String(parts[0]) + "." + ES256Signer.base64URL(payload.json()) + "." + String(parts[2])
    }

    /// `jws` with its signature re-encoded as DER (what a careless JOSE library sends): malformed.
    public func withDERSignature(_ jws: String) -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return jws }
        let input = String(parts[0]) + "." + String(parts[1])
        guard let der = try? leafKey.signature(for: Array(input.utf8)).derRepresentation else { return jws }
        return input + "." + ES256Signer.base64URL(Array(der))
    }

    /// Another PKI, unknown to the job: everything it signs is unknown_root.
    public static func stranger(now: Date = Date()) throws -> TestPKI {
        try create(now: now, names: try Names.simulator("IAP Stranger"))
    }

    /// A PKI with this one's names but its own keys: its root has the trusted root's subject and
    /// another key, so what it signs must be unknown_root however alike the chains look.
    public func impostor(now: Date = Date()) throws -> TestPKI {
        try Self.create(now: now, names: Names(root: root.subject, intermediate: intermediate.subject, leaf: leaf.subject))
    }
}

/// An App Store storefront a simulated purchase was made in: its code, Apple's id for it, and the
/// currency Apple signs prices in there. Which storefront a transaction was bought in is a fact
/// the generator decides once and writes into the Apple truth (`storefront`, with `price` and
/// `currency`); the simulator signs what the truth says.
public struct SimStorefront: Sendable, Equatable {
    public var code, id, currency: String

    public static let usa = SimStorefront(code: "USA", id: "143441", currency: "USD")
    public static let all = [usa, SimStorefront(code: "JPN", id: "143462", currency: "JPY"),
                             SimStorefront(code: "DEU", id: "143443", currency: "EUR")]

    /// The storefront of a code; nil for one the simulator does not have.
    public static func named(_ code: String) -> SimStorefront? { all.first { $0.code == code } }
}
