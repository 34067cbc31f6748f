// The request for one day's Summary Sales Report (`GET /v1/salesReports`)
// and how App Store Connect's error bodies are read: `{"errors":[{"status":"400","detail":"…"}]}`.
// No I/O.

import StrictJSON
import Reconciliation

public enum SalesReportRequest {
    /// The version Apple's reference names for SALES/SUMMARY (its help page says 1_3: a 400 that
    /// names another is followed, once a night).
    public static let firstVersion = "1_0"

    /// The daily SALES SUMMARY report of `vendorNumber` for `day`, in `version`.
    public static func request(vendorNumber: String, day: ReportDay, version: String) -> AppStoreRequest {
        AppStoreEndpoints.salesReports.request(in: .production, query: [
            ("filter[frequency]", "DAILY"), ("filter[reportType]", "SALES"), ("filter[reportSubType]", "SUMMARY"),
            ("filter[vendorNumber]", vendorNumber), ("filter[reportDate]", day.text), ("filter[version]", version),
        ])
    }

    /// The version a request made by `request` asked for.
    public static func version(of request: AppStoreRequest) -> String? {
        let marker = ServerAPI.queryEscaped("filter[version]") + "="
        guard let range = request.path.range(of: marker) else { return nil }
        return String(request.path[range.upperBound...].prefix { $0 != "&" })
    }

    /// `1_0`, `1_3`: digits, an underscore, digits (what may go back into a query).
    public static func isVersion(_ s: String) -> Bool {
        let parts = s.split(separator: "_", omittingEmptySubsequences: false)
        return s.utf8.count <= 10 && parts.count == 2
            && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
    }

    /// The version a 400's detail names ("… The latest version for this report is 1_1."), nil
    /// when it names none.
    public static func latestVersion(inDetail detail: String) -> String? {
        guard let range = detail.range(of: "latest version for this report is ") else { return nil }
        let rest = detail[range.upperBound...].prefix { $0 != "." && $0 != " " && $0 != "," && $0 != "\"" }
        let version = String(rest)
        return isVersion(version) ? version : nil
    }

    /// The `detail` (else `title`) of the first error of an App Store Connect error body, at most
    /// 200 characters; nil when the body is not one.
    public static func errorDetail(_ body: [UInt8]) -> String? {
        body.withUnsafeBufferPointer { buffer -> String? in
            guard let doc = try? JSONDocument(buffer), doc.kind(0) == .object else { return nil }
            var found: String?
            doc.forEachMember(of: 0) { key, value in
                guard found == nil, doc.keyIs(key, "errors"), doc.kind(value) == .array else { return }
                doc.forEachElement(of: value) { _, error in
                    guard found == nil, doc.kind(error) == .object else { return }
                    var detail: String?, title: String?
                    doc.forEachMember(of: error) { k, v in
                        if doc.keyIs(k, "detail"), doc.isString(v) { detail = doc.text(v) }
                        if doc.keyIs(k, "title"), doc.isString(v) { title = doc.text(v) }
                    }
                    found = detail ?? title
                }
            }
            return found.map { String($0.prefix(200)) }
        }
    }
}
