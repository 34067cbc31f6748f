// Rate limits of the simulated App Store Server API: per endpoint, environment and app (the
// token's `bid`: one app's requests never take another's room), over a sliding one-second window. Apple's production numbers by default, a tenth in the sandbox
// (Apple's published limits). A request over the limit gets 429 and `Retry-After`: the UNIX
// time in milliseconds when the window has room again. Refused requests take no room.

import AppStore
import Foundation
import Reconciliation

/// The Server API endpoints the simulator serves: the job's own list (their raw values name them
/// in `--api-rate`, in the call log and in `SimCall.endpoint`).
public typealias SimAPIEndpoint = ServerAPIEndpoint

extension ServerAPIEndpoint {
    /// Parses `--api-rate ENDPOINT=N` (N ≥ 0; 0 = no limit).
    public static func parseRate(_ text: String) -> (ServerAPIEndpoint, Int)? {
        let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
        guard parts.count == 2, let endpoint = ServerAPIEndpoint(rawValue: parts[0]), let n = Int(parts[1]), n >= 0 else {
            return nil
        }
        return (endpoint, n)
    }
}

/// What the simulator serves under `/inApps/`: the job's five Server API endpoints, and Send
/// Consumption Information (its own budget, `AppStoreBudget.consumption`: 50 a second).
enum SimRoute: Hashable {
    case api(SimAPIEndpoint)
    case consumption

    /// How the call log, the fault keys and the rate limits name it.
    var name: String {
        switch self {
        case .api(let e): return e.rawValue
        case .consumption: return AppStoreBudget.consumption.name
        }
    }

    var method: String {
        switch self {
        case .api(.notificationHistory): return "POST"
        case .api: return "GET"
        case .consumption: return "PUT"
        }
    }

    /// Apple's production requests per second.
    var appleRate: Int {
        switch self {
        case .api(let e): return Int(e.appleRate)
        case .consumption: return Int(AppStoreBudget.consumption.appleRate)
        }
    }
}

final class RateLimiter: @unchecked Sendable {
    /// One window: an endpoint, an environment and an app (Apple counts each app's requests apart).
    struct Key: Hashable {
        var route: SimRoute
        var environment: AppStoreEnvironment
        /// The token's `bid`.
        var bundle: String

        init(route: SimRoute, environment: AppStoreEnvironment, bundle: String = "") {
            self.route = route
            self.environment = environment
            self.bundle = bundle
        }

        init(endpoint: SimAPIEndpoint, environment: AppStoreEnvironment, bundle: String = "") {
            self.init(route: .api(endpoint), environment: environment, bundle: bundle)
        }
    }

    private let lock = NSLock()
    /// Production requests per second per route (0 = unlimited).
    private let production: [SimRoute: Int]
    /// Accepted requests' times (UNIX ms) within the last second, oldest first.
    private var windows: [Key: [Int64]] = [:]

    /// `consumption`: Send Consumption Information's production rate (nil: Apple's 50).
    init(production: [SimAPIEndpoint: Int], consumption: Int? = nil) {
        var rates: [SimRoute: Int] = [:]
        for e in SimAPIEndpoint.allCases { rates[.api(e)] = production[e] ?? Int(e.appleRate) }
        rates[.consumption] = consumption ?? SimRoute.consumption.appleRate
        self.production = rates
    }

    /// Requests per second allowed for `key`; nil = unlimited. The sandbox gets a tenth (at least 1).
    func limit(_ key: Key) -> Int? {
        let n = production[key.route] ?? key.route.appleRate
        guard n > 0 else { return nil }
        return key.environment == .production ? n : max(1, n / 10)
    }

    /// nil when the request at `nowMs` may go ahead (it takes a place in the window); otherwise
    /// the UNIX ms time when the window has room again (always after `nowMs`).
    func admit(_ key: Key, nowMs: Int64) -> Int64? {
        guard let limit = limit(key) else { return nil }
        return lock.locked {
            var times = windows[key] ?? []
            var drop = 0
            while drop < times.count, times[drop] <= nowMs - 1000 { drop += 1 }
            if drop > 0 { times.removeFirst(drop) }
            defer { windows[key] = times }
            guard times.count >= limit else {
                times.append(nowMs)
                return nil
            }
            // The window frees when its oldest request is a full second old.
            return max(times[times.count - limit] + 1000, nowMs + 1)
        }
    }
}
