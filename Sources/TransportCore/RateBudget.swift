import AppStore
import DequeModule
import Reconciliation

/// The job's own rate budget for the App Store Server API (contract §3b): at most `limit`
/// requests to one endpoint in one environment within any window of a second (plus a margin),
/// and nothing before the time of a 429's `Retry-After`. Shared by every request in flight of
/// the loop that owns it (one thread: no lock).
///
/// Apple counts a request when it arrives, somewhere between our send and its answer, so a budget
/// paced at send time alone let the network bunch requests into Apple's window (`make bench-api`
/// saw more in a second than the limit). A request therefore counts from the moment it is
/// sent until a window after its answer: a new one goes only while fewer than `limit` are in
/// flight or answered within the last window. Whatever moment Apple counts each at, no window of
/// Apple's can then hold more than `limit`. Apple's published limits are kept at 90% by default
/// (`safety`); `--api-rate` is taken as given.
///
/// App Store Connect says what is left of a key's hourly allowance in every answer
/// (`X-Rate-Limit`, `HourlyAllowance`): once no more than a tenth of it is left (the same 90%),
/// nothing more goes to that endpoint for a minute, then requests go again and their answers say.
package struct RateBudget {
    /// Apple's limits are per app (the token's `bid`) and environment: so is the budget.
    struct Key: Hashable, Sendable {
        var budget: AppStoreBudget
        var environment: AppStoreEnvironment
        /// The app of a Server API request; nil for App Store Connect (per key).
        var app: String?

        init(budget: AppStoreBudget, environment: AppStoreEnvironment, app: String? = nil) {
            (self.budget, self.environment, self.app) = (budget, environment, app)
        }
        init(endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment, app: String? = nil) {
            self.init(budget: endpoint.budget, environment: environment, app: app)
        }
    }

    /// Requests per second in production per budget name (`--api-rate`, taken as given).
    let rates: [String: Double]
    /// The window, on the monotonic clock: one second and 1% more.
    static let windowNs: UInt64 = 1_010_000_000
    /// The share of Apple's published limit the job uses when `--api-rate` does not say.
    package static let safety = 0.9
    /// The share of Apple's published limits this run uses where `rates` does not say: `safety`
    /// for the night, `--share-percent` for `respond` (the two together stay within Apple's).
    let share: Double

    /// Requests sent and not answered yet, per key.
    private var inFlight: [Key: Int] = [:]
    /// Monotonic answer times within the current window, per key (oldest first).
    private var answered: [Key: Deque<UInt64>] = [:]
    /// Monotonic time before which nothing goes to the key (a 429's Retry-After).
    private var blocked: [Key: UInt64] = [:]
    /// App Store Connect: the hourly allowance its last answer reported, counted down by each
    /// request sent since.
    private var hourly: [Key: HourlyAllowance] = [:]
    /// How long an endpoint whose hourly allowance ran low waits before it asks again.
    package static let hourlyPauseNs: UInt64 = 60_000_000_000
    /// This budget's pause (`hourlyPauseNs`; a test shortens it).
    var hourlyPause = RateBudget.hourlyPauseNs

    /// `rates` per Server API endpoint (`--api-rate`), `named` per budget name (Google Play's
    /// buckets: `--play-rate`), each requests per second, taken as given.
    init(rates: [ServerAPIEndpoint: Double], named: [String: Double] = [:], share: Double = RateBudget.safety) {
        self.share = share
        self.rates = named.merging(rates.map { ($0.key.rawValue, $0.value) }) { $1 }
    }

    /// Requests a window holds for `key`: `--api-rate`, else 90% of Apple's; a tenth in the sandbox.
    func limit(_ key: Key) -> Int {
        let rate = rates[key.budget.name] ?? key.budget.appleRate * share
        // Apple's sandbox allows a tenth of production.
        return max(1, Int((key.environment == .production ? rate : rate / 10).rounded(.down)))
    }

    /// nil when a request to `key` may go now (it is then counted as in flight until `answered`);
    /// else the monotonic time to ask again (when an answer leaves the window, or soon when every
    /// place is taken by a request still in flight: its answer frees it).
    mutating func admit(_ key: Key, now: UInt64) -> UInt64? {
        if let until = blocked[key] {
            if now < until { return until }
            blocked[key] = nil
        }
        if let allowance = hourly[key] {
            if allowance.remaining <= allowance.limit - Int((Double(allowance.limit) * Self.safety).rounded(.down)) {
                // Low: a pause, then one request's answer says again what is left.
                hourly[key] = nil
                blocked[key] = now &+ hourlyPause
                return now &+ hourlyPause
            }
            hourly[key]?.remaining -= 1
        }
        var times = answered[key] ?? []
        while let first = times.first, now >= first &+ Self.windowNs { times.removeFirst() }
        answered[key] = times
        let limit = self.limit(key)
        let flying = inFlight[key] ?? 0
        let over = flying + times.count - limit + 1
        if over > 0 {
            // The `over`-th oldest answer must leave the window; with none to leave, an answer must come.
            return over <= times.count ? times[over - 1] &+ Self.windowNs : now &+ 5_000_000
        }
        inFlight[key] = flying + 1
        return nil
    }

    /// The request admitted for `key` ended (an answer, or a failure with none): it stays counted
    /// for a window from now.
    mutating func answered(_ key: Key, now: UInt64) {
        inFlight[key] = max(0, (inFlight[key] ?? 0) - 1)
        answered[key, default: []].append(now)
    }

    /// An answer to `key` reported its hourly allowance (App Store Connect's `X-Rate-Limit`).
    mutating func report(_ allowance: HourlyAllowance, for key: Key) {
        hourly[key] = allowance
    }

    /// A 429 said: nothing to `key` before `untilUnixMs` (converted to the monotonic clock with
    /// the two clocks read now). A later Retry-After never shortens an earlier one.
    mutating func block(_ key: Key, untilUnixMs: Int64, nowUnixMs: Int64, now: UInt64) {
        let waitNs = UInt64(max(0, untilUnixMs - nowUnixMs)) * 1_000_000
        blocked[key] = max(blocked[key] ?? 0, now &+ waitNs)
    }
}
