import Foundation
import Postgres

/// The last guard before a line reaches stderr: any secret the process was given (the shared
/// secret, the database password from `DATABASE_URL`, `SOURCE_DATABASE_URL` or `PGPASSWORD`) is replaced by `***`,
/// whichever error text carried it.
public enum Secrets {
    public static func redact(_ line: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        var secrets: [String] = []
        for name in ["IAP_SHARED_SECRET", "PGPASSWORD"] {
            if let v = environment[name], !v.isEmpty { secrets.append(v) }
        }
        for name in ["DATABASE_URL", "SOURCE_DATABASE_URL"] {
            if let url = environment[name], !url.isEmpty { secrets += passwords(in: url) }
        }
        var out = line
        // Longest first, so a secret that contains another is replaced whole.
        for secret in Set(secrets).sorted(by: { $0.count > $1.count }) where secret.count >= 3 {
            out = out.replacingOccurrences(of: secret, with: "***")
        }
        return out
    }

    /// The passwords of a connection string as written and, percent-decoded (as libpq uses them).
    static func passwords(in url: String) -> [String] {
        ConnectionString.passwordRanges(in: url).flatMap { range -> [String] in
            var value = String(url[range])
            if value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return [value] + (value.removingPercentEncoding.map { [$0] } ?? [])
        }.filter { !$0.isEmpty }
    }
}
