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

    /// The XML of the row being appended: one buffer, kept from row to row.
    private var xml: [UInt8] = []

    /// Appends one row; its cells take columns A, B, … in order (an `.empty` cell writes nothing).
    /// The XML is built as bytes into a buffer kept between rows, with no array or string made
    /// per cell: a report of a hundred thousand rows writes a million cells. The buffer and the
    /// widths are taken out of the object while the row is built, so that each byte appended is
    /// not an access to a class's property checked for exclusivity at run time (a sixth of the
    /// workbook's time under `perf`). A text cell's bytes are looked at once (XMLText.plain):
    /// most need no escape and are ASCII, so they are copied as they are and their width is
    /// their length.
    func append(_ cells: [Cell]) throws {
        rows += 1
        var xml: [UInt8] = []
        var widths: [Int] = []
        swap(&xml, &self.xml)
        swap(&widths, &self.widths)
        defer {
            swap(&xml, &self.xml)
            swap(&widths, &self.widths)
        }
        xml.removeAll(keepingCapacity: true)
        xml.reserveCapacity(48 + 64 * cells.count)
        let row = Digits(rows)
        Self.put("<row r=\"", &xml); row.put(&xml); Self.put("\">", &xml)
        for (i, cell) in cells.enumerated() {
            if i >= widths.count { widths.append(0) }
            let width: Int
            switch cell {
            case .empty: continue
            case .number(let v, let style):
                width = cell.displayWidth
                Self.putCellStart(column: i, row: row, style: style, &xml)
                Self.put("\"><v>", &xml); xml.append(contentsOf: v.utf8); Self.put("</v></c>", &xml)
            case .text(let t, let style):
                Self.putCellStart(column: i, row: row, style: style, &xml)
                Self.put("\" t=\"inlineStr\"><is><t", &xml)
                if XMLText.needsPreserve(t) { Self.put(" xml:space=\"preserve\"", &xml) }
                Self.put(">", &xml)
                switch XMLText.plain(t, into: &xml) {
                case .ascii(let count): width = min(count, Cell.textWidthCap)
                case .copied: width = cell.displayWidth
                case .needsEscape:
                    xml.append(contentsOf: XMLText.escape(t).utf8)
                    width = cell.displayWidth
                }
                Self.put("</t></is></c>", &xml)
            }
            widths[i] = max(widths[i], width)
        }
        Self.put("</row>", &xml)
        try deflating { try body.write(xml) }
    }

    private static func put(_ s: StaticString, _ xml: inout [UInt8]) {
        xml.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// `<c r="B12" s="2`: the cell's reference (column letters, row number) and style.
    private static func putCellStart(column: Int, row: Digits, style: Style, _ xml: inout [UInt8]) {
        put("<c r=\"", &xml)
        if column < 26 {
            xml.append(UInt8(65 + column))
        } else {
            xml.append(contentsOf: SheetBody.column(column).utf8)
        }
        row.put(&xml)
        put("\" s=\"", &xml)
        Digits(style.rawValue).put(&xml)
    }

    /// A number's decimal digits (up to 16) as bytes, worked out once per row rather than per cell.
    struct Digits {
        /// The digits in order from the lowest byte of `low`; the ninth and later in `high`.
        private var low: UInt64 = 0
        private var high: UInt64 = 0
        private let count: Int

        init(_ n: Int) {
            precondition(n >= 0 && n < 10_000_000_000_000_000)
            var digits = 1
            var divisor = 1
            while divisor <= n / 10 { divisor *= 10; digits += 1 }
            count = digits
            var rest = n
            for k in 0..<digits {
                let d = UInt64(48 + rest / divisor)
                rest %= divisor
                divisor /= 10
                if k < 8 { low |= d << (8 * k) } else { high |= d << (8 * (k - 8)) }
            }
        }

        func put(_ xml: inout [UInt8]) {
            for k in 0..<min(count, 8) { xml.append(UInt8(truncatingIfNeeded: low >> (8 * k))) }
            for k in 0..<max(count - 8, 0) { xml.append(UInt8(truncatingIfNeeded: high >> (8 * k))) }
        }
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
