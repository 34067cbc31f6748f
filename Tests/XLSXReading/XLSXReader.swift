import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import ZIPFoundation

/// Reads a workbook back the way a spreadsheet does: unzip, parse the XML. Independent of the
/// writer's code, so the tests check the file, not the writer's idea of it.
public struct XLSX {
    public struct CellValue: Equatable {
        public var type: String?   // "inlineStr", "s", "n", nil (number)
        public var style: Int
        public var text: String    // <v> or the inline string's <t>
    }

    public struct Sheet {
        public var name: String
        public var rows: [[String: CellValue]] = []   // by column letters
        public var frozenRows: Int?                    // pane ySplit when state="frozen"
        public var autoFilter: String?
        public var colWidths: [Double] = []
        public var hasFormula = false
        /// Values in row order, column order (A…), for a row.
        public func values(_ row: Int) -> [String: String] { rows[row].mapValues(\.text) }
    }

    public var sheets: [Sheet] = []
    public var cellFormats: [Int] = []            // numFmtId per cellXfs index
    public var quotePrefix: Set<Int> = []         // cellXfs indices with quotePrefix
    public var numberFormats: [Int: String] = [:] // custom numFmtId → code
    public var entries: [String] = []

    public init(path: String) throws {
        let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        func data(_ name: String) throws -> Data {
            guard let entry = archive[name] else { throw ReadError.missing(name) }
            var out = Data()
            _ = try archive.extract(entry) { out.append($0) }
            return out
        }
        entries = archive.map(\.path)
        let workbook = Collect(try data("xl/workbook.xml"))
        let rels = Collect(try data("xl/_rels/workbook.xml.rels"))
        let targets = Dictionary(uniqueKeysWithValues: rels.elements.filter { $0.name == "Relationship" }
            .map { ($0.attributes["Id"]!, $0.attributes["Target"]!) })
        let styles = Collect(try data("xl/styles.xml"))
        var inCellXfs = false
        for e in styles.elements {
            if e.name == "cellXfs" { inCellXfs = true }
            if e.name == "cellStyles" { inCellXfs = false }
            if e.name == "numFmt" { numberFormats[Int(e.attributes["numFmtId"]!)!] = e.attributes["formatCode"] }
            if inCellXfs, e.name == "xf" {
                if e.attributes["quotePrefix"] == "1" { quotePrefix.insert(cellFormats.count) }
                cellFormats.append(Int(e.attributes["numFmtId"] ?? "0")!)
            }
        }
        for s in workbook.elements where s.name == "sheet" {
            let target = targets[s.attributes["r:id"]!]!
            sheets.append(try SheetParser.parse(name: s.attributes["name"]!, data("xl/" + target)))
        }
    }

    enum ReadError: Error { case missing(String) }

    /// Start tags with their attributes, in document order (enough for workbook, rels, styles).
    final class Collect: NSObject, XMLParserDelegate {
        var elements: [(name: String, attributes: [String: String])] = []
        init(_ data: Data) {
            super.init()
            let parser = XMLParser(data: data)
            parser.delegate = self
            precondition(parser.parse(), "not well-formed XML")
        }
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String]) {
            elements.append((name, attributes))
        }
    }

    final class SheetParser: NSObject, XMLParserDelegate {
        var sheet: Sheet
        var row: [String: CellValue] = [:]
        var cellRef = "", cellType: String?, cellStyle = 0, text = "", capturing = false
        init(name: String) { sheet = Sheet(name: name) }

        static func parse(name: String, _ data: Data) throws -> Sheet {
            let p = SheetParser(name: name)
            let parser = XMLParser(data: data)
            parser.delegate = p
            guard parser.parse() else { throw parser.parserError ?? ReadError.missing(name) }
            return p.sheet
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes a: [String: String]) {
            switch name {
            case "row": row = [:]
            case "c":
                cellRef = a["r"]!.filter(\.isLetter)
                cellType = a["t"]
                cellStyle = Int(a["s"] ?? "0")!
                text = ""
            case "v", "t": capturing = true
            case "f": sheet.hasFormula = true
            case "pane" where a["state"] == "frozen": sheet.frozenRows = Int(a["ySplit"] ?? "")
            case "autoFilter": sheet.autoFilter = a["ref"]
            case "col": sheet.colWidths.append(Double(a["width"]!)!)
            default: break
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { if capturing { text += string } }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            switch name {
            case "v", "t": capturing = false
            case "c": row[cellRef] = CellValue(type: cellType, style: cellStyle, text: text)
            case "row": sheet.rows.append(row)
            default: break
            }
        }
    }
}
