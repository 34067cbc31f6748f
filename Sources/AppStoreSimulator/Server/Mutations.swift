// Mutations of real answers, for the chaos suite: each turns the answer the simulator would send
// into one Apple never sends, in a way the job must detect (so none may be believed). A mutation
// that could leave a believable answer (a changed digit inside an id, say) is not among them: no
// reader can tell that from a real answer, which is what signed transactions are for.

/// One way of breaking an answer, chosen by seed, receipt id and call number like the faults:
/// - `truncated`: the body cut short (a proper prefix of a JSON object is never JSON);
/// - `invalid_utf8`: one byte replaced by 0xFF, which is never valid UTF-8;
/// - `type_swap`: a field the job reads given the wrong type (`in_app` in iOS 7 style,
///   `transaction_id` in iOS 6 style, else `status`);
/// - `duplicate_key`: `status` named twice;
/// - `huge_number`: a `transaction_id` of more than 20 digits (a duplicate key when there is none);
/// - `deep_nesting`: an array nested 100 deep under an extra key.
public enum AnswerMutation: String, CaseIterable, Sendable {
    case truncated, invalidUTF8 = "invalid_utf8", typeSwap = "type_swap", duplicateKey = "duplicate_key"
    case hugeNumber = "huge_number", deepNesting = "deep_nesting"

    /// The mutation for a call when `rate` says so; nil to send the answer as it is.
    public static func pick(rate: Double, seed: UInt64, receiptID: String?, callIndex: Int) -> AnswerMutation? {
        guard rate > 0 else { return nil }
        let h = SimHash.combine(seed, SimHash.fnv(receiptID ?? "-"), UInt64(callIndex), 0x3D7A)
        guard SimHash.unit(h) < rate else { return nil }
        return allCases[Int(SimHash.mix(h) % UInt64(allCases.count))]
    }

    /// The mutated body; `position` (any number) chooses where a cut or a flip lands.
    public func apply(to body: [UInt8], position: UInt64) -> [UInt8] {
        guard body.count > 2, body.first == UInt8(ascii: "{") else { return Array("{".utf8) }
        switch self {
        case .truncated:
            return Array(body[..<(1 + Int(position % UInt64(body.count - 1)))])
        case .invalidUTF8:
            var out = body
            out[Int(position % UInt64(body.count))] = 0xFF
            return out
        case .typeSwap:
            for (key, replacement) in [(#""in_app":"#, #""in_app":"x","in_app_was":"#),
                                       (#""transaction_id":"#, #""transaction_id":null,"transaction_id_was":"#)]
            where Self.find(key, in: body) != nil {
                return Self.replaceFirst(key, with: replacement, in: body)
            }
            return Self.replaceFirst(#""status":"#, with: #""status":"0.5","status_was":"#, in: body)
        case .duplicateKey:
            return Array(#"{"status":21010,"#.utf8) + body.dropFirst()
        case .hugeNumber:
            guard Self.find(#""transaction_id":""#, in: body) != nil else {
                return AnswerMutation.duplicateKey.apply(to: body, position: position)
            }
            return Self.replaceFirst(#""transaction_id":""#, with: #""transaction_id":"123456789012345678901234567890"#,
                                     in: body)
        case .deepNesting:
            return Array(#"{"deep":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: 100)
                + Array(repeating: UInt8(ascii: "]"), count: 100) + [UInt8(ascii: ",")] + body.dropFirst()
        }
    }

    static func find(_ needle: String, in body: [UInt8]) -> Int? {
        let n = Array(needle.utf8)
        guard body.count >= n.count else { return nil }
        for i in 0...(body.count - n.count) where body[i] == n[0] && Array(body[i..<(i + n.count)]) == n { return i }
        return nil
    }

    static func replaceFirst(_ needle: String, with replacement: String, in body: [UInt8]) -> [UInt8] {
        guard let at = find(needle, in: body) else { return Array(replacement.utf8) + body }
        return Array(body[..<at]) + Array(replacement.utf8) + Array(body[(at + needle.utf8.count)...])
    }
}
