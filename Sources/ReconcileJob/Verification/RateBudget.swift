import AppStore
import DequeModule
import Reconciliation

/// The job's own rate budget for the App Store Server API (contract §3b): at most `limit`
/// requests to one endpoint in one environment within any window of a second (plus a margin, so
/// the moment Apple counts a request at, after the network, stays inside its own window), and
/// nothing before the time of a 429's `Retry-After`. Shared by every request in flight of the
/// request loop that owns it (one thread: no lock).
struct RateBudget {
    struct Key: Hashable, Sendable {
        var endpoint: ServerAPIEndpoint
        var environment: AppStoreEnvironment
    }

    /// Requests per second per key (sandbox keys included).
    let limits: [Key: Int]
    /// The window, on the monotonic clock: one second and 1% more.
    static let windowNs: UInt64 = 1_010_000_000

    /// Monotonic send times within the current window, per key.
    private var sent: [Key: Deque<UInt64>] = [:]
    /// Monotonic time before which nothing goes to the key (a 429's Retry-After).
    private var blocked: [Key: UInt64] = [:]

    init(rates: [ServerAPIEndpoint: Double]) {
        var limits: [Key: Int] = [:]
        for endpoint in ServerAPIEndpoint.allCases {
            let rate = rates[endpoint] ?? endpoint.appleRate
            limits[Key(endpoint: endpoint, environment: .production)] = max(1, Int(rate.rounded(.down)))
            // Apple's sandbox allows a tenth of production.
            limits[Key(endpoint: endpoint, environment: .sandbox)] = max(1, Int((rate / 10).rounded(.down)))
        }
        self.limits = limits
    }

    /// nil when a request to `key` may go now (and it is counted as sent); else the monotonic
    /// time to ask again.
    mutating func admit(_ key: Key, now: UInt64) -> UInt64? {
        if let until = blocked[key] {
            if now < until { return until }
            blocked[key] = nil
        }
        var times = sent[key] ?? []
        while let first = times.first, now >= first &+ Self.windowNs { times.removeFirst() }
        let limit = limits[key] ?? 1
        if times.count >= limit {
            sent[key] = times
            return times[times.count - limit] &+ Self.windowNs
        }
        times.append(now)
        sent[key] = times
        return nil
    }

    /// A 429 said: nothing to `key` before `untilUnixMs` (converted to the monotonic clock with
    /// the two clocks read now). A later Retry-After never shortens an earlier one.
    mutating func block(_ key: Key, untilUnixMs: Int64, nowUnixMs: Int64, now: UInt64) {
        let waitNs = UInt64(max(0, untilUnixMs - nowUnixMs)) * 1_000_000
        blocked[key] = max(blocked[key] ?? 0, now &+ waitNs)
    }
}
