// iap-sim: the App Store test double (`serve`) and the source-data generator (`seed`).

import AppStoreSimulator
import ArgumentParser
import Foundation

@main
struct IapSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iap-sim",
        abstract: "A simulated App Store (verifyReceipt and the App Store Server API) and a generator of iap-reconcile source data.",
        discussion: """
        serve: answers POST /production/verifyReceipt and /sandbox/verifyReceipt like Apple's legacy \
        verifyReceipt, reading the truth from the receipt tokens that `seed` issued.

        seed: fills iap_products, iap_orders, iap_receipts and iap_grants with seeded scenarios (with \
        --apple-truth also iap_consents and iap_consumption, the shop's data for consumption requests) and writes \
        the report files the job must produce for them.

        Typical run:
          iap-sim seed --users 1000 --seed 7 --as-of 2026-11-21T03:00:00Z \\
              --refunds /tmp/refunds.txt --expected /tmp/expected
          iap-sim serve --refunds /tmp/refunds.txt --port-file /tmp/sim.port &
          IAP_VERIFY_URL_PRODUCTION=http://127.0.0.1:$(cat /tmp/sim.port)/production/verifyReceipt \\
          IAP_VERIFY_URL_SANDBOX=http://127.0.0.1:$(cat /tmp/sim.port)/sandbox/verifyReceipt \\
          IAP_BUNDLE_IDS=com.example.game iap-reconcile run --as-of 2026-11-21T03:00:00Z
        """,
        subcommands: [
            Serve.self, Seed.self, Keygen.self, PlayKey.self, ES256FloorCommand.self, RSAFloorCommand.self,
            BenchReceiptsCommand.self,
        ]
    )
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the simulated verifyReceipt on loopback.",
        discussion: """
        Prints `listening 127.0.0.1:PORT` as the first line of stdout. Runs until killed (SIGINT/SIGTERM); \
        SIGHUP re-reads the --refunds file.

        Answers: body not JSON or no receipt-data → 21000; wrong or missing password when --shared-secret is \
        set → 21004; data that is not a simulator token → 21002; a sandbox token sent to /production → \
        21007, a production token to /sandbox → 21008; else the token's forced status or 0 with the \
        transactions rendered in iOS 6 or iOS 7 style.

        Garbage mode (--garbage, --garbage-bodies): every request that draws no fault is answered \
        HTTP 200 with a body that is not what Apple sends, whatever it asked; the body is a pure \
        function of --seed, the receipt id and the n-th call for it, and the call log names it \
        (`garbage:<name>`). The job must treat each as retry, never believe it.

        App Store Server API (with --apple-truth or --api-key): under /production and /sandbox, \
        GET /inApps/v1/transactions/{id}, GET /inApps/v2/history/{id}, GET /inApps/v2/refund/lookup/{id}, \
        POST /inApps/v1/notifications/history, GET /inApps/v1/lookup/{orderId} (production only), \
        PUT /inApps/v2/transactions/consumption/{id} (Send Consumption Information: every rule of Apple's \
        ConsumptionRequest checked, 202 when accepted, each accepted answer kept and, with --consumption-log, \
        logged), answered \
        from the truth file with transactions signed by the --pki. Every request needs a bearer JWT (ES256, \
        kid --api-key-id, iss --api-issuer, aud appstoreconnect-v1, bid one of --api-bundle, exp at most 60 min \
        after iat) signed with --api-key (or the app's --api-key-for), else 401; over --api-rate, 429 with \
        Retry-After in UNIX ms. The faults, latency and refund list apply too; the call log names the \
        endpoint in the third field and the path's id in a fifth.

        App Store Connect sales reports (with --connect-key): GET /v1/salesReports?filter[frequency]=DAILY\
        &filter[reportType]=SALES&filter[reportSubType]=SUMMARY&filter[vendorNumber]=--connect-vendor\
        &filter[reportDate]=YYYY-MM-DD&filter[version]=--sales-report-version answers the day's Summary Sales \
        Report from the --apple-truth file, gzipped (application/a-gzip, tab-separated, Apple's header names): \
        every production purchase of an app served on its day in --sales-report-timezone (units = quantity, \
        customer price per unit, proceeds per unit = 70% rounded to the currency's minor unit), every refund \
        on its revocation day (negative units and customer price, positive proceeds), grouped as a summary; \
        plus the app's own row (1F) and now and then an IA3 restore row. Column order A on even days of the \
        month, order B on odd days. 404 for a day without sales or not published yet (08:00 \
        America/Los_Angeles the day after); 400 for another report, vendor, date form or version; 401 for a \
        token not of the team key; 403 with --connect-forbidden; 429 past --connect-hour-limit; every answer \
        carries X-Rate-Limit (Sources/AppStoreSimulator/Server/SalesReports.swift).

        Several apps (--api-bundle repeated): each answer is scoped to the token's app, as Apple's are: \
        another app's transaction is not found (404 4040010; Look Up Order ID: status 1), the notification \
        history lists that app's only, rate limits are counted per app and environment, and the n-th app's \
        appAppleId is 1258428153 + n. --refuse-app answers every token of one app 401 (a refused key); \
        --stray-401 N answers the N-th request 401 once although its token is good.

        Notification history: ONE_TIME_CHARGE for every consumable, non-consumable and non-renewing \
        purchase, REFUND for every refund (its revocationType and, prorated, revocationPercentage from the \
        truth; REVOKE for FAMILY_REVOKE), REFUND_REVERSED for a refund the truth reverses (afterwards the \
        transaction shows no revocation anywhere). About one notification in ten was retried an hour after \
        a timed-out send and is listed twice, same notificationUUID and payload: the client must be \
        idempotent on it. Prices and storefronts are the truth's. CONSUMPTION_REQUEST at each truth row's \
        consumption_request_ms with its consumptionRequestReason; after the 12-hour window (plus 0–6 h), \
        REFUND or REFUND_DECLINED, decided from the answer held when first listed (the model is documented \
        in Sources/AppStoreSimulator/Server/ConsumptionOutcomes.swift); a REFUND then shows in every answer.
        """
    )

    @OptionGroup(title: "App Store Server API")
    var api: APIOptions

    @OptionGroup(title: "App Store Connect sales reports")
    var sales: SalesOptions

    @OptionGroup(title: "Google Play")
    var play: PlayOptions

    @Option(help: "Address to listen on (loopback only).")
    var host: String = "127.0.0.1"

    @Option(help: "TCP port; 0 picks a free one.")
    var port: Int = 0

    @Option(name: .customLong("port-file"), help: "Also write the chosen port (digits and a newline) to this file.")
    var portFile: String?

    @Option(name: .customLong("shared-secret"),
            help: "Expected `password`; a request without it or with another one gets 21004. Default: $IAP_SHARED_SECRET if set, else not checked.")
    var sharedSecret: String?

    @Option(help: "Seed of the fault choice (a hash of seed, receipt id and the n-th call for that receipt).")
    var seed: UInt64 = 0

    @Option(name: .customLong("latency-ms"), help: "Milliseconds added to every answer.")
    var latencyMs: Int = 0

    @Option(name: .customLong("fault-rate"), help: "Share of calls (0…1) that get a fault instead of the answer.")
    var faultRate: Double = 0

    @Option(help: """
        Comma list of fault kinds to draw from: timeout (hold --timeout-hold-ms, then close), \
        http5xx (503), http429 (429 + Retry-After), reset (close with RST, no answer), truncated \
        (full Content-Length, half the body, close), nonjson (200 with HTML), s21005, s21009, \
        s211xx (status 211xx with is_retryable true); `all` for every kind.
        """)
    var faults: String = "all"

    @Option(name: .customLong("timeout-hold-ms"), help: "How long a timeout fault holds the request before closing.")
    var timeoutHoldMs: Int = 5000

    @Option(help: "Refund list written by `seed --refunds`: lines `transaction_id,cancellation_date_ms,cancellation_reason` (the Server API shows them too, before the truth's own).")
    var refunds: String?

    @Option(name: .customLong("call-log"),
            help: "Append `<unix ms>\\t<production|sandbox>\\t<receipt id or ->\\t<status, fault or garbage:NAME>` per request, flushed per line.")
    var callLog: String?

    @Option(help: "Event-loop threads (default: one per core).")
    var threads: Int?

    @Flag(help: """
        Garbage mode with the built-in list of about 160 hostile bodies (bad UTF-8, BOM, NUL bytes, \
        repeated keys, 10,000-level nesting, truncations, non-objects, odd status and id forms, \
        in_app/latest_receipt_info of the wrong shape, bad dates, quantities and flags).
        """)
    var garbage = false

    @Option(name: .customLong("garbage-bodies"), help: ArgumentHelp("""
        Garbage mode with the bodies in this file (added to the built-in list when --garbage is \
        given too): one body per line; `\\xNN` (two hex digits) stands for any byte, every other \
        byte is itself, so JSON escapes like `\\u0073` stay as written; empty lines and lines \
        starting with `#` are skipped.
        """, valueName: "file"))
    var garbageBodies: String?

    @Option(name: .customLong("mutate-rate"), help: """
        Share of answers (0…1) broken on the way out (logged `mutated:<kind>`): cut short, a byte         made invalid UTF-8, in_app/transaction_id/status of the wrong type, status named twice, a         30-digit transaction_id, 100 levels of nesting. None is an answer Apple sends.
        """)
    var mutateRate: Double = 0

    @Option(name: .customLong("slow-share"), help: "Share of calls (0…1) answered after --slow-ms instead of --latency-ms (a slow tail).")
    var slowShare: Double = 0

    @Option(name: .customLong("slow-ms"), help: "The slow tail's latency in milliseconds.")
    var slowMs: Int = 2000

    func validate() throws {
        guard (0...1).contains(mutateRate), (0...1).contains(slowShare) else {
            throw ValidationError("--mutate-rate and --slow-share must be within 0…1")
        }
        guard slowMs >= 0 else { throw ValidationError("--slow-ms must not be negative") }
        guard (0...1).contains(faultRate) else { throw ValidationError("--fault-rate must be within 0…1") }
        guard SimFault.parseList(faults) != nil else {
            throw ValidationError("--faults: unknown kind in '\(faults)'; known: \(SimFault.allCases.map(\.rawValue).joined(separator: ","))")
        }
        guard latencyMs >= 0, timeoutHoldMs >= 0 else { throw ValidationError("times must not be negative") }
        if let garbageBodies {
            guard let data = FileManager.default.contents(atPath: garbageBodies) else {
                throw ValidationError("--garbage-bodies: cannot read \(garbageBodies)")
            }
            guard !HostileAnswers.parseFile([UInt8](data)).isEmpty else {
                throw ValidationError("--garbage-bodies: \(garbageBodies) holds no body")
            }
        }
    }

    func run() throws {
        let refundList = try refunds.map { try readRefunds($0) } ?? [:]
        let secret = sharedSecret ?? ProcessInfo.processInfo.environment["IAP_SHARED_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        var garbageList = garbage ? HostileAnswers.all : []
        if let garbageBodies, let data = FileManager.default.contents(atPath: garbageBodies) {
            garbageList += HostileAnswers.parseFile([UInt8](data))
        }
        var config = SimulatorConfig(
            host: host, port: port, sharedSecret: secret, latencyMs: latencyMs,
            faults: FaultPlan(seed: seed, rate: faultRate, kinds: SimFault.parseList(faults) ?? SimFault.allCases),
            timeoutHoldMs: timeoutHoldMs, refunds: refundList, callLogPath: callLog, recordCalls: false,
            threads: threads, garbage: garbageList, mutateRate: mutateRate, slowShare: slowShare, slowMs: slowMs)
        // The receipt PKI `iap-sim seed --pki --pkcs7-receipts` made: verifyReceipt reads its receipts.
        if let folder = api.pki, FileManager.default.fileExists(atPath: folder + "/receipt-root.pem") {
            do {
                config.receiptVerifier = try ReceiptPKI.receiptVerifier(directory: folder)
            } catch {
                throw ValidationError("--pki: \(error)")
            }
        }
        do {
            if let setup = try api.config() {
                config.serverAPI = setup.0
                FileHandle.standardError.write(Data(
                    "iap-sim: Server API for \(setup.0.credentials.bundleIDs.joined(separator: ", ")), \(setup.0.truth.rows.count) Apple transactions; signed with the PKI whose root is \(setup.rootPEM)\n".utf8))
            }
            // The sales reports read the Server API's truth (or the --apple-truth file alone).
            let truth = try config.serverAPI?.truth ?? api.appleTruth.map { try AppleTruth.load(path: $0) } ?? AppleTruth(rows: [])
            if let salesConfig = try sales.config(truth: truth, bundleIDs: api.servedBundles) {
                config.salesReports = salesConfig
                FileHandle.standardError.write(Data(
                    "iap-sim: sales reports at /v1/salesReports for vendor \(salesConfig.vendorNumber), version \(salesConfig.version), days in \(salesConfig.timeZone.identifier)\n".utf8))
            }
            if let playService = try play.service() {
                config.extraRoutes = PlayBridge.routes(playService)
                FileHandle.standardError.write(Data("iap-sim: Google Play at /token and /androidpublisher/v3\n".utf8))
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            FileHandle.standardError.write(Data("iap-sim: \(error)\n".utf8))
            throw ExitCode(66)
        }
        let sim: Simulator
        do {
            sim = try Simulator.start(config)
        } catch {
            FileHandle.standardError.write(Data("iap-sim: \(error)\n".utf8))
            throw ExitCode(75)
        }
        if let portFile {
            try "\(sim.port)\n".write(toFile: portFile, atomically: true, encoding: .utf8)
        }
        // Unbuffered: a parent reading our stdout sees the line at once.
        FileHandle.standardOutput.write(Data("listening \(sim.host):\(sim.port)\n".utf8))
        FileHandle.standardError.write(Data(
            "iap-sim: serving \(sim.productionURL) and \(sim.sandboxURL)\(api.enabled ? ", the Server API under \(sim.productionAPIURL) and \(sim.sandboxAPIURL)" : "") (refunds: \(refundList.count), fault rate: \(faultRate), latency: \(latencyMs) ms\(garbageList.isEmpty ? "" : ", garbage bodies: \(garbageList.count)"))\n".utf8))

        signal(SIGPIPE, SIG_IGN)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            src.setEventHandler { try? sim.shutdown() }
            src.resume()
            sources.append(src)
        }
        if let path = refunds {
            signal(SIGHUP, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
            src.setEventHandler {
                if let list = try? readRefunds(path) {
                    sim.setRefunds(list)
                    FileHandle.standardError.write(Data("iap-sim: reloaded \(list.count) refunds\n".utf8))
                }
            }
            src.resume()
            sources.append(src)
        }
        try sim.waitUntilClosed()
        try? sim.shutdown()
        _ = sources
    }
}

func readRefunds(_ path: String) throws -> [String: SimRefund] {
    do {
        return RefundList.parse(try String(contentsOfFile: path, encoding: .utf8))
    } catch {
        throw ValidationError("cannot read refund list \(path): \(error.localizedDescription)")
    }
}
