// Values the simulator's server and the data generator (SimulatorData) both use: spans of
// time in milliseconds and timestamps as COPY reads them.

import Reconciliation

/// Milliseconds.
package enum Span {
    /// One second, in milliseconds.
    package static let second: Int64 = 1000
    /// One minute.
    package static let minute: Int64 = 60_000
    /// One hour.
    package static let hour: Int64 = 3_600_000
    /// One day (UTC: no leap seconds).
    package static let day: Int64 = 86_400_000
}

extension UTC {
    /// `2026-11-21 03:08:45.123+00` for COPY into timestamptz.
    package static func sqlTimestamp(_ ms: Int64) -> String {
        var s = UTC.timestamp(ms)  // 2026-11-21T03:08:45Z
        s.removeLast()
        let frac = ((ms % 1000) + 1000) % 1000
        let f = String(frac)
        return s.replacingT() + "." + String(repeating: "0", count: 3 - f.count) + f + "+00"
    }
}

extension String {
    fileprivate func replacingT() -> String {
        var out = ""
        out.reserveCapacity(count)
        for ch in self { out.append(ch == "T" ? " " : ch) }
        return out
    }
}
