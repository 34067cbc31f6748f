import Foundation

/// The parts of the SpreadsheetML package around the sheets, and the zip they go into.
/// Only what Excel, LibreOffice and WPS need to open the workbook without a repair prompt.
enum Parts {
    static let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    static let officeRels = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    static let packageRels = "http://schemas.openxmlformats.org/package/2006/relationships"
    static let header = #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"# + "\n"

    static func contentTypes(sheets: Int) -> String {
        var xml = header + #"<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">"#
        xml += #"<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>"#
        xml += #"<Default Extension="xml" ContentType="application/xml"/>"#
        xml += #"<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>"#
        xml += #"<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>"#
        for n in 1...max(sheets, 1) {
            xml += "<Override PartName=\"/xl/worksheets/sheet\(n).xml\" "
                + #"ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>"#
        }
        return xml + "</Types>"
    }

    static let rootRels = header + "<Relationships xmlns=\"\(packageRels)\">"
        + "<Relationship Id=\"rId1\" Type=\"\(officeRels)/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>"

    /// A sheet name as a formula reference: always quoted, `'` doubled.
    static func quotedSheet(_ name: String) -> String {
        "'" + name.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The sheets in order; each report sheet's autofilter also gets the hidden
    /// `_xlnm._FilterDatabase` name Excel itself writes for it.
    static func workbook(_ sheets: [SheetPart]) -> String {
        var xml = header + "<workbook xmlns=\"\(main)\" xmlns:r=\"\(officeRels)\">"
        xml += #"<bookViews><workbookView activeTab="0"/></bookViews><sheets>"#
        for (i, sheet) in sheets.enumerated() {
            xml += "<sheet name=\"\(XMLText.escape(sheet.name))\" sheetId=\"\(i + 1)\" r:id=\"rId\(i + 1)\"/>"
        }
        xml += "</sheets>"
        let filtered = sheets.enumerated().filter { $0.element.frozenHeader }
        if !filtered.isEmpty {
            xml += "<definedNames>"
            for (i, sheet) in filtered {
                let ref = quotedSheet(sheet.name) + "!$A$1:$" + absolute(sheet.lastRef)
                xml += "<definedName name=\"_xlnm._FilterDatabase\" localSheetId=\"\(i)\" hidden=\"1\">"
                    + XMLText.escape(ref) + "</definedName>"
            }
            xml += "</definedNames>"
        }
        return xml + "</workbook>"
    }

    /// `P13` → `P$13`.
    private static func absolute(_ ref: String) -> String {
        let letters = ref.prefix { $0.isLetter }
        return letters + "$" + ref.dropFirst(letters.count)
    }

    static func workbookRels(sheets: Int) -> String {
        var xml = header + "<Relationships xmlns=\"\(packageRels)\">"
        for n in 1...max(sheets, 1) {
            xml += "<Relationship Id=\"rId\(n)\" Type=\"\(officeRels)/worksheet\" Target=\"worksheets/sheet\(n).xml\"/>"
        }
        xml += "<Relationship Id=\"rId\(sheets + 1)\" Type=\"\(officeRels)/styles\" Target=\"styles.xml\"/>"
        return xml + "</Relationships>"
    }

    /// The cell formats, in the order of `Style`'s raw values. Number formats 164… are ours;
    /// 0 General, 1 `0`, 2 `0.00` and 49 `@` (text) are built in.
    static let styles: String = {
        let xf = { (numFmt: Int, font: Int, extra: String) in
            "<xf numFmtId=\"\(numFmt)\" fontId=\"\(font)\" fillId=\"0\" borderId=\"0\" xfId=\"0\""
                + (numFmt == 0 ? "" : " applyNumberFormat=\"1\"") + (font == 0 ? "" : " applyFont=\"1\"") + extra + "/>"
        }
        let cellXfs: [(Style, String)] = [
            (.general, xf(0, 0, "")), (.header, xf(49, 1, "")), (.text, xf(49, 0, "")),
            (.guardedText, xf(49, 0, " quotePrefix=\"1\"")), (.dateTime, xf(164, 0, "")), (.date, xf(165, 0, "")),
            (.integer, xf(1, 0, "")), (.money1, xf(166, 0, "")), (.money2, xf(2, 0, "")), (.money3, xf(167, 0, "")),
            (.percent, xf(168, 0, "")),
        ]
        precondition(cellXfs.enumerated().allSatisfy { $0.offset == $0.element.0.rawValue })
        var xml = header + "<styleSheet xmlns=\"\(main)\">"
        xml += #"<numFmts count="5"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm:ss"/>"#
        xml += #"<numFmt numFmtId="165" formatCode="yyyy-mm-dd"/><numFmt numFmtId="166" formatCode="0.0"/>"#
        xml += #"<numFmt numFmtId="167" formatCode="0.000"/><numFmt numFmtId="168" formatCode="0.000%"/></numFmts>"#
        xml += #"<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font>"#
        xml += #"<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>"#
        xml += #"<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>"#
        xml += #"<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>"#
        xml += #"<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>"#
        xml += "<cellXfs count=\"\(cellXfs.count)\">" + cellXfs.map(\.1).joined() + "</cellXfs>"
        xml += #"<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>"#
        return xml + "</styleSheet>"
    }()

    /// The package being written: the small parts deflated from memory, each sheet as the
    /// deflated segments its writer made (prefix, body, suffix: Deflate.swift). The entries go in
    /// this order: `[Content_Types].xml` first (it needs only the number of sheets; tools that
    /// sniff a file's type read the first entries), then the sheets as each is ready, then
    /// `xl/workbook.xml` and its relationships, which name every sheet. A reader finds parts by
    /// the zip's directory, whatever their order.
    final class Package {
        let zip: ZipFile
        let sheetCount: Int

        init(path: String, sheetCount: Int, zip64Limit: UInt64 = 0xFFFF_FFFF) throws {
            self.sheetCount = sheetCount
            zip = try ZipFile(path: path, zip64Limit: zip64Limit)
            try add("[Content_Types].xml", contentTypes(sheets: sheetCount))
            try add("_rels/.rels", rootRels)
            try add("xl/styles.xml", styles)
        }

        /// Sheet `number` (1 is the first tab).
        func add(_ sheet: SheetPart, number: Int) throws {
            precondition((1...sheetCount).contains(number))
            try failing {
                let prefixText = Array(sheet.prefix(selected: number == 1).utf8)
                let prefix = try DeflateSegment.segment(prefixText, last: false)
                let suffixText = Array(sheet.suffix.utf8)
                let suffix = try DeflateSegment.segment(suffixText, last: true)
                let prefixSize = UInt64(prefixText.count)
                let crc = crc32Joined(crc32Joined(prefix.crc, sheet.body.crc, secondLength: sheet.body.size),
                                      suffix.crc, secondLength: UInt64(suffixText.count))
                try zip.add(name: "xl/worksheets/sheet\(number).xml", crc: crc,
                            compressedSize: UInt64(prefix.data.count) + sheet.body.compressedSize + UInt64(suffix.data.count),
                            uncompressedSize: prefixSize + sheet.body.size + UInt64(suffixText.count)) {
                    try zip.write(prefix.data)
                    try copy(sheet.body.path, size: sheet.body.compressedSize)
                    try zip.write(suffix.data)
                }
            }
        }

        /// The workbook and its relationships, naming `sheets` in tab order (as many as announced),
        /// then the zip's directory.
        func finish(_ sheets: [SheetPart]) throws {
            precondition(sheets.count == sheetCount)
            try add("xl/workbook.xml", workbook(sheets))
            try add("xl/_rels/workbook.xml.rels", workbookRels(sheets: sheets.count))
            try failing { try zip.finish() }
        }

        private func add(_ name: String, _ text: String) throws {
            try failing {
                let bytes = Array(text.utf8)
                let deflated = try DeflateSegment.segment(bytes, last: true)
                try zip.add(name: name, crc: deflated.crc, compressedSize: UInt64(deflated.data.count),
                            uncompressedSize: UInt64(bytes.count)) { try zip.write(deflated.data) }
            }
        }

        /// The deflated body of a sheet, `size` bytes, into the current entry.
        private func copy(_ path: String, size: UInt64) throws {
            guard let file = fopen(path, "rb") else {
                throw Workbook.Failure.system(path, "cannot read a temporary sheet")
            }
            defer { fclose(file) }
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var left = size
            while left > 0 {
                let n = chunk.withUnsafeMutableBufferPointer { fread($0.baseAddress, 1, Int(min(left, UInt64($0.count))), file) }
                guard n > 0 else { throw Workbook.Failure(path: path, reason: "cannot read a temporary sheet back") }
                try chunk.withUnsafeBufferPointer { try zip.write(UnsafeBufferPointer(rebasing: $0[..<n])) }
                left -= UInt64(n)
            }
        }

        private func failing(_ body: () throws -> Void) throws {
            try Workbook.Failure.of(zip.path, "cannot write the workbook", body)
        }
    }
}
