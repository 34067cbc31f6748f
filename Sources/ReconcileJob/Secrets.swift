import Foundation
import Postgres

/// The last guard before a line reaches stderr: any secret the process was given (the shared
/// secret, the database password from `DATABASE_URL` or `PGPASSWORD`) is replaced by `***`,
/// whichever error text carried it.
public enum Secrets {
    public static func redact(_ line: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        var secrets: [String] = []
        for name in ["IAP_SHARED_SECRET", "PGPASSWORD"] {
            if let v = environment[name], !v.isEmpty { secrets.append(v) }
        }
        if let url = environment["DATABASE_URL"], !url.isEmpty { secrets += passwords(in: url) }
        var out = line
        // Longest first, so a secret that contains another is replaced whole.
        for secret in Set(secrets).sorted(by: { $0.count > $1.count }) where secret.count >= 3 {
            out = out.replacingOccurrences(of: secret, with: "***")
        }
        return out
    }

    /// The password of a connection string as written and, for a URI, percent-decoded.
    static func passwords(in url: String) -> [String] {
        var found: [String] = []
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            let end = rest.firstIndex(of: "?") ?? rest.endIndex
            if let at = rest[..<end].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                let raw = String(rest[rest.index(after: colon)..<at])
                found.append(raw)
                if let decoded = raw.removingPercentEncoding { found.append(decoded) }
            }
        }
        var rest = Substring(url)
        while let r = rest.range(of: "password=") {
            let tail = rest[r.upperBound...]
            let value = tail.prefix { $0 != "&" && $0 != " " }
            let unquoted = value.hasPrefix("'") ? value.dropFirst().prefix { $0 != "'" } : value
            if !unquoted.isEmpty {
                found.append(String(unquoted))
                if let decoded = String(unquoted).removingPercentEncoding { found.append(decoded) }
            }
            rest = tail
        }
        return found
    }
}
