#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One worksheet being written. Its rows go, deflated as they come (Deflate.swift), to a
/// temporary file (the `<sheetData>` body), so memory does not grow with the rows and the
/// deflating is done by the thread that writes the sheet; what must stand before the body in the
/// XML (the used range, the fitted column widths) is only known at the end, so it is made then
/// and put in front of the body when the sheet goes into the zip (`SheetPart`).
final class SheetBody {
    let name: String
    let path: String
    let frozenHeader: Bool
    private let file: UnsafeMutablePointer<FILE>
    private let body: DeflateSegment
    private var closed = false
    /// Rows written, header included.
    private(set) var rows = 0
    private(set) var widths: [Int] = []
    var hyperlinks: [(ref: String, sheet: String)] = []
    /// "A", "B", … as bytes, for the columns seen so far.
    private var columnLetters: [[UInt8]] = []

    init(name: String, path: String, frozenHeader: Bool) throws {
        guard let file = fopen(path, "wb") else {
            throw Workbook.Failure.system(path, "cannot create a temporary sheet")
        }
        self.name = name
        self.path = path
        self.frozenHeader = frozenHeader
        self.file = file
        do {
            body = try DeflateSegment { deflated in
                guard fwrite(deflated.baseAddress, 1, deflated.count, file) == deflated.count else {
                    throw Workbook.Failure.system(path, "cannot write a temporary sheet")
                }
            }
        } catch {
            fclose(file)
            throw Workbook.Failure(path: path, reason: "\(error)")
        }
    }

    deinit { if !closed { fclose(file) } }

    /// Appends one row; its cells take columns A, B, … in order (an `.empty` cell writes nothing).
    /// The XML is built as bytes: a report of a hundred thousand rows writes a million cells.
    func append(_ cells: [Cell]) throws {
        rows += 1
        let r = Array(String(rows).utf8)
        var xml: [UInt8] = []
        xml.reserveCapacity(48 + 64 * cells.count)
        func put(_ s: StaticString) { xml.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)) }
        func put(_ s: String) { xml.append(contentsOf: s.utf8) }
        put("<row r=\""); xml += r; put("\">")
        for (i, cell) in cells.enumerated() {
            if i >= widths.count { widths.append(0) }
            widths[i] = max(widths[i], cell.displayWidth)
            while i >= columnLetters.count { columnLetters.append(Array(SheetBody.column(columnLetters.count).utf8)) }
            switch cell {
            case .empty: continue
            case .number(let v, let style):
                put("<c r=\""); xml += columnLetters[i]; xml += r; put("\" s=\""); xml += Self.styleNumbers[style.rawValue]
                put("\"><v>"); put(v); put("</v></c>")
            case .text(let t, let style):
                put("<c r=\""); xml += columnLetters[i]; xml += r; put("\" s=\""); xml += Self.styleNumbers[style.rawValue]
                put("\" t=\"inlineStr\"><is><t")
                if XMLText.needsPreserve(t) { put(" xml:space=\"preserve\"") }
                put(">"); put(XMLText.escape(t)); put("</t></is></c>")
            }
        }
        put("</row>")
        try deflating { try body.write(xml) }
    }

    /// zlib's failures as the sheet's (the file's own are already).
    private func deflating(_ work: () throws -> Void) throws {
        try Workbook.Failure.of(path, "cannot deflate a sheet", work)
    }

    /// Closes the body; the sheet is then ready to go into the zip.
    func finish() throws -> SheetPart {
        try deflating { try body.finish(last: false) }
        closed = true
        let failed = fflush(file) != 0
        if fclose(file) != 0 || failed {
            throw Workbook.Failure.system(path, "cannot write a temporary sheet")
        }
        return SheetPart(name: name, body: .init(path: path, size: body.inputSize, compressedSize: body.outputSize, crc: body.crc),
                         rows: rows, widths: widths, frozenHeader: frozenHeader, hyperlinks: hyperlinks)
    }

    /// Each style's index as the bytes of its `s` attribute.
    private static let styleNumbers: [[UInt8]] = (0...Style.allCases.map(\.rawValue).max()!).map { Array(String($0).utf8) }

    /// The column letters of the 0-based column `index`: A … Z, AA, AB, …
    static func column(_ index: Int) -> String {
        var n = index + 1
        var letters: [Character] = []
        while n > 0 {
            let rem = (n - 1) % 26
            letters.insert(Character(Unicode.Scalar(UInt8(65 + rem))), at: 0)
            n = (n - 1) / 26
        }
        return String(letters)
    }
}

/// A finished sheet: the XML that goes before and after its body.
struct SheetPart {
    /// The rows' XML, deflated as a segment that is not the last (Deflate.swift), in the file at
    /// `path`: `size` bytes of XML, `compressedSize` bytes in the file, `crc` of the XML.
    struct Body {
        let path: String
        let size: UInt64
        let compressedSize: UInt64
        let crc: UInt32
    }

    let name: String
    let body: Body
    let rows: Int
    let widths: [Int]
    /// Report sheets: header row frozen and the autofilter on it. The Summary sheet has neither.
    let frozenHeader: Bool
    let hyperlinks: [(ref: String, sheet: String)]

    /// Columns are never narrower than a short header nor wider than a long message: beyond 60
    /// characters a person widens the column themselves (or reads the cell), and a 2-character
    /// allowance leaves room for the autofilter's button.
    static let widthBounds = 6...60

    var lastRef: String { SheetBody.column(max(widths.count, 1) - 1) + String(max(rows, 1)) }

    var range: String { "A1:" + lastRef }

    func prefix(selected: Bool) -> String {
        var xml = #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"# + "\n"
        xml += #"<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" "#
        xml += #"xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">"#
        xml += "<dimension ref=\"\(range)\"/>"
        xml += "<sheetViews><sheetView workbookViewId=\"0\"\(selected ? " tabSelected=\"1\"" : "")>"
        if frozenHeader {
            xml += #"<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>"#
            xml += #"<selection pane="bottomLeft" activeCell="A2" sqref="A2"/>"#
        }
        xml += "</sheetView></sheetViews><sheetFormatPr defaultRowHeight=\"15\"/>"
        if !widths.isEmpty {
            xml += "<cols>"
            for (i, w) in widths.enumerated() {
                let fitted = min(max(w + 2, Self.widthBounds.lowerBound), Self.widthBounds.upperBound)
                xml += "<col min=\"\(i + 1)\" max=\"\(i + 1)\" width=\"\(fitted)\" customWidth=\"1\"/>"
            }
            xml += "</cols>"
        }
        return xml + "<sheetData>"
    }

    var suffix: String {
        var xml = "</sheetData>"
        if frozenHeader { xml += "<autoFilter ref=\"\(range)\"/>" }
        if !hyperlinks.isEmpty {
            xml += "<hyperlinks>"
            for link in hyperlinks {
                let location = XMLText.escape(Parts.quotedSheet(link.sheet) + "!A1")
                xml += "<hyperlink ref=\"\(link.ref)\" location=\"\(location)\" display=\"\(XMLText.escape(link.sheet))\"/>"
            }
            xml += "</hyperlinks>"
        }
        return xml + #"<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/></worksheet>"#
    }
}
