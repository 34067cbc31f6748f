// What the simulated App Store decides after a CONSUMPTION_REQUEST (Apple's facts: its
// documentation of the notification and of refund outcomes). Apple documents no model: this one is ours,
// chosen so that an answer visibly matters, and every number is here.
//
// When. A request's 12-hour window starts at its `signedDate` (the truth's
// `consumption_request_ms`). Its outcome is listed in Get Notification History at
// `signedDate + 12 h + d`, `d` a hash of the transaction id from 0 to 6 h (`outcomeMs`).
//
// What. One number `u` in [0, 1) is drawn per transaction from a hash of its id (`draw`); the
// outcome is REFUND when `u < refundChance(answer)`, else REFUND_DECLINED:
//
//   answer held                                             refundChance
//   none                                                    0.90
//   refundPreference GRANT_FULL (any deliveryStatus)        1.00
//   deliveryStatus UNDELIVERED_*                            0.95
//   DELIVERED, consumptionPercentage >= 50000 and DECLINE   0.20  (declined 80% of the time)
//   DELIVERED otherwise                                     0.50
//
// The answer held is the last one accepted for the transaction when the outcome is first
// needed: when a Get Notification History request first walks past its listing time (its
// `endDate` after it, same environment and app). The outcome is then memoized: every later
// listing, and every read of the transaction, agrees with it. Reading a transaction (Get
// Transaction Info, the histories, Look Up Order ID) decides nothing: those requests carry no time
// of the client's, and a night run with `--as-of` in the past (the tests' 2026-11-21 against a
// clock a week later) must not see refunds dated after its as-of. A transaction the refund list
// or the truth already refunds gets no outcome.
//
// Effect. REFUND: a full refund at `outcomeMs` (revocationReason 1, REFUNDED_DUE_TO_ISSUE, when
// the answer said UNDELIVERED_* or the request's reason was FULFILLMENT_ISSUE; else 0), shown by
// every later answer like the truth's refunds (verifyReceipt's cancellation_date too, unless the
// refund list names the transaction), and a REFUND notification at `outcomeMs`.
// REFUND_DECLINED: a notification of that type at `outcomeMs`, the transaction unchanged. Both
// follow the history's UUID and retry model (`SimNotification`).
//
// Because `u` is one draw per transaction, a transaction with u >= 0.95 is declined whatever it
// is told short of GRANT_FULL: the generator makes its expired requests (unanswerable by a
// `respond` run) only from those, so that the nights it writes expected reports for see no
// refund the requests caused.

import Foundation
import Reconciliation

/// What Apple decided about a consumption request.
public enum SimConsumptionOutcome: String, Sendable, Equatable {
    case refund = "REFUND"
    case declined = "REFUND_DECLINED"
}

/// One accepted Send Consumption Information call.
public struct SimConsumptionAnswer: Sendable, Equatable {
    /// The transaction answered for (the truth's id, also when the path named its original).
    public var transactionID: String
    public var environment: AppStoreEnvironment
    /// When the simulator accepted it (UNIX ms, its clock).
    public var receivedMs: Int64
    /// 1 for the first accepted answer for the transaction, 2 for the second…
    public var put: Int
    public var customerConsented: Bool
    public var deliveryStatus: String
    public var sampleContentProvided: Bool
    public var consumptionPercentage: Int?
    public var refundPreference: String?

    public init(transactionID: String, environment: AppStoreEnvironment, receivedMs: Int64, put: Int,
                customerConsented: Bool, deliveryStatus: String, sampleContentProvided: Bool,
                consumptionPercentage: Int? = nil, refundPreference: String? = nil) {
        self.transactionID = transactionID
        self.environment = environment
        self.receivedMs = receivedMs
        self.put = put
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }

    /// The body's fields as Apple's JSON, in a fixed order, absent ones left out.
    public var bodyJSON: String {
        var members: [(String, JSONValue)] = [("customerConsented", .bool(customerConsented)),
                                               ("deliveryStatus", .string(deliveryStatus))]
        if let consumptionPercentage { members.append(("consumptionPercentage", .int(Int64(consumptionPercentage)))) }
        members.append(("sampleContentProvided", .bool(sampleContentProvided)))
        if let refundPreference { members.append(("refundPreference", .string(refundPreference))) }
        return String(decoding: JSONValue.object(members).bytes, as: UTF8.self)
    }

    /// `iap-sim serve --consumption-log`'s line (no newline):
    /// `{"receivedMs":…,"environment":"production","transactionId":"…","put":1,"body":{…}}`.
    public var jsonLine: String {
        #"{"receivedMs":\#(receivedMs),"environment":"\#(environment.rawValue)","transactionId":"\#(transactionID)","put":\#(put),"body":\#(bodyJSON)}"#
    }
}

/// The outcome model above, as functions of the transaction and the answer held.
public enum ConsumptionOutcomeModel {
    /// Apple's window: "Respond within 12 hours".
    public static let windowMs: Int64 = 12 * 3_600_000
    /// The outcome comes 0 to 6 h after the window.
    public static let spreadMs: Int64 = 6 * 3_600_000

    /// When the outcome is listed (and a REFUND's revocationDate).
    public static func outcomeMs(transactionID: String, request: SimConsumptionRequest) -> Int64 {
        request.signedDateMs + windowMs + Int64(SimHash.combine(SimHash.fnv(transactionID), 0x0C7_0E) % UInt64(spreadMs + 1))
    }

    /// The transaction's one draw in [0, 1).
    public static func draw(transactionID: String) -> Double {
        SimHash.unit(SimHash.combine(SimHash.fnv(transactionID), 0xDEC1_DE))
    }

    /// The chance of REFUND given the answer held (nil: none).
    public static func refundChance(_ answer: SimConsumptionAnswer?) -> Double {
        guard let a = answer else { return 0.90 }
        if a.refundPreference == "GRANT_FULL" { return 1.0 }
        if a.deliveryStatus != "DELIVERED" { return 0.95 }
        if (a.consumptionPercentage ?? 0) >= 50_000 && a.refundPreference == "DECLINE" { return 0.20 }
        return 0.50
    }

    public static func decide(transactionID: String, answer: SimConsumptionAnswer?) -> SimConsumptionOutcome {
        draw(transactionID: transactionID) < refundChance(answer) ? .refund : .declined
    }

    /// The refund a REFUND outcome makes.
    static func refund(at ms: Int64, request: SimConsumptionRequest, answer: SimConsumptionAnswer?) -> SimRefund {
        let issue = (answer.map { $0.deliveryStatus != "DELIVERED" } ?? false) || request.reason == "FULFILLMENT_ISSUE"
        return SimRefund(cancellationDateMs: ms, reason: issue ? "1" : "0")
    }
}

/// The simulator's memory of consumption answers and outcomes. Thread-safe (one lock); the log
/// file descriptor is written under it, one whole line per accepted answer.
final class ConsumptionLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [SimConsumptionAnswer] = []
    private var latest: [String: Int] = [:]
    private var counts: [String: Int] = [:]
    private var outcomes: [String: SimConsumptionOutcome] = [:]
    private var refunds: [String: SimRefund] = [:]
    private var logFD: Int32 = -1

    init(logPath: String?) throws {
        if let logPath {
            logFD = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            if logFD < 0 {
                throw SimulatorError(message: "cannot open consumption log \(logPath): \(String(cString: strerror(errno)))")
            }
        }
    }

    deinit { if logFD >= 0 { close(logFD) } }

    var all: [SimConsumptionAnswer] { lock.locked { answers } }
    var outcomeRefunds: [String: SimRefund] { lock.locked { refunds } }
    func outcome(_ transactionID: String) -> SimConsumptionOutcome? { lock.locked { outcomes[transactionID] } }

    /// Keeps an accepted answer (numbering it) and logs it.
    func accept(_ answer: SimConsumptionAnswer) -> SimConsumptionAnswer {
        lock.locked {
            var a = answer
            a.put = (counts[a.transactionID] ?? 0) + 1
            counts[a.transactionID] = a.put
            latest[a.transactionID] = answers.count
            answers.append(a)
            if logFD >= 0 {
                let bytes = Array((a.jsonLine + "\n").utf8)
                var off = 0
                while off < bytes.count {
                    let n = bytes.withUnsafeBytes { write(logFD, $0.baseAddress! + off, $0.count - off) }
                    if n <= 0 { if errno == EINTR { continue } else { break } }
                    off += n
                }
            }
            return a
        }
    }

    /// The outcome of `row`'s request, decided now from the answer held if it was not yet.
    func decide(_ row: AppleTruthRow, request: SimConsumptionRequest) -> SimConsumptionOutcome {
        lock.locked {
            if let done = outcomes[row.transactionID] { return done }
            let answer = latest[row.transactionID].map { answers[$0] }
            let outcome = ConsumptionOutcomeModel.decide(transactionID: row.transactionID, answer: answer)
            outcomes[row.transactionID] = outcome
            if outcome == .refund {
                refunds[row.transactionID] = ConsumptionOutcomeModel.refund(
                    at: ConsumptionOutcomeModel.outcomeMs(transactionID: row.transactionID, request: request),
                    request: request, answer: answer)
            }
            return outcome
        }
    }
}
