// The truth file's consumption columns and the generator's consumption requests:
// strict parsing, which transactions are asked and when, and the shop's data for the answers.

@testable import AppStoreSimulator
import Foundation
import Reconciliation
@testable import SimulatorData
import Testing

@Suite("Apple truth: consumption requests")
struct ConsumptionTruthTests {
    static let asOf: Int64 = 1_795_000_000_000

    @Test("consumption_request_ms, consumption_request_reason and ownership read back; bad ones are named with the line")
    func columns() throws {
        var row = AppleTruthRow(transactionID: "1000000000000001", productID: "p.coins", productType: .consumable,
                                purchaseDateMs: 1_790_000_000_000, bundleID: "com.example.game", customer: "U1")
        row.consumptionRequest = SimConsumptionRequest(signedDateMs: 1_790_000_500_000, reason: "LEGAL")
        var family = AppleTruthRow(transactionID: "1000000000000002", productID: "p.coins", productType: .consumable,
                                   purchaseDateMs: 1_790_000_000_000, bundleID: "com.example.game", customer: "U2")
        family.familyShared = true
        let text = AppleTruthFile.header + AppleTruthFile.line(row) + AppleTruthFile.line(family)
        #expect(AppleTruthFile.header.contains("\tconsumption_request_ms\tconsumption_request_reason\townership\tnotifications\n"))
        let back = try AppleTruthFile.parse(text)
        #expect(back == [row, family])
        #expect(AppleTruthFile.line(family).hasSuffix("\t\t\tFAMILY_SHARED\t\n"))
        #expect(try AppleTruthFile.parse(AppleTruthFile.header + AppleTruthFile.line(row).replacingOccurrences(of: "\tLEGAL\t", with: "\tLEGAL\tPURCHASED"))[0].familyShared == false)
        for reason in SimConsumptionRequest.reasons {
            let line = AppleTruthFile.line(row).replacingOccurrences(of: "\tLEGAL\t", with: "\t\(reason)\t")
            #expect(try AppleTruthFile.parse(AppleTruthFile.header + line)[0].consumptionRequest?.reason == reason)
        }
        let bad: [(String, String)] = [
            (AppleTruthFile.line(row).replacingOccurrences(of: "\tLEGAL\t", with: "\tlegal\t"), "unknown consumption_request_reason"),
            (AppleTruthFile.line(row).replacingOccurrences(of: "\tLEGAL\t", with: "\tREFUND\t"), "unknown consumption_request_reason"),
            (AppleTruthFile.line(row).replacingOccurrences(of: "\tLEGAL\t", with: "\t\t"), "without consumption_request_reason"),
            (AppleTruthFile.line(row).replacingOccurrences(of: "\t1790000500000\t", with: "\t\t"), "without consumption_request_ms"),
            (AppleTruthFile.line(row).replacingOccurrences(of: "\t1790000500000\t", with: "\t1790000000000\t"), "not after purchase_date_ms"),
            (AppleTruthFile.line(row).replacingOccurrences(of: "\t1790000500000\t", with: "\t1789000000000\t"), "not after purchase_date_ms"),
            (AppleTruthFile.line(row).replacingOccurrences(of: "\t1790000500000\t", with: "\tsoon\t"), "consumption_request_ms is not an integer"),
            (AppleTruthFile.line(family).replacingOccurrences(of: "FAMILY_SHARED", with: "FAMILY"), "unknown ownership"),
        ]
        for (line, problem) in bad {
            do {
                _ = try AppleTruthFile.parse(AppleTruthFile.header + line)
                Issue.record("accepted: \(line)")
            } catch let error as AppleTruthError {
                #expect(error.line == 2 && error.problem.contains(problem), "\(error)")
            }
        }
    }

    static func settings(users: Int = 2000, seed: UInt64 = 7) -> GeneratorSettings {
        var s = GeneratorSettings(users: users, seed: seed, asOf: asOf, catalog: Catalog(bundle: "com.example.game"),
                                  refundsServed: true, badRows: true)
        s.apiSweeps = true
        return s
    }

    static func facts(_ settings: GeneratorSettings) -> (facts: [ConsumptionRequestFact], users: [UserData]) {
        var facts: [ConsumptionRequestFact] = []
        var users: [UserData] = []
        ScenarioPlan(settings: settings).forEach { d in
            let f = ConsumptionRequests.facts(d, settings: settings)
            if !f.isEmpty { users.append(d) }
            facts += f
        }
        return (facts, users)
    }

    @Test("the generator asks about a deterministic mix: every reason, kinds, windows, never a refunded transaction")
    func generated() throws {
        let settings = Self.settings()
        let (facts, users) = Self.facts(settings)
        #expect(facts.count > 60, "\(facts.count) requests")
        #expect(Set(facts.map(\.request.reason)) == Set(SimConsumptionRequest.reasons))
        #expect(facts.allSatisfy { $0.request.signedDateMs > $0.row.purchaseDateMs && $0.request.signedDateMs < Self.asOf })
        #expect(facts.allSatisfy { $0.row.refund == nil && $0.row.bundleID == "com.example.game" })
        let refunded = Set(users.flatMap { $0.refunds.map(\.transactionID) + Array($0.appleRefunds.keys) })
        #expect(facts.allSatisfy { !refunded.contains($0.row.transactionID) })
        let inWindow = facts.filter { !$0.expired }
        #expect(inWindow.allSatisfy { Self.asOf - $0.request.signedDateMs < 12 * Span.hour - 20 * Span.minute })
        #expect(facts.filter(\.expired).allSatisfy {
            let age = Self.asOf - $0.request.signedDateMs
            return age >= Span.day && age <= 5 * Span.day
        })
        let share = Double(inWindow.count) / Double(facts.count)
        #expect(share > 0.55 && share < 0.85, "in window: \(share)")
        #expect(facts.contains { $0.delivered } && facts.contains { !$0.delivered })
        #expect(facts.contains { $0.row.environment == .sandbox })
        #expect(facts.contains { $0.row.productType == .nonConsumable || $0.row.productType == .nonRenewing })
        #expect(facts.contains { $0.row.productType == .autoRenewable })
        #expect(facts.filter { $0.row.productType == .consumable && $0.row.environment == .production }.count > facts.count / 2)
        // No refund the nights at as-of could see: expired requests are declined unless told GRANT_FULL,
        // and the in-window ones are decided after as-of.
        #expect(facts.filter(\.expired).allSatisfy { ConsumptionOutcomeModel.draw(transactionID: $0.row.transactionID) >= 0.95 })
        #expect(inWindow.allSatisfy {
            ConsumptionOutcomeModel.outcomeMs(transactionID: $0.row.transactionID, request: $0.request) > Self.asOf
        })
        // Deterministic, and the same in the truth file the writer makes.
        #expect(Self.facts(settings).facts.map(\.request) == facts.map(\.request))
        #expect(Self.facts(Self.settings(seed: 8)).facts.map(\.row.transactionID) != facts.map(\.row.transactionID))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("truth-\(UUID().uuidString).tsv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try AppleTruthWriter.write(plan: ScenarioPlan(settings: settings), refundsServed: true, to: path)
        let truth = try AppleTruth.load(path: path)
        let asked = truth.rows.filter { $0.consumptionRequest != nil }
        #expect(asked.map(\.transactionID) == facts.map(\.row.transactionID))
        #expect(asked.map { $0.consumptionRequest! } == facts.map(\.request))
    }

    @Test("the shop's data: consents for most users asked (a few late), consumption for most granted ones, statuses only undelivered")
    func shopData() {
        let settings = Self.settings()
        var consents: [(user: String, at: Int64)] = []
        var consumption: [(tid: String, percentage: Int?, status: String?)] = []
        var facts: [ConsumptionRequestFact] = []
        ScenarioPlan(settings: settings).forEach { d in
            let f = ConsumptionRequests.facts(d, settings: settings)
            facts += f
            consents += ConsumptionRequests.consents(f, settings: settings)
            consumption += ConsumptionRequests.consumption(f, settings: settings)
        }
        let users = Set(facts.map(\.row.customer))
        #expect(Set(consents.map(\.user)).isSubset(of: users) && Set(consents.map(\.user)).count == consents.count)
        let share = Double(consents.count) / Double(users.count)
        #expect(share > 0.5 && share < 0.9, "consents for \(share) of the users asked")
        let firstRequest = Dictionary(facts.map { ($0.row.customer, $0.request.signedDateMs) }, uniquingKeysWith: min)
        let late = consents.filter { $0.at > firstRequest[$0.user]! }
        #expect(!late.isEmpty && late.count < consents.count / 3)
        let byTID = Dictionary(uniqueKeysWithValues: facts.map { ($0.row.transactionID, $0) })
        #expect(consumption.allSatisfy { byTID[$0.tid] != nil })
        let delivered = consumption.filter { byTID[$0.tid]!.delivered }
        #expect(delivered.allSatisfy { $0.status == nil && $0.percentage.map { (0...100_000).contains($0) } == true })
        #expect(delivered.contains { $0.percentage! >= 50_000 } && delivered.contains { $0.percentage! < 50_000 })
        let deliveredShare = Double(delivered.count) / Double(facts.filter(\.delivered).count)
        #expect(deliveredShare > 0.4 && deliveredShare < 0.8)
        let undelivered = consumption.filter { !byTID[$0.tid]!.delivered }
        #expect(undelivered.allSatisfy {
            $0.percentage == nil && ["UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_SERVER_OUTAGE"].contains($0.status ?? "")
        })
        #expect(!undelivered.isEmpty)
        let catalog = settings.catalog
        #expect(catalog.products.filter { ConsumptionRequests.sampleContentProvided($0.productID, catalog: catalog) == true }.count == 2)
    }

    @Test("only purchases whose verdict the scenarios state are asked about: granted to one user, or compensated")
    func judged() {
        let settings = Self.settings()
        ScenarioPlan(settings: settings).forEach { d in
            for f in ConsumptionRequests.facts(d, settings: settings) {
                let tid = f.row.transactionID
                let active = d.grants.filter { $0.transactionID == tid && $0.revokedAt == nil }
                if f.ours {
                    #expect(f.delivered && Set(active.compactMap(\.userID)) == [f.user], "\(tid)")
                } else {
                    #expect(f.row.environment == .production && !f.delivered, "\(tid)")
                    #expect(d.compensate.contains { $0[5] == tid && $0[1] == f.user }, "\(tid)")
                }
                #expect(!d.duplicates.contains { $0[5] == tid } && !d.unattributed.contains { $0[0] == tid })
            }
        }
    }

    @Test("the expected consumption_requests.csv: one row per request in the night's order, each answer as respond gives it")
    func expectedFile() throws {
        let settings = Self.settings()
        var rows: [ConsumptionRequests.ExpectedRow] = []
        var facts: [ConsumptionRequestFact] = []
        ScenarioPlan(settings: settings).forEach { d in
            let f = ConsumptionRequests.facts(d, settings: settings)
            facts += f
            rows += ConsumptionRequests.expectedRows(f, settings: settings)
        }
        let columns = ReportFile.consumptionRequests.columns
        func cell(_ row: ConsumptionRequests.ExpectedRow, _ name: String) -> String { row.cells[columns.firstIndex(of: name)!] }
        #expect(rows.count == facts.count && rows.allSatisfy { $0.cells.count == columns.count })
        #expect(Set(rows.map(\.uuid)).count == rows.count && rows.allSatisfy { cell($0, "notification_uuid") == $0.uuid })
        var answers: [String: Int] = [:]
        for (row, f) in zip(rows, facts) {
            let answer = cell(row, "answer")
            answers[answer, default: 0] += 1
            #expect(cell(row, "transaction_id") == f.row.transactionID && cell(row, "requested_at") == UTC.timestamp(f.request.signedDateMs))
            switch answer {
            case "expired":
                #expect(f.expired && cell(row, "user_id") == f.user && cell(row, "outcome") == "declined"
                        && cell(row, "outcome_at") <= UTC.timestamp(Self.asOf), "\(row.cells)")
            case "sent":
                #expect(!f.expired && cell(row, "answered_at") == UTC.timestamp(Self.asOf) && cell(row, "outcome") == "pending")
                let status = cell(row, "delivery_status"), pct = cell(row, "consumption_percentage")
                #expect(status == "DELIVERED" ? f.ours : status.hasPrefix("UNDELIVERED_"), "\(row.cells)")
                if f.row.productType == .autoRenewable { #expect(pct.isEmpty) }
                else if status != "DELIVERED" { #expect(pct == "0", "\(row.cells)") }
            case "no_consent":
                #expect(!f.expired && cell(row, "delivery_status").isEmpty && cell(row, "answered_at").isEmpty)
            default:
                Issue.record("unexpected answer \(answer)")
            }
        }
        #expect((answers["sent"] ?? 0) > 0 && (answers["no_consent"] ?? 0) > 0 && (answers["expired"] ?? 0) > 0, "\(answers)")
        let sorted = ConsumptionRequests.sorted(rows)
        #expect(zip(sorted, sorted.dropFirst()).allSatisfy { $0.requestedMs < $1.requestedMs
            || ($0.requestedMs == $1.requestedMs && Array($0.uuid.utf8).lexicographicallyPrecedes(Array($1.uuid.utf8))) })
    }
}
