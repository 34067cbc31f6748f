// `iap-sim serve`'s App Store Connect sales report options (GET /v1/salesReports).

import AppStoreSimulator
import ArgumentParser
import Foundation

struct SalesOptions: ParsableArguments {
    @Option(name: .customLong("connect-key"), help: ArgumentHelp("""
        Serve App Store Connect's GET /v1/salesReports (the daily Summary Sales Report, from the \
        --apple-truth file) at the root of the simulator: the team key that signs its bearer tokens, a \
        `.p8` (PKCS#8 PEM P-256 private key, see `iap-sim keygen`) or its PEM public key. A token must \
        be ES256 with kid --connect-key-id, iss --connect-issuer, aud appstoreconnect-v1, no bid, exp \
        in the future and at most 1200 s after iat, else 401 NOT_AUTHORIZED.
        """, valueName: "file"))
    var connectKey: String?

    @Option(name: .customLong("connect-key-id"), help: "The `kid` a sales report token must carry (with --connect-key). Default: $ASC_KEY_ID.")
    var connectKeyID: String?

    @Option(name: .customLong("connect-issuer"), help: "The `iss` a sales report token must carry (with --connect-key). Default: $ASC_ISSUER_ID.")
    var connectIssuer: String?

    @Option(name: .customLong("connect-vendor"), help: ArgumentHelp("""
        The vendor number: `filter[vendorNumber]` must be it, else 400 PARAMETER_ERROR.INVALID \
        (with --connect-key). Default: $ASC_VENDOR_NUMBER.
        """, valueName: "number"))
    var connectVendor: String?

    @Flag(name: .customLong("connect-forbidden"), help: """
        Answer every authorized sales report request 403 FORBIDDEN_ERROR (a key whose role may not \
        read sales reports).
        """)
    var connectForbidden = false

    @Option(name: .customLong("connect-hour-limit"), help: ArgumentHelp("""
        Sales report requests per key over a rolling hour; the next gets 429 RATE_LIMIT_EXCEEDED. \
        Every answer says `X-Rate-Limit: user-hour-lim:L;user-hour-rem:R;`.
        """, valueName: "n"))
    var connectHourLimit = 3500

    @Option(name: .customLong("sales-report-version"), help: ArgumentHelp("""
        The report's version: a request with another `filter[version]`, or none, gets 400 \
        PARAMETER_ERROR.INVALID whose detail ends "The latest version for this report is <version>."
        """, valueName: "version"))
    var salesReportVersion = "1_0"

    @Option(name: .customLong("sales-report-timezone"), help: ArgumentHelp("""
        The time zone of the report days (a purchase on the day of its purchase date there, a refund on \
        the day of its revocation). A day is published at 08:00 America/Los_Angeles the day after, by \
        the wall clock; before that, and for a day without sales, 404 NOT_FOUND "There were no sales for \
        the date specified." Columns: Apple's order A (28 names) on even days of the month, order B \
        (26: no Parent Identifier and Order Type; Customer Currency and Country Code after Customer \
        Price) on odd days.
        """, valueName: "zone"))
    var salesReportTimezone = "America/Los_Angeles"

    var enabled: Bool { connectKey != nil }

    /// The option, else the job's own setting of the same name (`ASC_…`), so that one environment
    /// serves both.
    private func value(_ option: String?, _ variable: String) -> String? {
        option ?? ProcessInfo.processInfo.environment[variable].flatMap { $0.isEmpty ? nil : $0 }
    }
    var keyID: String? { value(connectKeyID, "ASC_KEY_ID") }
    var issuer: String? { value(connectIssuer, "ASC_ISSUER_ID") }
    var vendor: String? { value(connectVendor, "ASC_VENDOR_NUMBER") }

    func validate() throws {
        guard connectHourLimit >= 1 else { throw ValidationError("--connect-hour-limit must be 1 or more") }
        guard TimeZone(identifier: salesReportTimezone) != nil else {
            throw ValidationError("--sales-report-timezone: unknown time zone '\(salesReportTimezone)'")
        }
        guard !salesReportVersion.isEmpty else { throw ValidationError("--sales-report-version must not be empty") }
        guard enabled else { return }
        guard keyID?.isEmpty == false else { throw ValidationError("--connect-key needs --connect-key-id (or $ASC_KEY_ID)") }
        guard issuer?.isEmpty == false else { throw ValidationError("--connect-key needs --connect-issuer (or $ASC_ISSUER_ID)") }
        guard vendor?.isEmpty == false else {
            throw ValidationError("--connect-key needs --connect-vendor (or $ASC_VENDOR_NUMBER)")
        }
    }

    /// The sales reports' configuration from the truth the Server API reads; nil when not served.
    func config(truth: AppleTruth, bundleIDs: [String]) throws -> SalesReportConfig? {
        guard let connectKey else { return nil }
        guard let data = FileManager.default.contents(atPath: connectKey) else {
            throw ValidationError("--connect-key: cannot read \(connectKey)")
        }
        let credentials = ConnectCredentials(keyID: keyID ?? "", issuerID: issuer ?? "",
                                             publicKey: try APICredentials.publicKey(pem: String(decoding: data, as: UTF8.self)))
        return SalesReportConfig(credentials: credentials, vendorNumber: vendor ?? "", truth: truth,
                                 bundleIDs: bundleIDs, version: salesReportVersion,
                                 timeZone: TimeZone(identifier: salesReportTimezone)!, hourLimit: connectHourLimit,
                                 forbidden: connectForbidden)
    }
}
