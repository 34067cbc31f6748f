// The verifyReceipt decision of the simulator, independent of the network: what a request gets.

import AppStore
import Foundation
import Reconciliation

/// How the simulator is set up. Every field has a usable default (no faults, no latency).
public struct SimulatorConfig: Sendable {
    /// Loopback address to listen on.
    public var host: String
    /// 0 = an ephemeral port (read it from `Simulator.port`).
    public var port: Int
    /// When set, a request whose `password` differs or is missing gets 21004.
    public var sharedSecret: String?
    /// Added to every answer (scheduled on the event loop, never a sleeping thread).
    public var latencyMs: Int
    /// Seeded fault injection.
    public var faults: FaultPlan
    /// How long a `timeout` fault holds the request before closing the connection.
    public var timeoutHoldMs: Int
    /// Refunded transactions (transaction_id → cancellation).
    public var refunds: [String: SimRefund]
    /// Appends `<unix ms>\t<production|sandbox>\t<rid or ->\t<outcome>` per request, flushed per line.
    public var callLogPath: String?
    /// Keep every call in memory for `Simulator.calls` (counts per receipt id are always kept).
    public var recordCalls: Bool
    /// Event-loop threads; nil = one per core.
    public var threads: Int?
    /// Garbage mode when not empty: every request not given a fault is answered HTTP 200 with one
    /// of these bodies (chosen by seed, receipt id and call number), whatever it asked.
    public var garbage: [HostileAnswers.Body]
    /// Share of answers (0…1) sent broken by an `AnswerMutation` (chaos: the App Store lies).
    public var mutateRate: Double
    /// Share of calls (0…1) answered after `slowMs` instead of `latencyMs` (a slow tail).
    public var slowShare: Double
    public var slowMs: Int
    /// The App Store Server API under `/production/inApps/…` and `/sandbox/inApps/…` (nil: not served).
    public var serverAPI: ServerAPIConfig?
    /// App Store Connect's `GET /v1/salesReports` (SalesReports.swift; nil: not served).
    public var salesReports: SalesReportConfig?
    /// Verifies PKCS#7 receipts (SimReceiptPKCS7.swift) against the receipt PKI's root: their truth
    /// is read only from a receipt that verifies; any other is 21003 (nil: every PKCS#7 receipt is
    /// 21002, unreadable).
    public var receiptVerifier: AppReceiptVerifier?
    /// Routes of another store served beside Apple's (Google Play's simulator): asked first for
    /// every request; an answer is sent as it is, nil leaves the request to Apple's routes.
    public var extraRoutes: (@Sendable (SimRouteRequest) -> SimRouteAnswer?)?

    public init(host: String = "127.0.0.1", port: Int = 0, sharedSecret: String? = nil, latencyMs: Int = 0,
                faults: FaultPlan = FaultPlan(), timeoutHoldMs: Int = 5000, refunds: [String: SimRefund] = [:],
                callLogPath: String? = nil, recordCalls: Bool = true, threads: Int? = nil,
                garbage: [HostileAnswers.Body] = [], mutateRate: Double = 0, slowShare: Double = 0,
                slowMs: Int = 2000, serverAPI: ServerAPIConfig? = nil, salesReports: SalesReportConfig? = nil,
                extraRoutes: (@Sendable (SimRouteRequest) -> SimRouteAnswer?)? = nil) {
        self.host = host
        self.port = port
        self.sharedSecret = sharedSecret
        self.latencyMs = latencyMs
        self.faults = faults
        self.timeoutHoldMs = timeoutHoldMs
        self.refunds = refunds
        self.callLogPath = callLogPath
        self.recordCalls = recordCalls
        self.threads = threads
        self.garbage = garbage
        self.mutateRate = mutateRate
        self.slowShare = slowShare
        self.slowMs = slowMs
        self.serverAPI = serverAPI
        self.salesReports = salesReports
        self.extraRoutes = extraRoutes
    }
}

/// A request as `SimulatorConfig.extraRoutes` sees it.
public struct SimRouteRequest: Sendable {
    /// `GET`, `POST`…
    public var method: String
    /// The path without the query.
    public var path: String
    /// The raw query, after `?` (empty when there is none).
    public var query: String
    /// The headers in order, names in lower case.
    public var headers: [(String, String)]
    /// The body as received.
    public var body: [UInt8]

    /// A request; the query raw, header names in lower case.
    public init(method: String, path: String, query: String, headers: [(String, String)], body: [UInt8]) {
        (self.method, self.path, self.query, self.headers, self.body) = (method, path, query, headers, body)
    }
}

/// The answer of an extra route: sent as it is (Content-Type and Content-Length set from it).
public struct SimRouteAnswer: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The Content-Type header.
    public var contentType: String
    /// The body, sent as it is.
    public var body: [UInt8]
    /// Headers added to the answer.
    public var headers: [(String, String)]

    /// An answer; no headers but Content-Type and Content-Length unless given.
    public init(status: Int, contentType: String, body: [UInt8], headers: [(String, String)] = []) {
        (self.status, self.contentType, self.body, self.headers) = (status, contentType, body, headers)
    }
}

/// One request the simulator answered or faulted.
public struct SimCall: Sendable, Equatable {
    /// Unix time in ms when the request was decided.
    public var timeMs: Int64
    /// The endpoint called.
    public var environment: AppStoreEnvironment
    /// The token's receipt id, nil when the data was not a token (or the body was broken).
    public var receiptID: String?
    /// The status number (`"0"`, `"21007"`…), the fault name (`"timeout"`, `"http5xx"`…), in
    /// garbage mode `garbage:<body name>`, or `mutated:<mutation>` for a broken real answer.
    /// Server API calls: the HTTP status and Apple's error code (`200`, `404:4040010`,
    /// `429:4290000`), `401:<what was wrong with the token>`, or the fault's name.
    public var outcome: String
    /// The Server API endpoint called (`transaction_info`…); nil for verifyReceipt.
    public var endpoint: String? = nil
    /// The id in the Server API path (transaction or order id), if any.
    public var pathID: String? = nil
}

/// What the network layer must do for one request.
enum SimAction {
    /// HTTP 200 with this JSON body.
    case json([UInt8])
    case fault(SimFault, body: [UInt8])
    /// A Server API answer (any status, its headers).
    case http(APIAnswer)
}

/// Thread-safe state: counters, call log, refunds, fault plan.
final class SimulatorCore: @unchecked Sendable {
    private let lock = NSLock()
    private var config: SimulatorConfig
    private var counts: [String: Int] = [:]
    private var callList: [SimCall] = []
    private var total = 0
    private var logFD: Int32 = -1
    private var refundsVersion = 0
    /// The Server API's state, when it is served.
    let api: ServerAPIService?
    /// The sales reports' state, when they are served.
    let sales: SalesReportService?
    /// `SimulatorConfig.extraRoutes`, fixed at the start.
    let extraRoutes: (@Sendable (SimRouteRequest) -> SimRouteAnswer?)?

    init(config: SimulatorConfig) throws {
        self.config = config
        extraRoutes = config.extraRoutes
        api = try config.serverAPI.map { try ServerAPIService(config: $0) }
        sales = config.salesReports.map { [api] in SalesReportService(config: $0, consumption: api?.consumption) }
        if let path = config.callLogPath {
            logFD = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            if logFD < 0 {
                throw SimulatorError(message: "cannot open call log \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    deinit { if logFD >= 0 { close(logFD) } }

    var latencyMs: Int { lock.locked { config.latencyMs } }

    /// How long the answer to this call waits: `slowMs` for a seeded `slowShare` of the calls.
    func latencyMs(receiptID: String?, callIndex: Int) -> Int {
        let (base, share, slow, seed) = lock.locked { (config.latencyMs, config.slowShare, config.slowMs, config.faults.seed) }
        guard share > 0 else { return base }
        let h = SimHash.combine(seed, SimHash.fnv(receiptID ?? "-"), UInt64(callIndex), 0x510)
        return SimHash.unit(h) < share ? slow : base
    }
    var timeoutHoldMs: Int { lock.locked { config.timeoutHoldMs } }

    func setRefunds(_ refunds: [String: SimRefund]) {
        lock.locked {
            config.refunds = refunds
            refundsVersion += 1
        }
    }
    /// The refund list being served and its version (bumped by every `setRefunds`).
    var refundView: RefundView { lock.locked { RefundView(list: config.refunds, version: refundsVersion) } }
    var faultPlan: FaultPlan { lock.locked { config.faults } }
    func setFaults(_ plan: FaultPlan) { lock.locked { config.faults = plan } }
    func setLatency(ms: Int) { lock.locked { config.latencyMs = ms } }
    func setGarbage(_ bodies: [HostileAnswers.Body]) { lock.locked { config.garbage = bodies } }

    func callCount(receiptID: String) -> Int { lock.locked { counts[receiptID] ?? 0 } }
    var calls: [SimCall] { lock.locked { callList } }
    var totalCalls: Int { lock.locked { total } }
    func resetCalls() {
        lock.locked {
            counts = [:]
            callList = []
            total = 0
        }
        api?.resetCounts()
    }

    /// Decides the answer for a POST body sent to `environment`'s endpoint, counts and logs it;
    /// also says how long to wait before sending it.
    func handle(environment: AppStoreEnvironment, body: [UInt8]) -> (action: SimAction, latencyMs: Int) {
        let (action, rid, callIndex) = decide(environment: environment, body: body)
        return (action, latencyMs(receiptID: rid, callIndex: callIndex))
    }

    private func decide(environment: AppStoreEnvironment, body: [UInt8]) -> (SimAction, String?, Int) {
        let (cfg, listed) = lock.locked { (config, config.refunds) }
        var refunds = listed
        // Refunds granted by consumption outcomes show here too (ConsumptionOutcomes.swift).
        if let outcomes = api?.consumption.outcomeRefunds, !outcomes.isEmpty {
            refunds.merge(outcomes) { first, _ in first }
        }
        var receipt: SimReceipt?
        var receiptData: String?
        var password: String?
        var bodyOK = false
        /// The status of a PKCS#7 receipt that did not verify (21003) or could not be read (21002).
        var refused: Int?
        if let obj = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
           let data = obj["receipt-data"] as? String {
            bodyOK = true
            receiptData = data
            password = obj["password"] as? String
            receipt = SimReceipt.decode(token: data)
            if receipt == nil, let verifier = cfg.receiptVerifier,
                let bytes = Data(base64Encoded: data, options: .ignoreUnknownCharacters), bytes.first == 0x30
            {
                (receipt, refused) = SimReceipt.decode(pkcs7: [UInt8](bytes), verifier: verifier)
            }
        }
        let rid = receipt?.rid
        // Count the call and pick a fault for it.
        let (callIndex, totalBefore): (Int, Int) = lock.locked {
            total += 1
            guard let rid else { return (0, total - 1) }
            let n = counts[rid] ?? 0
            counts[rid] = n + 1
            return (n, total - 1)
        }
        if let rid, let fault = cfg.faults.fault(receiptID: rid, callIndex: callIndex) {
            var body: [UInt8] = []
            switch fault {
            case .s21005: body = AppleAnswer.statusOnly(21005, environment: environment)
            case .s21009: body = AppleAnswer.statusOnly(21009, environment: environment)
            case .s211xx:
                let d = FaultPlan.retryableDetails(receiptID: rid, callIndex: callIndex, seed: cfg.faults.seed)
                body = AppleAnswer.statusOnly(d.status, environment: environment, retryable: true,
                                              dashedRetryableKey: d.dashed)
            case .truncated:
                body = answer(receipt: receipt!, token: receiptData!, environment: environment, refunds: refunds,
                              seed: cfg.faults.seed).body
            case .nonjson: body = Array("<html><head><title>503</title></head><body>Service Unavailable</body></html>".utf8)
            case .http5xx: body = Array("Service Unavailable".utf8)
            case .http429: body = Array("Too Many Requests".utf8)
            case .timeout, .reset: body = []
            }
            record(environment: environment, rid: rid, outcome: fault.rawValue)
            return (.fault(fault, body: body), rid, callIndex)
        }
        // Garbage: by receipt id and call number, like the faults; requests without a token by
        // their place among all requests.
        if let garbage = HostileAnswers.pick(cfg.garbage, seed: cfg.faults.seed, receiptID: rid,
                                             callIndex: rid == nil ? totalBefore : callIndex) {
            record(environment: environment, rid: rid, outcome: "garbage:" + garbage.name)
            return (.json(garbage.bytes), rid, callIndex)
        }
        let status: Int
        let text: [UInt8]
        if !bodyOK {
            status = 21000
            text = AppleAnswer.statusOnly(21000, environment: environment)
        } else if let secret = cfg.sharedSecret, password != secret {
            status = 21004
            text = AppleAnswer.statusOnly(21004, environment: environment)
        } else if let refused {
            status = refused
            text = AppleAnswer.statusOnly(refused, environment: environment)
        } else if let receipt, let data = receiptData {
            (status, text) = answer(receipt: receipt, token: data, environment: environment, refunds: refunds,
                                    seed: cfg.faults.seed)
        } else {
            status = 21002
            text = AppleAnswer.statusOnly(21002, environment: environment)
        }
        if let mutation = AnswerMutation.pick(rate: cfg.mutateRate, seed: cfg.faults.seed, receiptID: rid,
                                              callIndex: rid == nil ? totalBefore : callIndex) {
            let position = SimHash.combine(cfg.faults.seed, SimHash.fnv(rid ?? "-"), UInt64(callIndex), 0x9051)
            record(environment: environment, rid: rid, outcome: "mutated:" + mutation.rawValue)
            return (.json(mutation.apply(to: text, position: position)), rid, callIndex)
        }
        record(environment: environment, rid: rid, outcome: String(status))
        return (.json(text), rid, callIndex)
    }

    /// The answer for a well-formed request carrying a token.
    private func answer(receipt: SimReceipt, token: String, environment: AppStoreEnvironment,
                        refunds: [String: SimRefund], seed: UInt64) -> (status: Int, body: [UInt8]) {
        let tokenEnv = receipt.environment ?? .production
        if tokenEnv == .sandbox && environment == .production {
            return (21007, AppleAnswer.statusOnly(21007, environment: environment))
        }
        if tokenEnv == .production && environment == .sandbox {
            return (21008, AppleAnswer.statusOnly(21008, environment: environment))
        }
        let status = receipt.st ?? 0
        switch status {
        case 0, 21006:
            return (status, AppleAnswer.render(receipt, status: status, environment: environment, token: token,
                                               refunds: refunds))
        case 21100...21199:
            let dashed = SimHash.fnv(receipt.rid) & 1 == 1
            return (status, AppleAnswer.statusOnly(status, environment: environment, retryable: false,
                                                   dashedRetryableKey: dashed))
        default:
            return (status, AppleAnswer.statusOnly(status, environment: environment))
        }
    }

    /// Logs one call. Server API calls name the endpoint where verifyReceipt calls name the
    /// receipt id, and add the path's id as a fifth field.
    func record(environment: AppStoreEnvironment, rid: String?, outcome: String, endpoint: String? = nil,
                pathID: String? = nil, at time: Int64? = nil) {
        let ms = time ?? SimClock.nowMs()
        let call = SimCall(timeMs: ms, environment: environment, receiptID: rid, outcome: outcome, endpoint: endpoint,
                           pathID: pathID)
        lock.locked {
            if config.recordCalls { callList.append(call) }
            if logFD >= 0 {
                // The password and the bearer token are never logged: only time, endpoint, ids and outcome.
                var line = "\(ms)\t\(environment.rawValue)\t\(endpoint ?? rid ?? "-")\t\(outcome)"
                if endpoint != nil { line += "\t\(pathID ?? "-")" }
                line += "\n"
                var bytes = Array(line.utf8)
                var off = 0
                while off < bytes.count {
                    let n = bytes.withUnsafeMutableBytes { write(logFD, $0.baseAddress! + off, $0.count - off) }
                    if n <= 0 { if errno == EINTR { continue } else { break } }
                    off += n
                }
            }
        }
    }
}

public struct SimulatorError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// Wall-clock time.
enum SimClock {
    static func nowMs() -> Int64 {
        var tv = timeval()
        gettimeofday(&tv, nil)
        return Int64(tv.tv_sec) * 1000 + Int64(tv.tv_usec) / 1000
    }
}

extension NSLock {
    /// `withLock` without its newer-macOS availability.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
