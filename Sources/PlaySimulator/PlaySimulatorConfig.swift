// How Google Play's simulator is set up: the truth it answers from, the service account whose
// assertions its token endpoint accepts, Google's limits (token lifetime, quotas), the Pub/Sub
// subscription its notifications are pulled from, the switches that make it behave as Google does
// on a bad day, and its clock.

import Foundation
import PlayStore
import _CryptoExtras

/// Everything `PlayService` needs; every field but the account has Google's default.
public struct PlaySimulatorConfig: Sendable {
    /// The purchases, voided records and notifications answered.
    public var truth: PlayTruth
    /// The service account's public key: an assertion must be signed by it.
    public var publicKey: _RSA.Signing.PublicKey
    /// The assertion's `iss`: the key file's `client_email`.
    public var clientEmail: String
    /// The assertion's `aud`: the key file's `token_uri` (Google's, although the token is asked
    /// of the simulator).
    public var tokenAudience: String
    /// `expires_in` of an access token, seconds (Google: 3600).
    public var tokenLifetimeSeconds: Int64 = 3600
    /// Calls per quota bucket ("One-time Purchases", "Orders") in any 60 s window (Google: 3,000).
    public var quotaPerMinute: Int = 3000
    /// Voided purchases calls per package in any `voidedWindowMs` (Google: 30 in 30 s)…
    public var voidedPerWindow: Int = 30
    /// The voided window's length, ms.
    public var voidedWindowMs: Int64 = 30_000
    /// …and per package a day, the day ending at midnight Pacific time (Google: 6,000).
    public var voidedPerDay: Int = 6000
    /// The packages the account may read (others: 403 permissionDenied); nil: every package of
    /// the truth.
    public var allowedPackages: Set<String>?
    /// Purchase tokens answered 410 purchaseTokenNoLongerValid.
    public var goneTokens: Set<String> = []
    /// Every assertion refused 400 invalid_grant (the key was deleted in the Cloud console).
    public var refuseAssertions = false
    /// Voided records' `voidedSource` and `voidedReason` as strings (`"0"`), as the Voided
    /// Purchases guide's sample shows them; numbers otherwise, as the reference does.
    public var stringEnums = false
    /// The Pub/Sub subscription the truth's notifications are pulled from, its full name
    /// (`projects/{project}/subscriptions/{id}`, see `isSubscriptionName`); nil: Pub/Sub is not
    /// served (its paths are 404).
    public var subscription: String?
    /// How long a pulled message stays leased before it is delivered again, seconds (Google: 10 by
    /// default, 10-600).
    public var ackDeadlineSeconds = 10
    /// Faults on demand.
    public var faults = PlayFaultPlan()
    /// Keep every call in `PlayService.calls` (the stats are kept either way).
    public var recordCalls = true
    /// Unix ms now; tests move it.
    public var now: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// Accepts the assertions of `account` (read from the key file the job uses).
    public init(serviceAccount account: ServiceAccount, truth: PlayTruth = PlayTruth()) {
        self.truth = truth
        publicKey = account.publicKey
        clientEmail = account.clientEmail
        tokenAudience = account.tokenURI
    }

    /// Reads the service-account key file (the job's own) for its public key, e-mail and token URI.
    public init(keyFile: [UInt8], truth: PlayTruth = PlayTruth()) throws(ServiceAccountProblem) {
        self.init(serviceAccount: try ServiceAccount(keyFile: keyFile), truth: truth)
    }
}
