import Foundation
import Testing
import XLSXReading
import ZIPFoundation
@testable import Workbook

/// The workbook's own zip writing (ZipFile.swift, Deflate.swift), read back by ZIPFoundation,
/// which checks each entry's CRC-32 as it inflates it.
@Suite struct ZipTests {
    static func folder() throws -> String {
        let folder = NSTemporaryDirectory() + "zip-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Every entry of the zip at `path`, inflated (ZIPFoundation throws on a wrong CRC-32).
    static func entries(_ path: String) throws -> [String: Data] {
        let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        var out: [String: Data] = [:]
        for entry in archive {
            var data = Data()
            _ = try archive.extract(entry) { data.append($0) }
            out[entry.path] = data
        }
        return out
    }

    /// Segments deflated apart, each but the last ended by a sync flush, are one deflate stream:
    /// pieces larger than the output buffer, an empty one in the middle, text that repeats
    /// across the joins (a segment must not refer back into the one before).
    @Test func segmentsDeflatedApartInflateAsOneEntry() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var random = SystemRandomNumberGenerator()
        let noise = (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let rows = Array(String(repeating: "<row r=\"1\"><c r=\"A1\" s=\"2\" t=\"inlineStr\"><is><t>o-1</t></is></c></row>", count: 20_000).utf8)
        let pieces: [[UInt8]] = [Array("<?xml version=\"1.0\"?><sheetData>".utf8), rows, [], noise, rows, Array("</sheetData>".utf8)]
        var deflated: [UInt8] = []
        var crc: UInt32 = 0
        for (i, piece) in pieces.enumerated() {
            let last = i == pieces.count - 1
            var out: [UInt8] = []
            // Written in uneven parts, as a sheet writes its rows.
            let segment = try DeflateSegment { out.append(contentsOf: $0) }
            var at = 0
            while at < piece.count {
                let n = min(piece.count - at, 1 + at % 7919)
                try piece[at..<at + n].withUnsafeBufferPointer { try segment.write($0) }
                at += n
            }
            try segment.finish(last: last)
            #expect(segment.inputSize == UInt64(piece.count))
            #expect(segment.outputSize == UInt64(out.count))
            deflated += out
            crc = i == 0 ? segment.crc : crc32Joined(crc, segment.crc, secondLength: UInt64(piece.count))
        }
        let path = dir + "/t.zip"
        let zip = try ZipFile(path: path)
        let whole = pieces.flatMap { $0 }
        try zip.add(name: "joined.xml", crc: crc, compressedSize: UInt64(deflated.count),
                    uncompressedSize: UInt64(whole.count)) { try zip.write(deflated) }
        try zip.finish()
        #expect(try Self.entries(path)["joined.xml"] == Data(whole))
    }

    /// A size or offset past 32 bits is written in zip64 records; the limit is lowered here to 1
    /// so that every entry, every offset but the first entry's and the directory take them, and
    /// the workbook must read the same. (Not 0: ZIPFoundation takes a zip64 offset of 0 for none,
    /// and the format's limit never puts the first entry's offset 0 in a zip64 record.)
    @Test func zip64RecordsReadBackTheSame() throws {
        let (folder, _) = try WorkbookTests.makeFolder(extraCompensateRows: 40)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plain = folder + "/plain.xlsx", wide = folder + "/wide.xlsx"
        try Workbook.write(csvFolder: folder, reports: WorkbookTests.reports, summary: [(label: "run id", value: "7")],
                           timeZone: WorkbookTests.shanghai, to: plain)
        try Workbook.write(csvFolder: folder, reports: WorkbookTests.reports, summary: [(label: "run id", value: "7")],
                           timeZone: WorkbookTests.shanghai, to: wide, zip64Limit: 1)
        let zip64End: [UInt8] = [0x50, 0x4b, 0x06, 0x06]
        func has(_ signature: [UInt8], _ path: String) throws -> Bool {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            return bytes.indices.dropLast(3).contains { Array(bytes[$0..<$0 + 4]) == signature }
        }
        #expect(try has(zip64End, wide))
        #expect(try !has(zip64End, plain))
        let a = try Self.entries(plain), b = try Self.entries(wide)
        #expect(a.keys.sorted() == b.keys.sorted())
        for (name, data) in a { #expect(b[name] == data, "\(name)") }
        let book = try XLSX(path: wide)
        #expect(book.sheets.map(\.name) == ["Summary", "compensate", "duplicate_grants", "unresolved"])
        #expect(book.sheets[1].rows.count == 1 + 43)
    }

    /// Entries small enough for 32-bit sizes whose offsets are not (only the offset in a zip64
    /// record), and a directory past the limit with fewer entries than 0xFFFF (the zip64 end
    /// record beside an ordinary one that holds the real count).
    @Test func offsetsAloneInZip64Records() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/t.zip"
        let zip = try ZipFile(path: path, zip64Limit: 200)
        var texts: [String: Data] = [:]
        for i in 0..<12 {
            let text = Array("entry \(i): \(String(repeating: "x", count: i))".utf8)
            let deflated = try DeflateSegment.segment(text, last: true)
            try zip.add(name: "e\(i).txt", crc: deflated.crc, compressedSize: UInt64(deflated.data.count),
                        uncompressedSize: UInt64(text.count)) { try zip.write(deflated.data) }
            texts["e\(i).txt"] = Data(text)
        }
        try zip.finish()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.indices.dropLast(3).contains { Array(bytes[$0..<$0 + 4]) == [0x50, 0x4b, 0x06, 0x06] })
        #expect(try Self.entries(path) == texts)
    }

    /// An entry whose data is not the size announced in its header is refused, not written.
    @Test func anEntryOfAnotherSizeThanAnnouncedIsAFailure() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let zip = try ZipFile(path: dir + "/t.zip")
        let data = try DeflateSegment.segment(Array("hello".utf8), last: true)
        #expect(throws: Workbook.Failure.self) {
            try zip.add(name: "a.txt", crc: data.crc, compressedSize: UInt64(data.data.count) + 1, uncompressedSize: 5) {
                try zip.write(data.data)
            }
        }
    }
}
