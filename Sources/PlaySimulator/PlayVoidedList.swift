// `purchases.voidedpurchases.list` ("Voided Purchases API"): the package's voided records whose
// voided time is within [startTime, endTime] (default the last 30 days), oldest first,
// `maxResults` a page (default and most 1,000), `tokenPagination.nextPageToken` while more remain.
// Google filters on when a record was seen as voided, which the truth does not tell apart from
// `voidedTimeMillis`: the simulator filters on the latter. A page token carries the window and
// the position, so the next pages ignore startTime and endTime, as Google's do.

extension PlayState {
    /// Thirty days: the furthest back the list reaches.
    static let voidedHorizonMs: Int64 = 30 * 86_400_000

    /// The answer to a voided purchases call and its note.
    func voidedList(package: String, query rawQuery: String, index: PlayIndex, now: Int64) -> Decided {
        func bad(_ message: String) -> Decided { (GoogleError.invalidArgument(message), "400:" + message) }
        guard let query = FormData.parse(rawQuery) else { return bad("Invalid query.") }
        func value(_ key: String) -> String? { query.last { $0.0 == key }?.1 }
        func number(_ key: String) -> Int64?? {
            guard let text = value(key) else { return .some(nil) }
            guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                return nil
            }
            return Int64(text)
        }
        guard let maxResults = number("maxResults"), let type = number("type"), let start = number("startTime"),
            let end = number("endTime")
        else { return bad("Invalid integer value.") }
        guard maxResults.map({ $0 >= 1 }) ?? true else { return bad("maxResults must be positive.") }
        guard (type ?? 0) <= 1 else { return bad("type must be 0 or 1.") }
        let partialText = value("includeQuantityBasedPartialRefund") ?? "false"
        guard partialText == "true" || partialText == "false" else {
            return bad("includeQuantityBasedPartialRefund must be true or false.")
        }
        var page = VoidedPageToken(
            start: now - Self.voidedHorizonMs, end: now, offset: 0, partial: partialText == "true")
        if let token = value("token") {
            guard let read = VoidedPageToken(token, package: package) else { return bad("Invalid page token.") }
            page = read
        } else {
            if let start {
                // What Google does with a startTime older than 30 days (an error, or a clamp) is
                // unconfirmed: the simulator refuses it, the stricter of the two.
                guard start >= now - Self.voidedHorizonMs else { return bad("startTime is too old") }
                page.start = start
            }
            // An endTime in the future is read as now (Google: "cannot be later than now").
            if let end { page.end = min(end, now) }
            guard page.start <= page.end else { return bad("startTime is after endTime") }
        }
        let perPage = Int(min(maxResults ?? 1000, 1000))
        let listed = (index.voided[package] ?? []).filter {
            (page.start...page.end).contains($0.voidedTimeMs) && (page.partial || $0.voidedQuantity == nil)
        }
        let from = min(page.offset, listed.count)
        let to = min(from + perPage, listed.count)
        var next: String?
        if to < listed.count {
            var following = page
            following.offset = to
            next = following.text(package: package)
        }
        let body = PlayBodies.voidedPage(
            listed[from..<to], total: listed.count, perPage: perPage, startIndex: from, next: next,
            stringEnums: config.stringEnums)
        return (.json(200, body), "ok")
    }
}

/// Where the next page starts: `v1.START.END.OFFSET.PARTIAL.CHECK` (digits, letters and dots, as
/// a purchase token is), CHECK tying it to its package so that a token is not taken elsewhere.
struct VoidedPageToken: Equatable {
    var start: Int64
    var end: Int64
    var offset: Int
    var partial: Bool

    init(start: Int64, end: Int64, offset: Int, partial: Bool) {
        (self.start, self.end, self.offset, self.partial) = (start, end, offset, partial)
    }

    /// nil when `text` is not a token made for `package`.
    init?(_ text: String, package: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 6, parts[0] == "v1", let start = Int64(parts[1]), let end = Int64(parts[2]),
            let offset = Int(parts[3]), offset >= 0, parts[4] == "0" || parts[4] == "1"
        else { return nil }
        self.init(start: start, end: end, offset: offset, partial: parts[4] == "1")
        guard text == self.text(package: package) else { return nil }
    }

    func text(package: String) -> String {
        let fields = "v1.\(start).\(end).\(offset).\(partial ? 1 : 0)"
        return fields + "." + String(PlayFaultState.fnv(package + "|" + fields), radix: 36)
    }
}
