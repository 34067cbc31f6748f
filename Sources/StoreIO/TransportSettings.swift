import AppStore
import TransportCore

/// StoreIO's slice of a run's settings: what `AppStoreTransport` needs to reach Apple (its URLs
/// and keys, the retry policy, `--concurrency`, `--timeout-ms`, `--api-rate`). `JobSettings.transport`
/// carries it; the defaults are stated here once.
public struct TransportSettings: Sendable {
    /// `--concurrency`: requests in flight at most.
    public var concurrency = 16
    /// `--play-rate`: requests per second per Google Play budget name (`PlayRows`), as given.
    public var playRates: [String: Double] = [:]
    /// `--timeout-ms`: one request's limit.
    public var timeoutMs = 15_000
    /// `--max-attempts`, `--retry-base-ms`, `--retry-delay-minutes`: the retry policy.
    public var maxAttempts = 4
    public var retryBaseMs = 500
    public var retryDelayMinutes = 10
    /// verifyReceipt's URLs (`IAP_VERIFY_URL_PRODUCTION`, `IAP_VERIFY_URL_SANDBOX`).
    public var productionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public var sandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
    /// The Server API client's settings once its key was read; nil: not configured.
    public package(set) var serverAPI: ServerAPISettings?
    /// The App Store Connect API's settings once the team key was read; nil: no sales reports.
    public package(set) var appStoreConnect: AppStoreConnectSettings?
    /// Google Play's settings once its key was read (`PlaySettings.load`); nil: no Play.
    public package(set) var play: PlaySettings?
    /// The night's apps as the transport meets them (requests per app, refused keys); set by the
    /// night once the Server API is configured.
    public package(set) var nightApps: NightApps?

    public init() {}
}
