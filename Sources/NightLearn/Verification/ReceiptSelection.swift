import Foundation
import AppStore
import Postgres
import Reconciliation

/// One receipt on its way through verification.
struct VerifyJob: Sendable {
    let receiptID: String
    /// The receipt's text as stored; empty while `receiptBytes` holds it decoded.
    var receiptData: String
    /// An app receipt the reader decoded for verifying on our machine (`job(fromCandidate:decoding:check:)`);
    /// `AppReceipts` restores its text should it go on to verifyReceipt.
    var receiptBytes: [UInt8]?
    /// Requests sent for it in earlier runs (the attempt numbers continue from there).
    let priorAttempts: Int
    let sweep: Bool
    /// A StoreKit 2 upload (its data is a JWS): verified offline, or swept with the Server API.
    var signed = false
    /// The receipt had no state row when the reader read it: an upload verified offline is then
    /// copied straight into the job's tables (`StagedAnswers`, migration 17).
    var fresh = false
    /// Swept signed transactions: the transaction to ask Get Transaction Info about.
    var transactionID: String?
    /// Where the next request goes.
    var environment: AppStoreEnvironment
    /// Requests sent in this run, switches included.
    var sends = 0
    /// The retry policy's counters (failed runs, 21002 runs, attempts this run, switched).
    var retry: RetryPolicy.State
    /// Set once production said "sandbox" and the sandbox said "production" (in this run or an
    /// earlier one): the environment that last answered, where the receipt stays.
    var startEnvironment: AppStoreEnvironment?
}

/// Contract §2: which receipts are sent to the App Store in this run, in SQL. The report of
/// unresolved receipts holds the conservation tally's `unresolved` receipts (Conservation.swift),
/// the same definition without the wait between runs; a test keeps the two in agreement
/// (RightToTheRowTests.unresolvedAsSelected).
struct ReceiptSelection {
    let settings: JobSettings

    /// Contract §2's unresolved receipts: submitted in the window, no definitive answer of ours,
    /// not settled at upload (status 0/21006 with an active grant), not an input error (decodable
    /// data, user and time present). One row per receipt_id (a duplicated key keeps its first row
    /// by submitted_at).
    /// `dataFormLater`: `receipt_data`'s form is left to the caller (`candidateSQL`).
    /// Read by `COPY (…) TO STDOUT`, which takes no parameters: its values are typed literals.
    static func unresolvedReceiptsSQL(
        select: SQL, settings: JobSettings, eligibleNow: Bool,
        dataFormLater: Bool = false
    ) -> SQL {
        let src: SQL = "\(ident: settings.sourceSchema)"
        let job = settings.jobSchema.sql
        return """
            SELECT \(select)
            FROM \(SourceRelation.receipts.cleanRows("\(src).iap_receipts", jobSchema: settings.jobSchema,
                                                 dataFormLater: dataFormLater)) r
            LEFT JOIN \(job).receipt_state s ON s.receipt_id = r.receipt_id
            WHERE r.submitted_at >= to_timestamp(\(literal: .int(settings.windowStart)) / 1000.0)
              AND r.submitted_at <= to_timestamp(\(literal: .int(settings.asOf)) / 1000.0)
              AND NOT coalesce(s.definitive, false)
              AND NOT (coalesce(r.verify_status, -1) IN (0, 21006) AND EXISTS (
                    SELECT 1 FROM \(src).iap_grants g WHERE g.transaction_id = r.transaction_id AND g.revoked_at IS NULL))
              \(eligibleNow ? "AND (s.next_eligible_at IS NULL OR s.next_eligible_at <= now())" : "" as SQL)
            """
    }

    /// The receipts this run sends or verifies offline: the unresolved ones whose wait between
    /// runs has passed, in `receipt_id` order: their answers reach `receipt_state` and
    /// `receipt_transactions` in key order (contract §2). Sorted on the toast pointers (the sort
    /// holds a few bytes a row, so the first row goes out soon); each receipt's data leaves TOAST
    /// once, as COPY sends it. The data's form is the reader's to check (`kind(ofCandidate:)`: an app
    /// receipt must be base64, a text with a dot a JWS in form, equal to `is_base64` and `is_jws`);
    /// in SQL the check would copy every upload twice more. The same rows as
    /// `unresolvedReceiptsSQL` once the reader has dropped the rest (a test compares them).
    /// `OFFSET 0` keeps the sorted subquery whole, so the data is read after the sort.
    var candidateSQL: SQL {
        let sorted = Self.unresolvedReceiptsSQL(
            select: """
                r.receipt_id, r.receipt_data, coalesce(s.attempts, 0) AS attempts, coalesce(s.failed_runs, 0) AS failed_runs,
                       coalesce(s.runs_21002, 0) AS runs_21002, s.start_environment, s.receipt_id IS NULL AS fresh
                """,
            settings: settings, eligibleNow: true, dataFormLater: true)
        return """
            SELECT o.receipt_id::text, o.receipt_data::text, o.attempts::int4, o.failed_runs::int4, o.runs_21002::int4,
                   o.start_environment::text, o.fresh
            FROM (\(sorted)
                  ORDER BY r.receipt_id OFFSET 0) o
            """
    }

    enum CandidateKind { case appReceipt, signedUpload }

    /// What a row of `candidateSQL` is to the run, or nil when the run does not take it: a text
    /// without a dot is an app receipt when it is base64 (`isBase64`, equal to `is_base64`); a
    /// text with a dot is a StoreKit 2 upload when it is a JWS in form (equal to `is_jws`). The
    /// others are input errors, listed in `input_errors.csv` and never verified. The dot is found
    /// at memchr's speed; the verifier reads the JWS strictly anyway.
    static func kind(ofCandidate receiptData: String) -> CandidateKind? {
        var check = SignedDataVerifier.FormCheck()
        return kind(ofCandidate: receiptData, check: &check)
    }

    /// `kind(ofCandidate:)` for the reader, which keeps one `check` for all its rows: the uploads'
    /// shared header is scanned once, not once per upload (the same answers).
    static func kind(ofCandidate receiptData: String, check: inout SignedDataVerifier.FormCheck) -> CandidateKind? {
        var data = receiptData
        let dotted: Bool? = data.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return nil }
            if memchr(base, Int32(UInt8(ascii: ".")), bytes.count) != nil { return true }
            return isBase64(bytes) ? false : nil
        }
        switch dotted {
        case false?: return .appReceipt
        case true?: return check.isJWS(receiptData) ? .signedUpload : nil
        case nil: return nil
        }
    }

    /// The job schema's `is_base64(text)` (migration 8) in one pass: without its spaces, tabs,
    /// carriage returns and newlines the text is one or more base64 characters (`A-Z a-z 0-9 + /`)
    /// then at most two `=`, and its length is a multiple of 4. A test holds the two equal on
    /// hostile texts (CandidateQueryTests).
    static func isBase64(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        base64Class.withUnsafeBufferPointer { table in
            var length = 0, alphabet = 0, padding = 0
            var i = 0
            let n = bytes.count
            while i < n {
                // Runs of the alphabet 16 bytes at a time (their classes OR'ed are 0 only when
                // all are): a byte at a time through the switch was 8% of a night of receipts.
                // (Swift's SIMD16 comparisons, tried, ran 20 times slower here.)
                while padding == 0, n - i >= 16 {
                    var classes: UInt8 = 0
                    for k in i..<(i + 16) { classes |= table[Int(bytes[k])] }
                    guard classes == 0 else { break }
                    i += 16
                    alphabet += 16
                    length += 16
                }
                guard i < n else { break }
                switch table[Int(bytes[i])] {
                case 0:
                    guard padding == 0 else { return false }
                    alphabet += 1
                    length += 1
                case 1:
                    padding += 1
                    guard padding <= 2 else { return false }
                    length += 1
                case 2: break
                default: return false
                }
                i += 1
            }
            return alphabet > 0 && length % 4 == 0
        }
    }

    /// `isBase64` and the decoding in one pass: the text's bytes when it is base64 as `is_base64`
    /// says (its whitespace skipped; the bits past the last character ignored, as Foundation does), nil
    /// when it is not. A test holds it equal to `isBase64` and to Foundation's decoding on hostile texts.
    static func base64Decoded(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let n = text.count
        guard n > 0, let src = text.baseAddress else { return nil }
        var valid = true
        let out = [UInt8](unsafeUninitializedCapacity: n / 4 * 3 + 4) { buffer, written in
            quadTables.withUnsafeBufferPointer { tables in
                guard let dst = buffer.baseAddress, let t = tables.baseAddress else { return }
                var o = 0, i = 0, alphabet = 0, padding = 0, inQuad = 0
                var quad: UInt32 = 0
                while i < n {
                    // Whole quads of the alphabet from a quad's start (a receipt is nearly all of
                    // them): four lookups give the three bytes, or a mark (`=`, whitespace, any
                    // other byte) above them, and the quad is read a character at a time.
                    if inQuad == 0 && padding == 0 {
                        let start = i
                        while n &- i >= 4 {
                            let x =
                                t[Int(src[i])] | t[256 &+ Int(src[i &+ 1])] | t[512 &+ Int(src[i &+ 2])]
                                | t[768 &+ Int(src[i &+ 3])]
                            guard x < 1 << 24 else { break }
                            UnsafeMutableRawPointer(dst + o).storeBytes(of: x.littleEndian, as: UInt32.self)
                            o &+= 3
                            i &+= 4
                        }
                        alphabet &+= i &- start
                        guard i < n else { break }
                    }
                    let v = t[Int(src[i])]
                    i &+= 1
                    if v < 1 << 24 {
                        guard padding == 0 else { valid = false; break }
                        quad = quad << 6 | v >> 2
                        alphabet &+= 1
                        inQuad &+= 1
                        if inQuad == 4 {
                            dst[o] = UInt8(truncatingIfNeeded: quad >> 16)
                            dst[o + 1] = UInt8(truncatingIfNeeded: quad >> 8)
                            dst[o + 2] = UInt8(truncatingIfNeeded: quad)
                            o &+= 3
                            (quad, inQuad) = (0, 0)
                        }
                    } else if v == padMark {
                        padding &+= 1
                        guard padding <= 2 else { valid = false; break }
                    } else if v != spaceMark {
                        valid = false
                        break
                    }
                }
                guard valid, alphabet > 0, (alphabet + padding) % 4 == 0 else { valid = false; return }
                // The last quad's two or three characters: one or two bytes.
                if inQuad == 2 {
                    dst[o] = UInt8(truncatingIfNeeded: quad >> 4)
                    o += 1
                } else if inQuad == 3 {
                    dst[o] = UInt8(truncatingIfNeeded: quad >> 10)
                    dst[o + 1] = UInt8(truncatingIfNeeded: quad >> 2)
                    o += 2
                }
                written = o
            }
        }
        return valid ? out : nil
    }

    /// `quadTables`' marks, above any quad's three bytes.
    private static let padMark: UInt32 = 0x0100_0000, spaceMark: UInt32 = 0x0200_0000, badMark: UInt32 = 0x0400_0000

    /// Four tables of 256: a character's share of the three bytes of its quad, for each of the four
    /// places (the bytes in little-endian order, stored four at a time); for `=`, whitespace and any
    /// other byte, their mark (above 2^24) in every place.
    private static let quadTables: [UInt32] = {
        func value(_ c: UInt8) -> UInt32? {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): return 62
            case UInt8(ascii: "/"): return 63
            default: return nil
            }
        }
        var t = [UInt32](repeating: 0, count: 1024)
        for c in 0..<256 {
            let b = UInt8(c)
            let mark: UInt32 = b == UInt8(ascii: "=") ? padMark : [32, 9, 13, 10].contains(b) ? spaceMark : badMark
            guard let v = value(b) else { for k in 0..<4 { t[k * 256 + c] = mark }; continue }
            t[c] = v << 2
            t[256 + c] = v >> 4 | (v & 0xF) << 12
            t[512 + c] = (v >> 2) << 8 | (v & 3) << 22
            t[768 + c] = v << 16
        }
        return t
    }()

    /// 0: the base64 alphabet; 1: `=`; 2: space, tab, carriage return, newline (skipped); 3: any other byte.
    private static let base64Class: [UInt8] = (0..<256).map { c in
        switch UInt8(c) {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
            return 0
        case UInt8(ascii: "="): return 1
        case 32, 9, 13, 10: return 2
        default: return 3
        }
    }

    /// The refund sweep: the newest receipt of each user holding active grants of non-consumables
    /// or subscriptions granted within the refund window, oldest-checked first. Receipts checked
    /// within `sweepIntervalHours` are skipped, so a rerun after a crash does not ask again.
    /// Read by `COPY (…) TO STDOUT`, which takes no parameters: its values are typed literals.
    var sweepSQL: SQL {
        let src: SQL = "\(ident: settings.sourceSchema)"
        let job = settings.jobSchema.sql
        let refundStart = SQLLiteral.int(settings.refundWindowStart), asOf = SQLLiteral.int(settings.asOf)
        return """
            WITH holders AS (
                SELECT DISTINCT g.user_id FROM \(src).iap_grants g
                JOIN \(src).iap_products p ON p.product_id = g.product_id
                WHERE g.revoked_at IS NULL AND p.product_type IN ('non_consumable', 'auto_renewable', 'non_renewing')
                  AND g.granted_at >= to_timestamp(\(literal: refundStart) / 1000.0)
                  AND g.granted_at <= to_timestamp(\(literal: asOf) / 1000.0)
            ), newest AS (
                SELECT DISTINCT ON (r.user_id) r.receipt_id, r.receipt_data, r.verify_status, r.transaction_id
                FROM \(SourceRelation.receipts.cleanRows("\(src).iap_receipts", jobSchema: settings.jobSchema)) r
                JOIN holders h ON h.user_id = r.user_id
                WHERE r.submitted_at <= to_timestamp(\(literal: asOf) / 1000.0)
                  \(settings.serverAPI == nil ? Self.noSignedTransactions(job) : "")
                ORDER BY r.user_id, r.submitted_at DESC, r.receipt_id DESC
            )
            SELECT n.receipt_id, n.receipt_data, coalesce(s.attempts, 0), coalesce(s.failed_runs, 0),
                   -- a signed transaction is asked in the environment it was signed for
                   coalesce(s.runs_21002, 0), CASE WHEN s.kind = 'signed_transaction' THEN s.environment END,
                   -- a signed transaction is swept by asking Get Transaction Info about its transaction
                   CASE WHEN s.kind = 'signed_transaction' THEN (SELECT min(rt.transaction_id)
                        FROM \(job).receipt_transactions rt WHERE rt.receipt_id = n.receipt_id) END
            FROM newest n LEFT JOIN \(job).receipt_state s ON s.receipt_id = n.receipt_id
            -- resolved receipts only (the unresolved ones are verified anyway): a valid answer of ours,
            -- or settled at upload (status 0/21006 with an active grant) with no definitive answer of ours yet
            -- (a sweep that failed is tried again once the sweep interval has passed)
            WHERE (CASE WHEN s.definitive THEN s.verdict = 'valid'
                        ELSE coalesce(n.verify_status, -1) IN (0, 21006) AND EXISTS (
                            SELECT 1 FROM \(src).iap_grants g WHERE g.transaction_id = n.transaction_id AND g.revoked_at IS NULL)
                   END)
              AND coalesce(greatest(s.last_swept_at, s.last_attempt_at), '-infinity') < now() - \(literal: .int(settings.sweepIntervalHours)) * interval '1 hour'
            ORDER BY coalesce(greatest(s.last_swept_at, s.last_attempt_at), '-infinity'), n.receipt_id
            LIMIT \(literal: .int(settings.sweepLimit))
            """
    }

    /// Without the Server API a signed transaction is not swept: it says what it said when it was
    /// signed, verifyReceipt cannot read it, and verifying it again learns no refund.
    static func noSignedTransactions(_ job: SQL) -> SQL {
        "AND NOT \(job).is_jws(r.receipt_data)"
    }

    /// The sweep list: small (at most `--sweep-limit`), so it is read whole.
    func sweepJobs(_ db: PGConnection) throws -> [VerifyJob] {
        var jobs: [VerifyJob] = []
        try db.copyOut("COPY (\(sweepSQL)) TO STDOUT") { line in
            if let job = Self.job(fromCopyLine: line, sweep: true) { jobs.append(job) }
        }
        return jobs
    }

    /// The columns of `candidateSQL`, read in COPY's binary format (`job(fromCandidate:)`).
    static let candidateColumns = 7

    /// A row of `candidateSQL` as the reader hands it on, or nil when the run does not take it
    /// (`kind(ofCandidate:)`). With `decoding` (app receipts verified on our machine), an app receipt
    /// is decoded straight from the row in the pass that checks it is base64, and the job carries its
    /// bytes, not its text: made a String, checked, then decoded from the String by Foundation, the
    /// text cost a tenth of the night's CPU.
    static func job(
        fromCandidate row: CopyBinaryReader.Row, decoding: Bool, check: inout SignedDataVerifier.FormCheck
    ) -> VerifyJob? {
        guard let text = row.bytes(1), let base = text.baseAddress else { return nil }
        if decoding, memchr(base, Int32(UInt8(ascii: ".")), text.count) == nil {
            guard let bytes = base64Decoded(text), var job = job(fromCandidate: row, data: "") else { return nil }
            job.receiptBytes = bytes
            return job
        }
        guard let data = row.text(1), var job = job(fromCandidate: row, data: data),
            let kind = kind(ofCandidate: data, check: &check)
        else { return nil }
        job.signed = kind == .signedUpload
        return job
    }

    /// A row of `candidateSQL` (binary COPY: its types are the query's casts, text and int4), its
    /// receipt's text `data`.
    private static func job(fromCandidate row: CopyBinaryReader.Row, data: String) -> VerifyJob? {
        guard let id = row.text(0) else { return nil }
        let start = row.text(5).flatMap(AppStoreEnvironment.init(rawValue:))
        let retry = RetryPolicy.State(
            failedRuns: Int(row.int32(3) ?? 0), runs21002: Int(row.int32(4) ?? 0),
            switched: start != nil)
        return VerifyJob(
            receiptID: id, receiptData: data, priorAttempts: Int(row.int32(2) ?? 0), sweep: false,
            fresh: row.bool(6) ?? false, environment: start ?? .production, retry: retry,
            startEnvironment: start)
    }

    static func job(fromCopyLine line: UnsafeBufferPointer<UInt8>, sweep: Bool) -> VerifyJob? {
        let f = CopyText.fields(line)
        guard f.count == 6 || f.count == 7, let id = f[0], let data = f[1] else { return nil }
        // A receipt the environments disagreed on starts where the last answer came from and is
        // never switched again; every other receipt starts in production.
        let start = f[5].flatMap(AppStoreEnvironment.init(rawValue:))
        let retry = RetryPolicy.State(
            failedRuns: Int(f[3] ?? "0") ?? 0, runs21002: Int(f[4] ?? "0") ?? 0,
            switched: start != nil)
        let transactionID = f.count == 7 ? f[6] : nil
        return VerifyJob(
            receiptID: id, receiptData: data, priorAttempts: Int(f[2] ?? "0") ?? 0, sweep: sweep,
            signed: transactionID != nil, transactionID: transactionID,
            environment: start ?? .production, retry: retry, startEnvironment: start)
    }

}
