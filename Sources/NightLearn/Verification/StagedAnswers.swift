import JobStore
import Postgres
import Reconciliation

/// How the answer writer stores a group of answer records (migration 12): COPY into two temporary
/// tables, then one set-based merge per target table (`record_staged_answers()`), in one
/// transaction and one script. The merge rules are `record_answers`' (migrations 1-11), said over
/// columns; no JSON is built or parsed (what that cost: docs/benchmarks.md). Fresh
/// StoreKit 2 uploads skip the staging for their state and link (migration 17, `record`).
///
/// A group never holds two answers for one receipt, nor two naming one transaction in one
/// environment (`groups`): each merge then touches every key once, so the group applied as sets
/// leaves the rows that applying its answers in order leaves (RecordAnswersSetTests).
enum StagedAnswers {
    /// Makes the session's two staging tables (once per connection).
    static func prepare(_ db: PGConnection, schema: JobSchema) throws {
        try db.execute("SELECT \(schema.sql).answer_staging()")
    }

    /// The staging tables are emptied with DELETE (record_staged_answers); a vacuum after this
    /// many answers lets the next groups reuse their space, so the tables stay a few groups'
    /// size however many answers a run stores.
    static let answersBetweenVacuums = 8192

    static func vacuum(_ db: PGConnection) throws {
        try db.execute("VACUUM pg_temp.staged_answers, pg_temp.staged_transactions")
    }

    /// Splits `records`, in order, into groups of at most `size` where no receipt and no
    /// (transaction, environment) comes twice.
    static func groups(_ records: [AnswerRecord], size: Int) -> [ArraySlice<AnswerRecord>] {
        var out: [ArraySlice<AnswerRecord>] = []
        var start = 0
        struct Key: Hashable { let transaction, environment: String }
        var receipts = Set<String>(), transactions = Set<Key>()
        for i in records.indices {
            let txs = records[i].txs ?? [], env = records[i].env
            let clash =
                i - start >= size || receipts.contains(records[i].r)
                || txs.contains { transactions.contains(Key(transaction: $0.tid, environment: env)) }
            if clash {
                out.append(records[start..<i])
                start = i
                receipts.removeAll(keepingCapacity: true)
                transactions.removeAll(keepingCapacity: true)
            }
            receipts.insert(records[i].r)
            for t in txs { transactions.insert(Key(transaction: t.tid, environment: env)) }
        }
        if start < records.count { out.append(records[start...]) }
        return out
    }

    /// How a group was stored (for the tests).
    enum Path: Equatable { case staged, direct, stagedAfterConflict }

    /// Stores one group (from `groups`) with one script: its COPYs and the merge, one implicit
    /// transaction, so a kill or an error leaves nothing of the group (the group is lost whole, as a
    /// group in flight always was) and the staging tables empty. One round trip for the script and
    /// one per COPY (`PGConnection.execute(script:copyData:)`; a statement at a time took nine).
    ///
    /// Fresh uploads (`AnswerRecord.fresh`: verified offline, no state row when read; nearly every
    /// StoreKit 2 upload of a night) skip the staging for their state and their link (migration
    /// 17): COPY puts them straight into `receipt_state` and `receipt_transactions`, with no conflict
    /// check. Should one have a state row after all (unique violation), the script has rolled back
    /// and the group is stored the staged way, which merges.
    @discardableResult
    static func record(
        _ group: ArraySlice<AnswerRecord>, db: PGConnection, schema: JobSchema,
        encoder: inout CopyTextEncoder
    ) throws -> Path {
        let anyDirect = group.withUnsafeBufferPointer { records in records.indices.contains { isDirect(records[$0]) } }
        guard anyDirect else {
            try staged(group, direct: false, db: db, schema: schema, encoder: &encoder)
            return .staged
        }
        do {
            try staged(group, direct: true, db: db, schema: schema, encoder: &encoder)
            return .direct
        } catch let error as PGError where error.sqlState == "23505" {
            try staged(group, direct: false, db: db, schema: schema, encoder: &encoder)
            return .stagedAfterConflict
        }
    }

    /// Copied straight into the tables: an upload verified offline whose receipt had no state.
    /// (Its times are the run's clock, within the years ISO 8601 input covers.)
    static func isDirect(_ a: AnswerRecord) -> Bool {
        a.fresh && !a.asked && a.state && a.at > 0 && a.at < 253_402_300_800_000 && a.next == nil
    }

    /// The group's script: each COPY's rows one after the other in `encoder` (a COPY with no rows
    /// is left out), then the merge. The records are read in place, never copied (each copy of a
    /// record retained and released its dozen strings).
    private static func staged(
        _ group: ArraySlice<AnswerRecord>, direct: Bool, db: PGConnection, schema: JobSchema,
        encoder: inout CopyTextEncoder
    ) throws {
        encoder.removeAll()
        var script: SQL = ""
        var ends: [Int] = []
        func copy(_ statement: SQL) {
            guard encoder.bytes.count > (ends.last ?? 0) else { return }
            script = "\(script)\(statement);\n"
            ends.append(encoder.bytes.count)
        }
        group.withUnsafeBufferPointer { records in
            // Which records are copied straight in, decided once.
            let copied = records.indices.map { direct && isDirect(records[$0]) }
            if direct {
                for i in records.indices where copied[i] { encodeState(records[i], into: &encoder) }
                copy("COPY \(schema.sql).receipt_state (\(stateColumns)) FROM STDIN")
                for i in records.indices where copied[i] {
                    guard let txs = records[i].txs else { continue }
                    for j in txs.indices {
                        encoder.field(records[i].r); encoder.field(txs[j].tid); encoder.field(records[i].env); encoder.endRow()
                    }
                }
                copy("COPY \(schema.sql).receipt_transactions (receipt_id, transaction_id, environment) FROM STDIN")
            }
            for i in records.indices where !copied[i] { encode(records[i], into: &encoder) }
            copy("COPY pg_temp.staged_answers FROM STDIN")
            for i in records.indices {
                guard let txs = records[i].txs else { continue }
                for j in txs.indices { encode(txs[j], of: records[i], linked: copied[i], into: &encoder) }
            }
            copy(AppleTransactionColumns.stagedCopy)
        }
        script = "\(script)SELECT \(schema.sql).record_staged_answers()"
        var start = 0
        let data = ends.map { end in
            defer { start = end }
            return encoder.bytes[start..<end]
        }
        try db.execute(script: script, copyData: data)
    }

    /// `receipt_state`'s columns as `record_staged_answers` inserts a new row (`encodeState`).
    static let stateColumns: SQL = """
        receipt_id, attempts, failed_runs, runs_21002, last_run_id, last_class, last_status, last_error, \
        last_attempt_at, next_eligible_at, definitive, verdict, environment, bundle_id, last_swept_at, \
        start_environment, kind, rejection
        """

    /// A new `receipt_state` row, the values `record_staged_answers` gives one (its timestamps
    /// `to_timestamp(ms / 1000.0)`, exact to the millisecond in ISO 8601: `UTC.timestampMillis`).
    static func encodeState(_ a: AnswerRecord, into e: inout CopyTextEncoder) {
        e.field(a.r); e.field(a.n); e.field(a.failedRuns); e.field(a.runs21002); e.field(a.run); e.field(a.cls)
        e.field(a.st); e.field(a.err); e.field(UTC.timestampMillis(a.at)); e.field(a.next.map(UTC.timestampMillis)); e.field(a.final)
        e.field(a.verdict); e.field(a.env); e.field(a.bundle); e.field(a.sweep ? UTC.timestampMillis(a.at) : nil)
        e.field(a.start); e.field(a.kind ?? "receipt"); e.field(a.rej)
        e.endRow()
    }

    /// A row of `staged_answers`, its columns in the table's order.
    static func encode(_ a: AnswerRecord, into e: inout CopyTextEncoder) {
        e.field(a.r); e.field(a.asked); e.field(a.n); e.field(a.run); e.field(a.at); e.field(a.env)
        e.field(a.http); e.field(a.st); e.field(a.cls); e.field(a.err); e.field(a.ms); e.field(a.sweep)
        e.field(a.state); e.field(a.failedRuns); e.field(a.runs21002); e.field(a.next)
        e.field(a.final); e.field(a.verdict); e.field(a.bundle); e.field(a.start); e.field(a.kind); e.field(a.rej)
        e.endRow()
    }

    /// A row of `staged_transactions`: the answer's receipt, environment and kind, then the
    /// transaction's fields in `AppleTransactionColumns.fields` order (a test holds the two equal).
    static func encode(_ t: AnswerRecord.Transaction, of a: AnswerRecord, linked: Bool, into e: inout CopyTextEncoder) {
        e.field(a.r); e.field(a.env); e.field(a.kind)
        e.field(t.tid); e.field(t.otid); e.field(t.pid); e.field(t.q); e.field(t.pd)
        e.field(t.opd); e.field(t.exp); e.field(t.cd); e.field(t.cr); e.field(t.trial); e.field(t.wol); e.field(t.bundle)
        e.field(t.price); e.field(t.cur); e.field(t.sf); e.field(t.aat); e.field(t.type); e.field(t.own); e.field(t.reason)
        e.field(t.rvd); e.field(t.rvr); e.field(t.rvt); e.field(t.rvp); e.field(t.sd); e.field(linked)
        e.endRow()
    }
}
