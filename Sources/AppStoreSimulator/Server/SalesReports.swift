// App Store Connect's `GET /v1/salesReports`, as Apple documents it, served at
// the root of the simulator (the job's ASC_API_URL is
// `http://127.0.0.1:PORT`) with `iap-sim serve --connect-key`. Only the daily Summary Sales
// Report: DAILY / SALES / SUMMARY.
//
// What a request goes through, in order:
//   1. the team key's bearer JWT (`ConnectCredentials`: ES256 by --connect-key, kid
//      --connect-key-id, iss --connect-issuer, aud appstoreconnect-v1, no bid, exp in the future
//      and at most 1200 s after iat): else 401 NOT_AUTHORIZED (the reason in the call log);
//   2. the key's hourly budget (--connect-hour-limit over a rolling hour): none left, 429
//      RATE_LIMIT_EXCEEDED (a refused request takes no room);
//   3. --connect-forbidden: 403 FORBIDDEN_ERROR (a key whose role may not read sales);
//   4. the parameters: another frequency, report type or sub-type, a vendor number other than
//      --connect-vendor (Apple's "invalid vendor number", so 400 rather than 403), a report date
//      that is not a real YYYY-MM-DD: 400 PARAMETER_ERROR.INVALID; a version other than the one
//      served (--sales-report-version), or none: 400 naming the one served;
//   5. the day: not published yet (08:00 America/Los_Angeles the day after, by the wall clock) or
//      without sales: 404 NOT_FOUND "There were no sales for the date specified."; else 200, the
//      report gzipped (`application/a-gzip`, SalesReportFile.swift).
// Without `filter[reportDate]` the latest day published is answered (Apple: DAILY needs no date).
// Every answer carries `X-Rate-Limit: user-hour-lim:L;user-hour-rem:R;` (a 401's: the
// configured key's budget, untouched). The call log names the endpoint `sales_reports`.

import Foundation
import Reconciliation

/// How the sales reports are served (`iap-sim serve --connect-*`, `--sales-report-*`).
public struct SalesReportConfig: Sendable {
    /// The team key a token must be made with.
    public var credentials: ConnectCredentials
    /// `filter[vendorNumber]` must be this.
    public var vendorNumber: String
    /// The report's version (`filter[version]`): another, or none, is a 400 naming this one.
    public var version: String
    /// The zone whose calendar days the reports cover.
    public var timeZone: TimeZone
    /// Requests per key over a rolling hour.
    public var hourLimit: Int
    /// Every answer 403 (a key not allowed to read sales reports).
    public var forbidden: Bool
    /// What Apple sold: the same truth the Server API answers from.
    public var truth: AppleTruth
    /// The apps whose sales are reported; the n-th one's Apple ID is `appAppleID + n`.
    public var bundleIDs: [String]
    public var appAppleID: Int64

    public init(credentials: ConnectCredentials, vendorNumber: String, truth: AppleTruth, bundleIDs: [String],
                version: String = "1_0", timeZone: TimeZone = TimeZone(identifier: "America/Los_Angeles")!,
                hourLimit: Int = 3500, forbidden: Bool = false, appAppleID: Int64 = 1_258_428_153) {
        self.credentials = credentials
        self.vendorNumber = vendorNumber
        self.version = version
        self.timeZone = timeZone
        self.hourLimit = hourLimit
        self.forbidden = forbidden
        self.truth = truth
        self.bundleIDs = bundleIDs
        self.appAppleID = appAppleID
    }
}

/// The sales reports' state: the report book and each key's requests of the last hour.
final class SalesReportService: @unchecked Sendable {
    let config: SalesReportConfig
    let book: SalesReportBook
    private let lock = NSLock()
    /// Accepted requests' times (UNIX ms) per key id within the last hour, oldest first.
    private var hour: [String: [Int64]] = [:]

    static let endpoint = "sales_reports"
    static let path = "/v1/salesReports"

    /// The consumption outcomes of the Server API's state (nil: not served): the refunds they make
    /// show in the day's report.
    let consumption: ConsumptionLedger?

    init(config: SalesReportConfig, consumption: ConsumptionLedger? = nil) {
        self.config = config
        self.consumption = consumption
        book = SalesReportBook(truth: config.truth, bundleIDs: config.bundleIDs, appAppleID: config.appAppleID,
                               timeZone: config.timeZone)
    }

    /// Takes a place in `key`'s hour at `nowMs` when one is left: the places left after it, or nil
    /// (none left: the request takes no place).
    func admit(key: String, nowMs: Int64) -> Int? {
        lock.locked {
            var times = hour[key] ?? []
            var drop = 0
            while drop < times.count, times[drop] <= nowMs - Span.hour { drop += 1 }
            if drop > 0 { times.removeFirst(drop) }
            defer { hour[key] = times }
            guard times.count < config.hourLimit else { return nil }
            times.append(nowMs)
            return config.hourLimit - times.count
        }
    }

    /// The places left in `key`'s hour, taking none.
    func remaining(key: String, nowMs: Int64) -> Int {
        lock.locked { config.hourLimit - (hour[key] ?? []).filter { $0 > nowMs - Span.hour }.count }
    }

    func rateHeader(remaining: Int) -> (String, String) {
        ("X-Rate-Limit", "user-hour-lim:\(config.hourLimit);user-hour-rem:\(max(0, remaining));")
    }

    /// The rows refunded on `day` by a consumption outcome, each outcome decided now if it was not
    /// yet (the day has ended: see `SalesReportBook.outcomes(on:)`).
    func outcomeRefunds(on day: String) -> [Int] {
        guard let consumption else { return [] }
        return book.outcomes(on: day).filter { i in
            let row = book.truth.rows[i]
            guard let request = row.consumptionRequest else { return false }
            return consumption.decide(row, request: request) == .refund
        }
    }

    /// The answer to one request at `nowMs`.
    func answer(_ request: APIRequest, nowMs: Int64) -> APIAnswer {
        let key = config.credentials.keyID
        guard request.method == "GET" else {
            return APIAnswer(status: 405, contentType: "text/plain",
                             headers: [("Allow", "GET"), rateHeader(remaining: remaining(key: key, nowMs: nowMs))],
                             body: Array("Method Not Allowed".utf8), outcome: "405")
        }
        if case .failure(let reason) = config.credentials.check(authorization: request.authorization,
                                                                 nowSeconds: nowMs / 1000) {
            var a = Self.error(401, "NOT_AUTHORIZED", "Authentication credentials are missing or invalid.",
                               "Provide a properly configured and signed bearer token, and make sure that it has not expired.")
            a.outcome = "401:" + reason.rawValue
            a.headers = [rateHeader(remaining: remaining(key: key, nowMs: nowMs))]
            return a
        }
        guard let left = admit(key: key, nowMs: nowMs) else {
            var a = Self.error(429, "RATE_LIMIT_EXCEEDED", "The request rate limit has been reached.",
                               "We've received too many requests for this API. Please wait and try again or slow down your request rate.")
            a.headers = [rateHeader(remaining: 0)]
            return a
        }
        var a = decide(request, nowMs: nowMs)
        a.headers.append(rateHeader(remaining: left))
        return a
    }

    /// An authorized, admitted request's answer.
    private func decide(_ request: APIRequest, nowMs: Int64) -> APIAnswer {
        if config.forbidden {
            return Self.error(403, "FORBIDDEN_ERROR", "This request is forbidden for security reasons",
                              "The API key in use does not allow this request")
        }
        func one(_ name: String) -> String? {
            let v = request.values("filter[\(name)]")
            return v.count == 1 ? v[0] : nil
        }
        func invalid(_ detail: String) -> APIAnswer {
            Self.error(400, "PARAMETER_ERROR.INVALID", "A parameter has an invalid value", detail)
        }
        for (name, wanted) in [("frequency", "DAILY"), ("reportType", "SALES"), ("reportSubType", "SUMMARY")]
        where one(name) != wanted {
            // The simulator has only the daily summary sales report.
            return invalid("'\(one(name) ?? "")' is not a valid value for the parameter 'filter[\(name)]'; this simulator serves \(wanted) only.")
        }
        guard one("vendorNumber") == config.vendorNumber else {
            return invalid("Invalid vendor number specified: '\(one("vendorNumber") ?? "")'.")
        }
        guard one("version") == config.version else {
            return invalid("The version parameter you have specified is invalid. The latest version for this report is \(config.version).")
        }
        let day: String
        if let asked = one("reportDate") {
            guard Self.isDate(asked) else {
                return invalid("The reportDate parameter you have specified is invalid: '\(asked)' is not YYYY-MM-DD.")
            }
            day = asked
        } else {
            guard request.values("filter[reportDate]").isEmpty else { return invalid("filter[reportDate] is given twice.") }
            day = latestPublished(nowMs: nowMs)
        }
        guard let published = SalesReportBook.publishedMs(day), nowMs >= published,
              let text = book.report(day: day, refunded: outcomeRefunds(on: day)) else {
            var a = Self.error(404, "NOT_FOUND", "The specified resource does not exist",
                               "There were no sales for the date specified.")
            a.outcome = "404:\(day)"
            return a
        }
        guard let body = try? Gzip.compress(Array(text.utf8)) else {
            return APIAnswer(status: 500, contentType: "text/plain", body: Array("gzip failed".utf8), outcome: "500")
        }
        return APIAnswer(status: 200, contentType: "application/a-gzip", body: body, outcome: "200:\(day)")
    }

    /// The most recent day published at `nowMs`, in the report zone.
    func latestPublished(nowMs: Int64) -> String {
        var ms = nowMs - Span.day
        for _ in 0..<3 {
            let day = SalesReportBook.day(of: ms, in: config.timeZone)
            if let p = SalesReportBook.publishedMs(day), p <= nowMs { return day }
            ms -= Span.day
        }
        return SalesReportBook.day(of: ms, in: config.timeZone)
    }

    /// A real calendar date written `YYYY-MM-DD`.
    static func isDate(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count == 10, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"),
              u.enumerated().allSatisfy({ $0.offset == 4 || $0.offset == 7 || ($0.element >= 48 && $0.element <= 57) }),
              let ms = UTC.parse(text + "T00:00:00Z") else { return false }
        return UTC.date(ms) == text
    }

    /// App Store Connect's error body: `{"errors":[{"id":…,"status":…,"code":…,"title":…,"detail":…}]}`.
    static func error(_ status: Int, _ code: String, _ title: String, _ detail: String) -> APIAnswer {
        let id = String(SimHash.combine(SimHash.fnv(code), SimHash.fnv(detail)), radix: 16)
        let error = JSONValue.object([("id", .string(id)), ("status", .string(String(status))), ("code", .string(code)),
                                      ("title", .string(title)), ("detail", .string(detail))])
        return APIAnswer(status: status, body: JSONValue.object([("errors", .array([error]))]).bytes,
                         outcome: "\(status):\(code)")
    }
}

extension SimulatorCore {
    /// Decides the answer to `GET /v1/salesReports` (404 when sales reports are not served).
    func handleSalesReport(_ request: APIRequest) -> SimAction {
        let nowMs = SimClock.nowMs()
        guard let sales else {
            record(environment: .production, rid: nil, outcome: "404", endpoint: SalesReportService.endpoint, at: nowMs)
            return .http(.text(404, "Not Found"))
        }
        let answer = sales.answer(request, nowMs: nowMs)
        record(environment: .production, rid: nil, outcome: answer.outcome, endpoint: SalesReportService.endpoint,
               pathID: request.values("filter[reportDate]").first.map { SalesReportService.isDate($0) ? $0 : "?" },
               at: nowMs)
        return .http(answer)
    }
}
