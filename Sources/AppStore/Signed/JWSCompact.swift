// The compact form of a JWS (RFC 7515 §7.1) as Apple signs it, read strictly: exactly three
// base64url segments, a header naming ES256 and a three-certificate `x5c`, a 64-byte r‖s
// signature. Everything from outside goes through the strict JSON scanner (JSONScanner.swift):
// a repeated key, invalid UTF-8 or a value of the wrong type is a named problem, never a guess.

import StrictJSON
import Crypto
internal import Glibc

/// One JWS in compact form, split and decoded but not yet trusted.
struct CompactJWS {
    /// `x5c` as DER: leaf, intermediate, root (the root is never trusted; see ChainVerification).
    var certificates: [[UInt8]]
    var payload: [UInt8]
    /// r‖s, 64 bytes.
    var signature: [UInt8]
    /// SHA-256 of the ASCII bytes `header.payload` that the signature covers.
    var signingDigest: SHA256.Digest
    /// The header's base64url bytes when they were decoded here (not remembered yet, or no
    /// memo): the key under which `HeaderMemo` keeps the chain's verdict once it is judged.
    var header: [UInt8]?
    /// The chain's verdict, when the memo had this header and its verdict.
    var knownChain: ChainCacheEntry?

    /// The largest JWS accepted. Apple's are about 4 KB (three certificates and a payload of a
    /// few hundred bytes); the limit only keeps a hostile upload from costing memory.
    static let maxLength = 1 << 20

    /// Whether `text` has the shape of a compact JWS: three non-empty base64url segments joined by
    /// two dots, nothing else: exactly the job schema's `is_jws(text)` (migration 5), whose
    /// regular expression the candidate query does not run on every upload (a test
    /// keeps the two equal on hostile texts). Its length is not limited here: `parse` refuses a
    /// JWS over `maxLength` as malformed. One branch-free pass over the bytes, and memchr for the
    /// dots; says nothing of the content.
    static func looksLikeJWS(_ text: String) -> Bool {
        var known: [UInt8] = []
        return looksLikeJWS(text, knownHeader: &known)
    }

    /// `looksLikeJWS` for texts that mostly share one header (one app's uploads carry the same
    /// `x5c`, about three quarters of their bytes): `knownHeader` holds the last header found in
    /// form, and a text whose first segment is those bytes has only the rest scanned (memcmp
    /// instead of a table look-up per byte). The same answer as `looksLikeJWS(text)` always:
    /// only bytes already found in the alphabet are skipped.
    static func looksLikeJWS(_ text: String, knownHeader: inout [UInt8]) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
            // The dots: exactly two, neither first nor last nor side by side.
            guard let one = memchr(base, Int32(UInt8(ascii: ".")), bytes.count) else { return false }
            let first = UnsafeRawPointer(one) - UnsafeRawPointer(base)
            guard first > 0, first + 1 < bytes.count,
                  let two = memchr(base + first + 1, Int32(UInt8(ascii: ".")), bytes.count - first - 1) else { return false }
            let second = UnsafeRawPointer(two) - UnsafeRawPointer(base)
            guard second > first + 1, second + 1 < bytes.count,
                  memchr(base + second + 1, Int32(UInt8(ascii: ".")), bytes.count - second - 1) == nil else { return false }
            // Every other byte in the alphabet: or-ed together, no branch per byte. A header equal
            // to the known one is in the alphabet already.
            let known = knownHeader.count == first && knownHeader.withUnsafeBufferPointer {
                memcmp($0.baseAddress!, base, first) == 0
            }
            let inForm = urlClass.withUnsafeBufferPointer { table in
                var bad: UInt8 = 0
                for b in UnsafeBufferPointer(rebasing: bytes[(known ? first : 0)...]) { bad |= table[Int(b)] }
                return bad == 0
            }
            if inForm && !known { knownHeader = Array(UnsafeBufferPointer(rebasing: bytes[..<first])) }
            return inForm
        }
    }

    /// 0 for the bytes a compact JWS may hold (the base64url alphabet and the dot), 1 for any other.
    private static let urlClass: [UInt8] = (0..<256).map { c in
        isURLByte(UInt8(c)) || c == Int(UInt8(ascii: ".")) ? 0 : 1
    }

    @inline(__always)
    static func isURLByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): return true
        default: return false
        }
    }

    /// Splits and decodes `jws`, checks the header (alg ES256, x5c of three base64 DER blobs, no
    /// `crit`) and the signature's length. The payload is returned as bytes, unparsed. Throws only
    /// `SignedDataRejection.malformed`.
    static func parse(_ jws: String, memo: HeaderMemo? = nil) throws -> CompactJWS {
        var text = jws
        return try text.withUTF8 { try parse($0, memo: memo) }
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, memo: HeaderMemo?) throws -> CompactJWS {
        guard !bytes.isEmpty else { throw SignedDataRejection.malformed("JWS is empty") }
        guard bytes.count <= maxLength else { throw SignedDataRejection.malformed("JWS is longer than \(maxLength) bytes") }
        // A header seen before (the same bytes, then a dot) parsed then: its certificates are
        // known, and it holds no dot, so the first dot is where it ends.
        let known = memo?.find(prefixOf: bytes)
        var dots: [Int] = known.map { [$0.header.count] } ?? []
        var from = known.map { $0.header.count + 1 } ?? 0
        while dots.count <= 2, from < bytes.count, let dot = memchr(bytes.baseAddress! + from, Int32(UInt8(ascii: ".")), bytes.count - from) {
            let at = UnsafeRawPointer(dot) - UnsafeRawPointer(bytes.baseAddress!)
            dots.append(at)
            from = at + 1
        }
        guard dots.count == 2 else {
            let count = dots.count > 2 ? "more than 3" : String(dots.count + 1)
            throw SignedDataRejection.malformed("JWS has \(count) segments, not 3")
        }
        func segment(_ from: Int, _ to: Int) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: bytes[from..<to])
        }
        func decoded(_ name: String, _ from: Int, _ to: Int) throws -> [UInt8] {
            switch Base64.decodeURL(segment(from, to)) {
            case .success(let bytes): return bytes
            case .failure(let problem): throw SignedDataRejection.malformed("\(name) is not base64url (\(problem.text))")
            }
        }
        let certificates: [[UInt8]]
        var headerBytes: [UInt8]?
        if let known {
            certificates = known.certificates
            if known.chain == nil { headerBytes = known.header }
        } else {
            let header = try decoded("header", 0, dots[0])
            certificates = try header.withUnsafeBufferPointer { try readHeader($0) }
            headerBytes = Array(segment(0, dots[0]))
        }
        let payload = try decoded("payload", dots[0] + 1, dots[1])
        let signature = try decoded("signature", dots[1] + 1, bytes.count)
        guard signature.count == 64 else {
            let der = signature.first == 0x30 ? ", DER-encoded?" : ""
            throw SignedDataRejection.malformed("signature is not 64-byte r‖s (\(signature.count) bytes\(der))")
        }
        if known == nil, let headerBytes { memo?.remember(headerBytes, certificates: certificates) }
        // The signing input is `header.payload`; a remembered header's bytes are hashed already.
        let digest: SHA256.Digest
        if var hash = known?.headerHash {
            hash.update(data: UnsafeRawBufferPointer(segment(dots[0], dots[1])))
            digest = hash.finalize()
        } else {
            digest = SHA256.hash(data: UnsafeRawBufferPointer(segment(0, dots[1])))
        }
        return CompactJWS(certificates: certificates, payload: payload, signature: signature,
                          signingDigest: digest, header: headerBytes, knownChain: known?.chain)
    }

    /// `{"alg":"ES256","x5c":["…","…","…"]}`; other members are allowed (Apple may add `kid`),
    /// except `crit`: an extension we do not understand must not be ignored (RFC 7515 §4.1.11).
    private static func readHeader(_ buffer: UnsafeBufferPointer<UInt8>) throws -> [[UInt8]] {
        let doc: JSONDocument
        do {
            doc = try JSONDocument(buffer)
        } catch {
            throw SignedDataRejection.malformed(jsonProblem("header", error))
        }
        guard doc.kind(0) == .object else {
            throw SignedDataRejection.malformed("header is \(doc.kindName(0)), not a JSON object")
        }
        var alg: Int?, x5c: Int?, crit = false
        doc.forEachMember(of: 0) { key, value in
            if doc.keyIs(key, "alg") { alg = value }
            else if doc.keyIs(key, "x5c") { x5c = value }
            else if doc.keyIs(key, "crit") { crit = true }
        }
        guard !crit else { throw SignedDataRejection.malformed("header has crit, which is not supported") }
        guard let alg else { throw SignedDataRejection.malformed("header has no alg") }
        guard doc.kind(alg) == .string || doc.kind(alg) == .escapedString else {
            throw SignedDataRejection.malformed("header alg is \(doc.kindName(alg)), not a string")
        }
        guard doc.text(alg) == "ES256" else {
            throw SignedDataRejection.malformed("header alg is \(doc.shown(alg)), not ES256")
        }
        guard let x5c else { throw SignedDataRejection.malformed("header has no x5c") }
        guard doc.kind(x5c) == .array else {
            throw SignedDataRejection.malformed("header x5c is \(doc.kindName(x5c)), not an array")
        }
        var count = 0
        doc.forEachElement(of: x5c) { _, _ in count += 1 }
        guard count == 3 else {
            throw SignedDataRejection.malformed("header x5c has \(count) certificates, not 3")
        }
        var certificates: [[UInt8]] = []
        try doc.forEachElement(of: x5c) { position, element in
            let kind = doc.kind(element)
            guard kind == .string || kind == .escapedString else {
                throw SignedDataRejection.malformed("header x5c[\(position)] is \(doc.kindName(element)), not a string")
            }
            // "\/" is a legal JSON escape of "/", so the decoded text is what counts.
            var text = kind == .string ? "" : (doc.text(element) ?? "")
            let result = kind == .string ? Base64.decodeStandard(doc.raw(element)) : text.withUTF8 { Base64.decodeStandard($0) }
            switch result {
            case .success(let der): certificates.append(der)
            case .failure(let problem):
                throw SignedDataRejection.malformed("header x5c[\(position)] is not base64 (\(problem.text))")
            }
        }
        return certificates
    }

    /// "payload is not JSON: unexpected end at offset 3": the scanner's text about a "body" said of
    /// the part it is about.
    static func jsonProblem(_ part: String, _ error: any Error) -> String {
        guard let e = error as? JSONError else { return part + " is not JSON" }
        let text = e.description
        if text.hasPrefix("body ") { return part + " " + String(text.dropFirst(5)) }
        return part + ": " + text
    }
}
