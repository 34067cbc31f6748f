import Reconciliation

/// Everything a run needs, gathered from options and environment by the command.
public struct JobSettings: Sendable {
    public var asOf: EpochMillis
    public var windowDays = 30
    public var refundWindowDays = 90
    public var sweepLimit = 1000
    public var concurrency = 16
    public var sourceSchema = "public"
    public var jobSchema: JobSchema
    public var out = "reports"
    public var timeoutMs = 15_000
    public var maxAttempts = 4
    public var retryBaseMs = 500
    public var retryDelayMinutes = 10
    public var sweepIntervalHours = 20
    public var productionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public var sandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
    /// `$IAP_SHARED_SECRET`. Never printed: `description` of this struct leaves it out.
    public var sharedSecret: String?
    public var bundleIDs: Set<String> = []
    /// `$DATABASE_URL` when set and not empty (may hold a password: never printed); nil: libpq's
    /// own variables (`PGHOST`, …).
    public var databaseURL: String?
    public var progress = true
    /// `--lock-wait-seconds`: how long a run waits for another run's lock before exit 75.
    public var lockWaitSeconds = 5
    /// A deliberate fault for the tests (hidden option): the conservation tally of this source
    /// relation loses one row, so the check must fail with exit 70.
    public var faultDropTallyRow: String?

    public init(asOf: EpochMillis, jobSchema: JobSchema) {
        self.asOf = asOf
        self.jobSchema = jobSchema
    }

    var windowStart: EpochMillis { asOf - EpochMillis(windowDays) * 86_400_000 }
}

extension JobSettings: CustomStringConvertible {
    public var description: String {
        "JobSettings(asOf: \(UTC.timestamp(asOf)), windowDays: \(windowDays), concurrency: \(concurrency), "
            + "sharedSecret: \(sharedSecret == nil ? "unset" : "set"))"
    }
}
