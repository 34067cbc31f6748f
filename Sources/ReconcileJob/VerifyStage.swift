import AppStore
import Foundation
import HTTP
import Logging
import Postgres
import Reconciliation

/// What the verification stage did, for the ledger, the summary and the tests.
public struct VerifyCounts: Sendable, Codable, Equatable {
    public var candidates = 0
    public var sweep = 0
    public var requests = 0
    public var ok = 0
    public var rejected = 0
    public var switched = 0
    public var retried = 0
    public var unresolved = 0
    public var config = 0
    public var seconds = 0.0
}

/// One receipt on its way through the stage.
struct VerifyJob {
    let receiptID: String
    let receiptData: String
    let priorAttempts: Int
    var failedRuns: Int
    var runs21002: Int
    let sweep: Bool
    var environment: AppStoreEnvironment
    var sends = 0
    var httpAttemptsThisRun = 0
    var switched = false
    var counted21002 = false
    /// Set once production said "sandbox" and the sandbox said "production" (in this run or an
    /// earlier one): the environment that last answered, where the receipt stays.
    var startEnvironment: AppStoreEnvironment?
}

/// Contract §2–§3: select the unresolved receipts and the refund sweep, ask the App Store
/// concurrently, and persist every answer as it arrives.
///
/// Threads: a reader streams candidates from Postgres (its own connection) into a bounded
/// queue; the calling thread owns the libcurl multi handle and keeps `concurrency` requests in
/// flight; a writer (its own connection) commits answers in small groups, so a kill loses at
/// most what was in flight or in the last group. Memory is bounded by the queues, not by rows.
public final class VerifyStage {
    let settings: JobSettings
    let logger: Logger
    let runID: Int64
    let progress: Progress

    public init(settings: JobSettings, runID: Int64, logger: Logger) {
        self.settings = settings
        self.runID = runID
        self.logger = logger
        progress = Progress(stage: "verify", enabled: settings.progress)
    }

    // MARK: Selection (contract §2)

    /// Contract §2's unresolved receipts: submitted in the window, no definitive answer of ours,
    /// not settled at upload (status 0/21006 with an active grant), not an input error (decodable
    /// data, user and time present). One row per receipt_id (a duplicated key keeps its first row
    /// by submitted_at). The report of
    /// unresolved receipts uses the same definition, without the wait between runs.
    static func unresolvedReceiptsSQL(select: String, settings: JobSettings, eligibleNow: Bool) -> String {
        let src = "\"\(settings.sourceSchema)\""
        let job = settings.jobSchema.quoted
        return """
        SELECT \(select)
        FROM \(SourceRelation.receipts.cleanRows("\(src).iap_receipts", jobSchema: settings.jobSchema)) r
        LEFT JOIN \(job).receipt_state s ON s.receipt_id = r.receipt_id
        WHERE r.submitted_at >= to_timestamp(\(settings.windowStart) / 1000.0)
          AND r.submitted_at <= to_timestamp(\(settings.asOf) / 1000.0)
          AND NOT coalesce(s.definitive, false)
          AND NOT (coalesce(r.verify_status, -1) IN (0, 21006) AND EXISTS (
                SELECT 1 FROM \(src).iap_grants g WHERE g.transaction_id = r.transaction_id AND g.revoked_at IS NULL))
          \(eligibleNow ? "AND (s.next_eligible_at IS NULL OR s.next_eligible_at <= now())" : "")
        """
    }

    /// The receipts this run sends: the unresolved ones whose wait between runs has passed.
    var candidateSQL: String {
        Self.unresolvedReceiptsSQL(
            select: """
                r.receipt_id, r.receipt_data, coalesce(s.attempts, 0), coalesce(s.failed_runs, 0),
                       coalesce(s.runs_21002, 0), s.start_environment
                """,
            settings: settings, eligibleNow: true) + "\nORDER BY r.submitted_at, r.receipt_id"
    }

    /// The refund sweep: the newest receipt of each user holding active grants of non-consumables
    /// or subscriptions granted within the refund window, oldest-checked first. Receipts checked
    /// within `sweepIntervalHours` are skipped, so a rerun after a crash does not ask again.
    var sweepSQL: String {
        let src = "\"\(settings.sourceSchema)\""
        let job = settings.jobSchema.quoted
        let refundStart = settings.asOf - EpochMillis(settings.refundWindowDays) * 86_400_000
        return """
        WITH holders AS (
            SELECT DISTINCT g.user_id FROM \(src).iap_grants g
            JOIN \(src).iap_products p ON p.product_id = g.product_id
            WHERE g.revoked_at IS NULL AND p.product_type IN ('non_consumable', 'auto_renewable', 'non_renewing')
              AND g.granted_at >= to_timestamp(\(refundStart) / 1000.0)
              AND g.granted_at <= to_timestamp(\(settings.asOf) / 1000.0)
        ), newest AS (
            SELECT DISTINCT ON (r.user_id) r.receipt_id, r.receipt_data, r.verify_status, r.transaction_id
            FROM \(SourceRelation.receipts.cleanRows("\(src).iap_receipts", jobSchema: settings.jobSchema)) r
            JOIN holders h ON h.user_id = r.user_id
            WHERE r.submitted_at <= to_timestamp(\(settings.asOf) / 1000.0)
            ORDER BY r.user_id, r.submitted_at DESC, r.receipt_id DESC
        )
        SELECT n.receipt_id, n.receipt_data, coalesce(s.attempts, 0), coalesce(s.failed_runs, 0),
               coalesce(s.runs_21002, 0), NULL
        FROM newest n LEFT JOIN \(job).receipt_state s ON s.receipt_id = n.receipt_id
        -- resolved receipts only (the unresolved ones are verified anyway): a valid answer of ours,
        -- or settled at upload (status 0/21006 with an active grant) with no definitive answer of ours yet
        -- (a sweep that failed is tried again once the sweep interval has passed)
        WHERE (CASE WHEN s.definitive THEN s.verdict = 'valid'
                    ELSE coalesce(n.verify_status, -1) IN (0, 21006) AND EXISTS (
                        SELECT 1 FROM \(src).iap_grants g WHERE g.transaction_id = n.transaction_id AND g.revoked_at IS NULL)
               END)
          AND coalesce(greatest(s.last_swept_at, s.last_attempt_at), '-infinity') < now() - interval '\(settings.sweepIntervalHours) hours'
        ORDER BY coalesce(greatest(s.last_swept_at, s.last_attempt_at), '-infinity'), n.receipt_id
        LIMIT \(settings.sweepLimit)
        """
    }

    // MARK: The stage

    public func run(db: PGConnection) throws -> VerifyCounts {
        let started = Date()
        var counts = VerifyCounts()
        // The sweep list is small (at most --sweep-limit); the unresolved receipts stream, and the
        // reader tells their number when it has read them all (no second pass to count them).
        let sweep = settings.sweepLimit > 0 ? try loadJobs(db, sql: sweepSQL, sweep: true) : []
        counts.sweep = sweep.count
        let candidatesRead = Counter()
        logger.info("verification starting", metadata: ["sweep": "\(sweep.count)"])

        // Reader: streams candidates through a bounded queue.
        let input = BlockingQueue<VerifyJob>(capacity: max(256, settings.concurrency * 8))
        let readerError = ErrorBox()
        let progress = self.progress
        let reader = Thread { [candidateSQL, settings] in
            do {
                let rdb = try JobDatabase.connect(settings)
                defer { rdb.close() }
                try rdb.copyOut("COPY (\(candidateSQL)) TO STDOUT") { line in
                    if let job = VerifyStage.job(fromCopyLine: line, sweep: false) {
                        candidatesRead.add(1)
                        guard input.push(job) else { return }
                    }
                }
            } catch {
                readerError.set(error)
            }
            progress.setTotal(candidatesRead.value + sweep.count)
            for job in sweep { guard input.push(job) else { break } }
            input.close()
        }
        reader.stackSize = 1 << 20
        reader.start()

        // Writer: group commits.
        let answers = BlockingQueue<String>(capacity: 50_000)
        let writer = AnswerWriter(queue: answers, settings: settings, logger: logger)
        writer.start()

        func milestone(_ what: String) {
            logger.debug("\(what)", metadata: ["ms": "\(Int(Date().timeIntervalSince(started) * 1000))"])
        }
        milestone("requests starting")
        var loopError: Error?
        do {
            try drive(input: input, answers: answers, counts: &counts, milestone: milestone)
        } catch {
            loopError = error
        }
        milestone("requests done")
        input.close()
        answers.close()
        writer.waitUntilDone()
        milestone("answers committed")
        progress.finish()
        counts.candidates = candidatesRead.value
        counts.seconds = Date().timeIntervalSince(started)
        if let error = readerError.get() { throw JobError.from(error, doing: "reading receipts to verify") }
        if let error = writer.error { throw JobError.from(error, doing: "recording App Store answers") }
        if let loopError { throw loopError }
        return counts
    }

    private func loadJobs(_ db: PGConnection, sql: String, sweep: Bool) throws -> [VerifyJob] {
        var jobs: [VerifyJob] = []
        try db.copyOut("COPY (\(sql)) TO STDOUT") { line in
            if let job = VerifyStage.job(fromCopyLine: line, sweep: sweep) { jobs.append(job) }
        }
        return jobs
    }

    static func job(fromCopyLine line: UnsafeBufferPointer<UInt8>, sweep: Bool) -> VerifyJob? {
        let f = CopyText.fields(line)
        guard f.count == 6, let id = f[0], let data = f[1] else { return nil }
        // A receipt the environments disagreed on starts where the last answer came from and is
        // never switched again; every other receipt starts in production.
        let start = f[5].flatMap(AppStoreEnvironment.init(rawValue:))
        return VerifyJob(
            receiptID: id, receiptData: data, priorAttempts: Int(f[2] ?? "0") ?? 0,
            failedRuns: Int(f[3] ?? "0") ?? 0, runs21002: Int(f[4] ?? "0") ?? 0, sweep: sweep,
            environment: start ?? .production, switched: start != nil, startEnvironment: start)
    }

    /// The request loop on the calling thread: owns the multi handle and every job in flight.
    private func drive(input: BlockingQueue<VerifyJob>, answers: BlockingQueue<String>, counts: inout VerifyCounts,
                       milestone: (String) -> Void) throws {
        let http = HTTPMulti()
        defer { http.close() }
        var inFlight: [Int: VerifyJob] = [:]
        var waiting = RetryHeap()
        var nextTag = 0
        var stopping: JobError?
        var inputDone = false
        var rng = SystemRandomNumberGenerator()
        var sawResponse = false
        var sawAnyCompletion = false
        var lastTransportError = ""

        func send(_ job: VerifyJob) throws {
            if nextTag == 0 { milestone("first request") }
            var job = job
            job.sends += 1
            nextTag += 1
            let url = job.environment == .production ? settings.productionURL : settings.sandboxURL
            let body = VerifyReceipt.requestBody(receiptData: job.receiptData, password: settings.sharedSecret)
            try http.add(HTTPRequest(tag: nextTag, url: url, body: body, timeoutMs: settings.timeoutMs))
            inFlight[nextTag] = job
            counts.requests += 1
        }

        while true {
            let now = Date().timeIntervalSince1970
            if stopping == nil {
                while inFlight.count < settings.concurrency {
                    if let due = waiting.popDue(now: now) {
                        try send(due)
                    } else if !inputDone, let job = input.tryPop() {
                        try send(job)
                    } else {
                        if !inputDone && input.isClosedAndEmpty { inputDone = true }
                        break
                    }
                }
            }
            if inFlight.isEmpty {
                if stopping != nil { break }
                if inputDone && waiting.isEmpty { break }
                if !inputDone && waiting.isEmpty {
                    // Nothing to do until the reader delivers.
                    if let job = input.pop(timeoutMs: 200) { try send(job) } else if input.isClosedAndEmpty { inputDone = true }
                    continue
                }
            }
            let wait = waiting.isEmpty ? 100 : max(0, min(100, Int((waiting.nextDue - now) * 1000)))
            for completion in http.poll(timeoutMs: wait) {
                if !sawResponse && !sawAnyCompletion { milestone("first completion"); sawAnyCompletion = true }
                guard var job = inFlight.removeValue(forKey: completion.tag) else { continue }
                let asked = job.environment
                var answer: Answer
                var httpStatus: Int?
                if case .response = completion.outcome { sawResponse = true }
                if case .failure(_, let message, _) = completion.outcome { lastTransportError = message }
                switch completion.outcome {
                case .response(let status, let body):
                    httpStatus = status
                    answer = VerifyReceipt.classify(httpStatus: status, body: body, environment: job.environment,
                                                    allowedBundles: settings.bundleIDs)
                case .failure(_, let message, _):
                    answer = VerifyReceipt.transportFailure(message)
                }
                if answer.answerClass == .switchEnvironment && job.switched {
                    // 21007 then 21008 (or the other way): no third request to either side.
                    answer.problem = Self.environmentsDisagree
                    job.startEnvironment = job.environment
                }
                let outcome = decide(&job, answer: answer, rng: &rng)
                if case .stop = outcome {
                    counts.config += 1
                    if stopping == nil {
                        stopping = JobError(.configuration, "the App Store answered status \(answer.status ?? 0) "
                            + "(\(answer.status == 21004 ? "the shared secret does not match: check IAP_SHARED_SECRET" : "our request was malformed")); "
                            + "verification stopped, no receipt was blamed")
                    }
                    continue
                }
                let record = AnswerRecord(job: job, askedEnvironment: asked, runID: runID, httpStatus: httpStatus, answer: answer,
                                          outcome: outcome, elapsedMs: completion.elapsedMs,
                                          retryDelayMinutes: settings.retryDelayMinutes)
                guard answers.push(record.json) else {
                    throw JobError(.failure, "recording App Store answers failed; verification stopped")
                }
                switch outcome {
                case .final:
                    if answer.answerClass == .ok { counts.ok += 1 } else { counts.rejected += 1 }
                    progress.tick()
                case .switchTo:
                    counts.switched += 1
                    if stopping == nil { try send(job) }
                case .retryAt(let due):
                    counts.retried += 1
                    waiting.push(job, due: due)
                case .unresolved:
                    counts.unresolved += 1
                    progress.tick()
                case .stop:
                    break
                }
                progress.note(retries: counts.retried)
            }
        }
        if let stopping { throw stopping }
        if counts.requests > 0 && !sawResponse {
            throw JobError(.temporary, "the App Store is unreachable (\(lastTransportError)); "
                + "\(counts.unresolved) receipts stay unresolved: run again later")
        }
    }

    /// `last_error` of a receipt production calls a sandbox receipt and the sandbox a production one.
    static let environmentsDisagree = "production says sandbox, sandbox says production"

    enum Outcome {
        case final
        case switchTo
        case retryAt(TimeInterval)
        case unresolved
        case stop
    }

    /// Contract §3's table, plus the in-run retry budget and the 21002-after-three-runs rule.
    private func decide(_ job: inout VerifyJob, answer: Answer, rng: inout SystemRandomNumberGenerator) -> Outcome {
        switch answer.answerClass {
        case .ok, .reject:
            return .final
        case .config:
            return .stop
        case .switchEnvironment where !job.switched:
            job.switched = true
            job.environment = job.environment == .production ? .sandbox : .production
            return .switchTo
        case .switchEnvironment:
            // The environments disagree: asking again in this run cannot change that; the next
            // run asks the environment that answered last.
            job.failedRuns += 1
            return .unresolved
        case .retry:
            if answer.status == 21002 && !job.counted21002 {
                job.counted21002 = true
                job.runs21002 += 1
                if job.runs21002 >= 3 { return .final }
            }
            job.httpAttemptsThisRun += 1
            if job.httpAttemptsThisRun < settings.maxAttempts {
                // Exponential backoff with full jitter.
                let cap = Double(settings.retryBaseMs) * pow(2, Double(job.httpAttemptsThisRun - 1))
                let delay = Double.random(in: 0...max(1, cap), using: &rng) / 1000
                return .retryAt(Date().timeIntervalSince1970 + delay)
            }
            job.failedRuns += 1
            return .unresolved
        }
    }
}

/// A receipt's answer as the writer sends it to `record_answers` (one JSON object).
struct AnswerRecord {
    var json: String

    init(job: VerifyJob, askedEnvironment: AppStoreEnvironment, runID: Int64, httpStatus: Int?, answer: Answer, outcome: VerifyStage.Outcome,
         elapsedMs: Int, retryDelayMinutes: Int) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var o = JSONObject()
        o["r"] = .string(job.receiptID)
        o["n"] = .int(Int64(job.priorAttempts + job.sends))
        o["run"] = .int(runID)
        o["at"] = .int(now)
        o["env"] = .string(askedEnvironment.rawValue)
        if let httpStatus { o["http"] = .int(Int64(httpStatus)) }
        if let status = answer.status { o["st"] = .int(Int64(status)) }
        o["ms"] = .int(Int64(elapsedMs))
        o["sweep"] = .bool(job.sweep)
        o["state"] = .bool(true)
        o["failed_runs"] = .int(Int64(job.failedRuns))
        o["runs_21002"] = .int(Int64(job.runs21002))
        if let bundle = answer.bundleID { o["bundle"] = .string(bundle) }
        if let start = job.startEnvironment { o["start"] = .string(start.rawValue) }
        switch outcome {
        case .final where answer.answerClass == .ok:
            o["cls"] = .string("ok")
            o["final"] = .bool(true)
            o["verdict"] = .string("valid")
            o["txs"] = .raw(AnswerRecord.transactions(answer.transactions))
        case .final:
            o["cls"] = .string("reject")
            o["final"] = .bool(true)
            let reason = answer.rejection ?? .invalidReceipt
            o["verdict"] = .string(reason.rawValue)
            o["err"] = .string(answer.answerClass == .reject ? (answer.problem ?? reason.rawValue)
                               : "status 21002 in 3 runs: malformed receipt")
        case .unresolved:
            o["cls"] = .string(answer.answerClass.rawValue)
            o["final"] = .bool(false)
            if let p = answer.problem { o["err"] = .string(p) }
            // Across runs: wait longer after each failed run (capped at a day).
            let minutes = min(24 * 60, retryDelayMinutes * (1 << min(10, max(0, job.failedRuns - 1))))
            o["next"] = .int(now + Int64(minutes) * 60_000)
        case .switchTo, .retryAt, .stop:
            o["cls"] = .string(answer.answerClass.rawValue)
            o["final"] = .bool(false)
            if let p = answer.problem { o["err"] = .string(p) }
        }
        json = o.encoded
    }

    static func transactions(_ txs: [AppleTransaction]) -> String {
        var out = "["
        for (i, t) in txs.enumerated() {
            if i > 0 { out += "," }
            var o = JSONObject()
            o["tid"] = .string(t.transactionID)
            o["otid"] = .string(t.originalTransactionID)
            o["pid"] = .string(t.productID)
            o["q"] = .int(Int64(t.quantity))
            o["pd"] = .int(t.purchaseDate)
            if let v = t.originalPurchaseDate { o["opd"] = .int(v) }
            if let v = t.expiresDate { o["exp"] = .int(v) }
            if let v = t.cancellationDate { o["cd"] = .int(v) }
            if let v = t.cancellationReason { o["cr"] = .string(v) }
            if let v = t.isTrialPeriod { o["trial"] = .bool(v) }
            if let v = t.webOrderLineItemID { o["wol"] = .string(v) }
            if let v = t.bundleID { o["bundle"] = .string(v) }
            out += o.encoded
        }
        return out + "]"
    }
}

/// A tiny ordered JSON object writer (the job writes its own small JSON; it never parses here).
struct JSONObject {
    enum Value {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case raw(String)
    }
    private var pairs: [(String, Value)] = []

    subscript(key: String) -> Value? {
        get { pairs.first { $0.0 == key }?.1 }
        set {
            pairs.removeAll { $0.0 == key }
            if let newValue { pairs.append((key, newValue)) }
        }
    }

    var encoded: String {
        var out = "{"
        for (i, (k, v)) in pairs.enumerated() {
            if i > 0 { out += "," }
            out += JSONObject.quote(k) + ":"
            switch v {
            case .string(let s): out += JSONObject.quote(s)
            case .int(let n): out += String(n)
            case .bool(let b): out += b ? "true" : "false"
            case .raw(let r): out += r
            }
        }
        return out + "}"
    }

    static func quote(_ s: String) -> String { JSONText.quote(s) }
}

/// Jobs waiting for their backoff to pass, earliest first.
struct RetryHeap {
    private var items: [(due: TimeInterval, job: VerifyJob)] = []
    var isEmpty: Bool { items.isEmpty }
    var nextDue: TimeInterval { items.first?.due ?? .infinity }

    mutating func push(_ job: VerifyJob, due: TimeInterval) {
        items.append((due, job))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].due < items[parent].due else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func popDue(now: TimeInterval) -> VerifyJob? {
        guard let first = items.first, first.due <= now else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < items.count && items[l].due < items[m].due { m = l }
                if r < items.count && items[r].due < items[m].due { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return first.job
    }
}

/// Commits answers in groups on its own connection and thread.
final class AnswerWriter: @unchecked Sendable {
    private let queue: BlockingQueue<String>
    private let settings: JobSettings
    private var schema: JobSchema { settings.jobSchema }
    private let logger: Logger
    private let done = DispatchSemaphore(value: 0)
    private(set) var error: Error?

    init(queue: BlockingQueue<String>, settings: JobSettings, logger: Logger) {
        self.queue = queue
        self.settings = settings
        self.logger = logger
    }

    func start() {
        let thread = Thread { [self] in
            defer { done.signal() }
            do {
                let db = try JobDatabase.connect(settings)
                defer { db.close() }
                let sql = "SELECT \(schema.quoted).record_answers($1::jsonb)"
                while true {
                    let batch = queue.popAll(timeoutMs: 200)
                    if batch.isEmpty {
                        if queue.isClosedAndEmpty { break }
                        continue
                    }
                    // Small groups: a kill loses at most one group besides what was in flight.
                    var start = 0
                    while start < batch.count {
                        let end = min(batch.count, start + 64)
                        try db.query(sql, ["[" + batch[start..<end].joined(separator: ",") + "]"])
                        start = end
                    }
                }
            } catch {
                self.error = error
                queue.close()
            }
        }
        thread.start()
    }

    func waitUntilDone() { done.wait() }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add(_ k: Int) { lock.lock(); n += k; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}

final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var error: Error?
    func set(_ e: Error) { lock.lock(); if error == nil { error = e }; lock.unlock() }
    func get() -> Error? { lock.lock(); defer { lock.unlock() }; return error }
}

extension JobError {
    /// Maps a lower-level error to the contract's exit codes: an unreachable database is temporary.
    static func from(_ error: Error, doing what: String) -> JobError {
        if let e = error as? JobError { return e }
        if let e = error as? PGError {
            if e.isCredentialProblem {
                return JobError(.configuration, "\(what): \(e) (check the database user, password and name)")
            }
            return JobError(e.isConnectionProblem ? .temporary : .failure, "\(what): \(e)")
        }
        return JobError(.failure, "\(what): \(error)")
    }
}
