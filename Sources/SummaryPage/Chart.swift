// The history chart: inline SVG drawn from numbers alone (no script, no external file), one
// small chart per report so a phone shows each at full width, one after the other.

enum Chart {
    static let width = 600.0, height = 190.0
    static let left = 52.0, right = 8.0, top = 14.0, bottom = 30.0

    /// Opened (bars up, green) and closed (bars, blue) per night side by side, still open as a
    /// line (orange) over them; each night's figures also in a `<title>`, which browsers show
    /// on hover or long press, and in the table under the chart for everyone else.
    static func svg(report: String, nights: [(date: String, tally: SummaryPage.Tally)], labels: Labels) -> String {
        let n = max(nights.count, 1)
        let plotW = width - left - right, plotH = height - top - bottom
        let maxValue = max(1, nights.map { max($0.tally.opened, $0.tally.closed, $0.tally.stillOpen) }.max() ?? 1)
        let slot = plotW / Double(n)
        let bar = max(1, slot * 0.32)
        func y(_ v: Int) -> Double { top + plotH - Double(max(0, v)) / Double(maxValue) * plotH }
        let baseline = top + plotH

        var svg = "<svg class=\"chart\" viewBox=\"0 0 \(f(width)) \(f(height))\" role=\"img\" aria-label=\""
            + HTML.escape(labels.report(report) + ": " + labels.history) + "\">"
        // Scale: the top value and zero, with a light grid line at the top.
        svg += "<line class=\"grid\" x1=\"\(f(left))\" y1=\"\(f(top))\" x2=\"\(f(width - right))\" y2=\"\(f(top))\"/>"
        svg += "<line class=\"axis\" x1=\"\(f(left))\" y1=\"\(f(baseline))\" x2=\"\(f(width - right))\" y2=\"\(f(baseline))\"/>"
        svg += "<text class=\"tick\" x=\"\(f(left - 6))\" y=\"\(f(top + 6))\" text-anchor=\"end\">\(maxValue)</text>"
        svg += "<text class=\"tick\" x=\"\(f(left - 6))\" y=\"\(f(baseline + 6))\" text-anchor=\"end\">0</text>"

        var points: [String] = []
        for (i, night) in nights.enumerated() {
            let x0 = left + Double(i) * slot + (slot - 2 * bar) / 2
            let t = night.tally
            let tip = "\(night.date): \(labels.opened) \(t.opened), \(labels.closed) \(t.closed), "
                + "\(labels.stillOpen) \(t.stillOpen)"
            svg += "<g><title>\(HTML.escape(tip))</title>"
            svg += "<rect class=\"opened\" x=\"\(f(x0))\" y=\"\(f(y(t.opened)))\" width=\"\(f(bar))\" "
                + "height=\"\(f(baseline - y(t.opened)))\"/>"
            svg += "<rect class=\"closed\" x=\"\(f(x0 + bar))\" y=\"\(f(y(t.closed)))\" width=\"\(f(bar))\" "
                + "height=\"\(f(baseline - y(t.closed)))\"/>"
            let cx = left + (Double(i) + 0.5) * slot
            svg += "<circle class=\"open\" cx=\"\(f(cx))\" cy=\"\(f(y(t.stillOpen)))\" r=\"3\"/></g>"
            points.append("\(f(cx)),\(f(y(t.stillOpen)))")
        }
        if points.count > 1 { svg += "<polyline class=\"open\" points=\"\(points.joined(separator: " "))\"/>" }

        // Dates under the axis: the first, the last, and the middle when there is room.
        var marks = Set([0, nights.count - 1])
        if nights.count > 4 { marks.insert(nights.count / 2) }
        for i in marks.sorted() where nights.indices.contains(i) {
            let anchor = nights.count == 1 ? "middle" : i == 0 ? "start" : i == nights.count - 1 ? "end" : "middle"
            let x = anchor == "start" ? left : anchor == "end" ? width - right : left + (Double(i) + 0.5) * slot
            svg += "<text class=\"tick\" x=\"\(f(x))\" y=\"\(f(height - 6))\" text-anchor=\"\(anchor)\">"
                + HTML.escape(nights[i].date) + "</text>"
        }
        return svg + "</svg>"
    }

    /// A coordinate with one decimal, without Foundation's formatter.
    static func f(_ d: Double) -> String {
        let tenths = Int((d * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let m = abs(tenths)
        return m % 10 == 0 ? sign + String(m / 10) : sign + String(m / 10) + "." + String(m % 10)
    }
}

/// Text into HTML: the five special characters as entities, and characters HTML does not
/// allow in a document (controls other than tab, LF, CR; noncharacters) dropped.
enum HTML {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for u in text.unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n", "\r": out.unicodeScalars.append(u)
            default:
                let v = u.value
                if v < 0x20 || (0x7F...0x9F).contains(v) || (0xFDD0...0xFDEF).contains(v) || v & 0xFFFE == 0xFFFE {
                    continue
                }
                out.unicodeScalars.append(u)
            }
        }
        return out
    }
}
