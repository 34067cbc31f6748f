// Send Consumption Information v2 of the simulated Server API, as Apple
// documents it: `PUT /inApps/v2/transactions/consumption/{transactionId}` with a
// JSON `ConsumptionRequest`, 202 Accepted with an empty body. Its own rate (Apple's 50 a second
// in production, a tenth in the sandbox: `ServerAPIConfig.consumptionRate`) and the bearer JWT
// are checked by APIGate.swift like every endpoint's.
//
// The checks, in this order (Apple documents none; where it publishes no errorCode, a 400
// without one, which Apple says means a malformed request):
//   transaction id not 1–20 digits                          400 4000006
//   body not one JSON object (invalid UTF-8, cut short,
//     a repeated key, trailing data, over 64 KiB)           400, no errorCode
//   customerConsented missing, null, not a bool, or false   400 4000035
//   deliveryStatus missing, null, not one of the five       400 4000036
//   sampleContentProvided missing, null, not a bool         400 4000041
//   refundPreference present and not DECLINE,
//     GRANT_FULL or GRANT_PRORATED (null = absent)          400 4000044
//   consumptionPercentage present (null = absent) and not an
//     integer in 0…100000                                   400, no errorCode
//   consumptionPercentage non-zero, deliveryStatus not
//     DELIVERED                                             400, no errorCode
//   no such transaction in this environment for this app    404 4040010
//   a FAMILY_SHARED transaction                             400 4000185
//   consumptionPercentage given for an auto-renewable       400 4000209
// Unknown keys are ignored. Every accepted answer is kept (`Simulator.consumptionAnswers`,
// `iap-sim serve --consumption-log`): repeats are accepted and numbered, the last one counts
// for the outcome (ConsumptionOutcomes.swift). A request whose transaction Apple never asked
// about is accepted too (Apple documents nothing either way).

import Reconciliation

extension ServerAPIService {
    static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    /// 400 without an errorCode: Apple's "malformed request".
    static let malformed = APIAnswer(status: 400, body: [], outcome: "400")

    func sendConsumption(_ id: Substring, _ request: APIRequest, nowMs: Int64) -> APIAnswer {
        guard TransactionIDForm.isWellFormed(id) else { return .invalidTransactionID }
        guard let doc = MiniJSON.parse(request.body), case .object = doc else { return Self.malformed }
        func present(_ key: String) -> MiniJSON? {
            guard let v = doc[key], v != .null else { return nil }
            return v
        }
        guard let consented = present("customerConsented")?.bool, consented else {
            return .error(400, 4_000_035, "Invalid customer consented.")
        }
        guard let delivery = present("deliveryStatus")?.string, Self.deliveryStatuses.contains(delivery) else {
            return .error(400, 4_000_036, "Invalid delivery status.")
        }
        guard let sample = present("sampleContentProvided")?.bool else {
            return .error(400, 4_000_041, "Invalid sample content provided.")
        }
        var preference: String?
        if let p = present("refundPreference") {
            guard let s = p.string, Self.refundPreferences.contains(s) else {
                return .error(400, 4_000_044, "Invalid refund preference.")
            }
            preference = s
        }
        var percentage: Int?
        if let p = present("consumptionPercentage") {
            guard let n = p.int, (0...100_000).contains(n) else { return Self.malformed }
            guard n == 0 || delivery == "DELIVERED" else { return Self.malformed }
            percentage = Int(n)
        }
        guard let i = truth.row(forAnyID: String(id), environment: request.environment,
                                bundle: request.bundle) else { return .transactionNotFound }
        let row = truth.rows[i]
        if row.familyShared { return .error(400, 4_000_185, "Family transaction not supported.") }
        if percentage != nil, row.productType == .autoRenewable {
            return .error(400, 4_000_209, "Consumption percentage is not allowed for auto-renewable subscriptions.")
        }
        _ = consumption.accept(SimConsumptionAnswer(
            transactionID: row.transactionID, environment: request.environment, receivedMs: nowMs, put: 0,
            customerConsented: consented, deliveryStatus: delivery, sampleContentProvided: sample,
            consumptionPercentage: percentage, refundPreference: preference))
        return APIAnswer(status: 202, body: [], outcome: "202")
    }
}
