// Google's quotas as the simulator keeps them ("Quotas"; "Voided Purchases API"): per bucket, at
// most N calls in any 60 s window (counted for the project: whether Google counts per app is
// unconfirmed); voided purchases per package, 30 calls in any 30 s and 6,000 a day (midnight
// Pacific). A refused call takes no room. And what a benchmark reads afterwards: the calls per
// endpoint and minute, the busiest 60 s window, the 429s sent.

import Foundation

/// Sliding windows of accepted calls.
struct PlayQuotas {
    /// Accepted calls' times (Unix ms), oldest first, per window key.
    private var windows: [String: [Int64]] = [:]
    /// Voided calls per package in the current Pacific day.
    private var days: [String: (day: Int64, count: Int)] = [:]
    private static let pacific =
        TimeZone(identifier: "America/Los_Angeles") ?? TimeZone(secondsFromGMT: -28_800) ?? .current

    /// Takes a place in `key`'s window of `windowMs` and `limit` calls; false (nothing taken) when full.
    mutating func admit(_ key: String, limit: Int, windowMs: Int64, now: Int64) -> Bool {
        var times = windows[key] ?? []
        let old = times.firstIndex { $0 > now - windowMs } ?? times.count
        if old > 0 { times.removeFirst(old) }
        defer { windows[key] = times }
        guard times.count < limit else { return false }
        times.append(now)
        return true
    }

    /// The voided purchases quota of `package`: the 30 s window, then the day.
    mutating func admitVoided(package: String, config: PlaySimulatorConfig, now: Int64) -> Bool {
        let offset = Int64(Self.pacific.secondsFromGMT(for: Date(timeIntervalSince1970: Double(now) / 1000))) * 1000
        let day = (now + offset).floorDivided(by: 86_400_000)
        var today = days[package] ?? (day, 0)
        if today.day != day { today = (day, 0) }
        guard today.count < config.voidedPerDay else { return false }
        guard admit("voided:" + package, limit: config.voidedPerWindow, windowMs: config.voidedWindowMs, now: now)
        else {
            return false
        }
        today.count += 1
        days[package] = today
        return true
    }
}

extension Int64 {
    fileprivate func floorDivided(by d: Int64) -> Int64 { self >= 0 ? self / d : -((-self + d - 1) / d) }
}

/// What the simulator has answered so far, for a benchmark's figures.
public struct PlayStats: Sendable, Equatable {
    /// Calls received per endpoint (answered, refused or faulted).
    public var calls: [PlayEndpoint: Int] = [:]
    /// Calls received per endpoint and minute (Unix ms / 60,000).
    public var callsPerMinute: [PlayEndpoint: [Int64: Int]] = [:]
    /// The most calls received for an endpoint in any 60 s window.
    public var busiestMinute: [PlayEndpoint: Int] = [:]
    /// 429s sent: over a quota, or a fault.
    public var tooManyRequests = 0
    /// Answers per HTTP status.
    public var statuses: [Int: Int] = [:]
}

/// The running counts behind `PlayStats`.
struct PlayCounters {
    private(set) var stats = PlayStats()
    /// Every call's time per endpoint, in order (for the busiest window).
    private var times: [PlayEndpoint: [Int64]] = [:]

    /// The number (0-based) this call of `endpoint` has.
    func number(_ endpoint: PlayEndpoint) -> Int { stats.calls[endpoint] ?? 0 }

    mutating func count(_ endpoint: PlayEndpoint?, status: Int, now: Int64) {
        stats.statuses[status, default: 0] += 1
        if status == 429 { stats.tooManyRequests += 1 }
        guard let endpoint else { return }
        stats.calls[endpoint, default: 0] += 1
        stats.callsPerMinute[endpoint, default: [:]][now / 60_000, default: 0] += 1
        times[endpoint, default: []].append(now)
    }

    /// The stats with the busiest 60 s window of each endpoint.
    var summary: PlayStats {
        var out = stats
        for (endpoint, list) in times {
            var best = 0
            var start = 0
            for (end, t) in list.enumerated() {
                while list[start] <= t - 60_000 { start += 1 }
                best = max(best, end - start + 1)
            }
            out.busiestMinute[endpoint] = best
        }
        return out
    }
}
