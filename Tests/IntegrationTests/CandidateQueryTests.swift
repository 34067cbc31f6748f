@testable import AppStore
import Foundation
import Postgres
@testable import JobStore
@testable import NightLearn
import Testing

/// The verify stage's candidate query sorts before reading the data, reads each
/// receipt's data once, and leaves its form to the reader (`ReceiptSelection.kind(ofCandidate:)`:
/// `isBase64` and `CompactJWS.looksLikeJWS`). Together they must select what
/// contract §2 selects (`unresolvedReceiptsSQL`), in the same order, hostile data included.
@Suite("The candidate query", .serialized, .enabled(if: Harness.hasDatabase))
struct CandidateQueryTests {
    /// Texts at the edges of both forms: the job's check must say what `is_jws` says of each.
    static let hostile: [String] = {
        let seg = "eyJhbGciOiJFUzI1NiJ9"
        var texts = ["", ".", "..", "...", "a.b.c", "a.b", "a.b.c.d", "a..c", ".b.c", "a.b.", "a.b.c=", "a+b.c.d",
                     "a.b .c", " a.b.c", "a.b.c ", "a.b.c\n", "a/b.c.d", "é.b.c", "a.b.ç", "a.b.c\u{2024}",
                     "a\u{FF0E}b.c", "-._.-", "\(seg).\(seg).\(seg)", "MIIT" + String(repeating: "A", count: 100),
                     "ewogICJzdGF0dXMiOiAwCn0=", "a.b.c😀", "A.B.C\t", "a.b.c\\", "a%b.c.d", "a_b.c-d.e_f"]
        texts.append(String(repeating: "A", count: (1 << 20) + 5) + ".b.c")  // longer than the verifier reads: still a JWS in form
        return texts
    }()

    @Test("the reader's JWS form is is_jws's, on hostile texts")
    func formEqualsSQL() throws {
        let t = try TestDatabase("jws_form")
        defer { t.drop() }
        try Migrations.apply(t.db, schema: try JobSchema("recon"))
        var differ: [String] = []
        for text in Self.hostile {
            let sql = try t.scalar("SELECT recon.is_jws(\(text))") == "t"
            if sql != SignedDataVerifier.isJWS(text) { differ.append(String(text.prefix(40))) }
        }
        #expect(differ.isEmpty, "is_jws and the reader disagree on \(differ)")
    }

    /// Texts at the edges of `is_base64`: whitespace anywhere, padding in and out of place,
    /// lengths around a multiple of 4, bytes outside the alphabet, non-ASCII.
    static let hostileBase64: [String] = [
        "", " ", "=", "==", "====", "A", "AA", "AAA", "AAAA", "AA==", "AAA=", "A===", "AB=C", "AB==C", "AAAA====",
        "QUJD", "QUJD\n", "\tQUJD", "QU JD", "Q\rU\nJ\tD", "QUJD \n\r\t", " = = ", "QUJ=", "QU==\n", "QUJD\u{0B}",
        "QUJD\u{0C}", "QUJ-", "QUJ_", "QU.D", "QUJDé", "ÀUJD", "QUJD\u{A0}", "+/+/", "////", "0123456789+/",
        "ewogICJzdGF0dXMiOiAwCn0=", String(repeating: "QUJD", count: 5000), String(repeating: "QUJD", count: 5000) + "=",
        String(repeating: "Q", count: 4001) + "==", "A=AA", "=AAA", "AA=\n=", "AA= =",
        // Past the reader's 16-byte runs: whatever breaks a run, where it falls.
        String(repeating: "QUJD", count: 8) + "QU==", String(repeating: "QUJD", count: 8) + "QU==" + String(repeating: "QUJD", count: 8),
        String(repeating: "QUJD", count: 8) + "\n" + String(repeating: "QUJD", count: 8),
        String(repeating: "QUJD", count: 8) + "-" + String(repeating: "QUJD", count: 8),
        String(repeating: "QUJD", count: 5) + "é" + "QUJ", String(repeating: "QUJD", count: 4) + "Q",
        String(repeating: "QUJD", count: 4) + "===" + String(repeating: " ", count: 20),
        String(repeating: "QUJD", count: 4) + "QU=" + String(repeating: " ", count: 20) + "=",
    ]

    @Test("the reader's base64 check is is_base64's, on hostile texts")
    func base64EqualsSQL() throws {
        let t = try TestDatabase("base64_form")
        defer { t.drop() }
        try Migrations.apply(t.db, schema: try JobSchema("recon"))
        var differ: [String] = [], kinds: [String] = [], undecoded: [String] = []
        for text in Self.hostileBase64 + Self.hostile {
            let sql = try t.scalar("SELECT coalesce(recon.is_base64(\(text)), false)") == "t"
            var copy = text
            if sql != copy.withUTF8({ ReceiptSelection.isBase64($0) }) { differ.append(String(text.prefix(40)).debugDescription) }
            // The reader's decoding takes what is_base64 takes, and decodes as Foundation does.
            let decoded = copy.withUTF8 { ReceiptSelection.base64Decoded($0) }
            if (decoded != nil) != sql { undecoded.append(String(text.prefix(40)).debugDescription) }
            let foundation = Data(base64Encoded: text, options: .ignoreUnknownCharacters).map { [UInt8]($0) }
            if let decoded, decoded != foundation {
                undecoded.append(String(text.prefix(40)).debugDescription)
            }
            // The reader's kind: base64 without a dot, a JWS with one, nothing else.
            let jws = try t.scalar("SELECT recon.is_jws(\(text))") == "t"
            let want: ReceiptSelection.CandidateKind? = text.contains(".") ? (jws ? .signedUpload : nil) : (sql ? .appReceipt : nil)
            if ReceiptSelection.kind(ofCandidate: text) != want { kinds.append(String(text.prefix(40)).debugDescription) }
        }
        #expect(differ.isEmpty, "is_base64 and the reader disagree on \(differ)")
        #expect(kinds.isEmpty, "the reader takes these wrongly: \(kinds)")
        #expect(undecoded.isEmpty, "the reader's decoding differs from is_base64 or Foundation on \(undecoded)")
        #expect(Self.hostileBase64.filter { var c = $0; return c.withUTF8 { ReceiptSelection.isBase64($0) } }.count >= 8)
    }

    @Test("an app receipt's text decodes to the same bytes with and without the whitespace is_base64 allows")
    func receiptTextDecodes() {
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let text = Data(bytes).base64EncodedString()
        #expect(AppReceipts.decoded(text) == bytes)
        #expect(AppReceipts.decoded(Data(bytes).base64EncodedString(options: .lineLength64Characters)) == bytes)
        #expect(AppReceipts.decoded(" \t" + text.prefix(40) + "\r\n" + text.dropFirst(40) + "\n") == bytes)
        #expect(AppReceipts.decoded("QUJD") == Array("ABC".utf8) && AppReceipts.decoded("QUI=") == Array("AB".utf8))
        // Every length of a last quad, whitespace anywhere (inside a quad too).
        var random = SystemRandomNumberGenerator()
        for count in 1..<70 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            var text = Array(Data(bytes).base64EncodedString())
            for _ in 0..<(count % 5) {
                let space: Character = [" ", "\n", "\t", "\r"].randomElement(using: &random)!
                text.insert(space, at: Int.random(in: 0...text.count, using: &random))
            }
            #expect(AppReceipts.decoded(String(text)) == bytes, "\(count) bytes as \(String(text).debugDescription)")
        }
        #expect(AppReceipts.decoded("QUJD-") == nil && AppReceipts.decoded("QU=D") == nil)
        #expect(AppReceipts.decoded("") == nil)
    }

    @Test("the dot check (replace, in bytes) says what strpos says, on hostile texts and null")
    func dotCheckEqualsStrpos() throws {
        let t = try TestDatabase("dot_check")
        defer { t.drop() }
        var differ: [String] = []
        for text in Self.hostile + ["a\u{2024}b", "\u{FF0E}", "é", "中文.x"] {
            let got = try t.scalar("SELECT (\(SourceRelation.hasDot("x")))::text FROM (SELECT \(text)::text AS x) s")
            let want = try t.scalar("SELECT (strpos(\(text)::text, '.') > 0)::text")
            if got != want || got == nil { differ.append(String(text.prefix(40))) }
        }
        #expect(differ.isEmpty, "the dot check and strpos disagree on \(differ)")
        #expect(try t.scalar("SELECT (\(SourceRelation.hasDot("x"))) IS NULL FROM (SELECT NULL::text AS x) s") == "t")
    }

    @Test("candidate rows the reader keeps are §2's unresolved receipts, in receipt_id order")
    func candidatesEqualSelection() throws {
        let t = try TestDatabase("candidates")
        defer { t.drop() }
        let seeded = try runTool("iap-sim", ["seed", "--users", "80", "--seed", "5", "--as-of", NightTests.asOf,
                                             "--bundle", NightTests.bundle, "--storekit2-share", "0.5",
                                             "--pki", try Harness.scratchDirectory("candidates-pki").path],
                                 environment: t.environment())
        #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        try Migrations.apply(t.db, schema: try JobSchema("recon"))
        // Hostile uploads among the generated ones, at one time (the receipt_id breaks the tie).
        for (i, text) in Self.hostile.enumerated() {
            try t.db.query("""
                INSERT INTO iap_receipts (receipt_id, user_id, receipt_data, submitted_at)
                VALUES (\("hostile-\(i)"), 'u-hostile', \(text), '2026-11-20 10:00:00+00')
                """)
        }
        try t.db.execute("UPDATE iap_receipts SET verify_status = NULL WHERE receipt_data LIKE '%.%'")
        let settings = JobSettings(asOf: 1_795_230_000_000, jobSchema: try JobSchema("recon"))
        let selection = ReceiptSelection(settings: settings)
        let kept = try t.db.query(selection.candidateSQL).rows.filter { ReceiptSelection.kind(ofCandidate: $0[1] ?? "") != nil }
            .map { $0[0] ?? "" }
        let expected = try t.db.query(ReceiptSelection.unresolvedReceiptsSQL(
            select: "r.receipt_id", settings: settings, eligibleNow: true) + " ORDER BY r.receipt_id")
            .rows.map { $0[0] ?? "" }
        #expect(expected.count > 30, "too few receipts to compare: \(expected.count)")
        #expect(expected.contains("hostile-\(Self.hostile.count - 1)") && !expected.contains("hostile-0"))
        #expect(kept == expected, "the reader keeps \(kept.count) rows, §2 selects \(expected.count)")
    }
}
