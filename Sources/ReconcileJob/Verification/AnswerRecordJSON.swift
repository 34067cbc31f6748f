import AppStore

extension AnswerRecord {
    /// `records` as the JSON array `record_answers(jsonb)` reads: the document `JSONEncoder` gives
    /// for `[AnswerRecord]` (same keys, absent fields left out), written straight into bytes.
    /// `JSONEncoder` took about a sixth of the verify stage's CPU (`make bench-verify`, perf).
    static func jsonArray(_ records: some Collection<AnswerRecord>) -> [UInt8] {
        var json = JSONWriter(capacity: records.count * 512)
        json.beginArray()
        for record in records { record.write(to: &json) }
        json.endArray()
        return json.bytes
    }

    /// One record as an object; the keys are `CodingKeys`'.
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("r", r)
        json.field("n", n)
        json.field("run", run)
        json.field("at", at)
        json.field("env", env)
        json.field("http", http)
        json.field("st", st)
        json.field("cls", cls)
        json.field("err", err)
        json.field("ms", ms)
        json.field("sweep", sweep)
        json.field("state", state)
        json.field("bundle", bundle)
        json.field("start", start)
        json.field("final", final)
        json.field("verdict", verdict)
        json.field("next", next)
        if let txs {
            json.key("txs")
            json.beginArray()
            for tx in txs { tx.write(to: &json) }
            json.endArray()
        }
        json.field("kind", kind)
        json.field("rej", rej)
        json.field("failed_runs", failedRuns)
        json.field("runs_21002", runs21002)
        json.endObject()
    }
}

extension AnswerRecord.Transaction {
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("tid", tid)
        json.field("otid", otid)
        json.field("pid", pid)
        json.field("q", q)
        json.field("pd", pd)
        json.field("opd", opd)
        json.field("exp", exp)
        json.field("cd", cd)
        json.field("cr", cr)
        json.field("trial", trial)
        json.field("wol", wol)
        json.field("bundle", bundle)
        json.field("price", price)
        json.field("cur", cur)
        json.field("sf", sf)
        json.field("aat", aat)
        json.field("type", type)
        json.field("own", own)
        json.field("reason", reason)
        json.field("rvd", rvd)
        json.field("rvr", rvr)
        json.field("rvt", rvt)
        json.field("rvp", rvp)
        json.field("sd", sd)
        json.endObject()
    }
}
