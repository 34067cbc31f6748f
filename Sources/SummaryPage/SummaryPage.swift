import Reconciliation

/// `summary.html` (contract §6): one page a manager reads in ten seconds, on a phone
/// too: the night's counts per report and reason, money per currency, the oldest open finding,
/// and a chart of findings per night for the last 30 nights.
///
/// Self-contained on purpose: inline CSS and inline SVG only, no script, no font, no image,
/// no link of any kind, so the page shows the same from a mail attachment, a file share or a
/// machine without network, and leaks nothing when opened. Every value is HTML-escaped.
public enum SummaryPage {
    /// Nights in the chart.
    public static let nights = 30

    public static func render(_ input: Input, language: Language) -> String {
        let l = Labels.of(language)
        var html = "<!DOCTYPE html>\n<html lang=\"\(l.lang)\"><head><meta charset=\"utf-8\">"
        html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        // Ids are long digit strings: without this, phones turn them into telephone links.
        html += "<meta name=\"format-detection\" content=\"telephone=no\">"
        html += "<title>\(input.held.isEmpty ? "" : "HELD · ")\(e(l.title)) \(e(input.asOf))</title>"
            + "<style>\(style)\(moneyStyle(input))</style></head><body><main>"
        html += held(input, language)
        // The team's own clock beside UTC (`--report-timezone`), when it is another zone.
        let local = input.asOfInZone.map { " · \(e($0.zone)) <strong>\(e($0.time))</strong>" } ?? ""
        html += "<header><h1>\(e(l.title))</h1><p class=\"meta\">\(e(l.asOf)) <strong>\(e(input.asOf))</strong>\(local) · "
            + "\(e(l.run)) <strong>\(input.runID)</strong></p></header>"
        html += counts(input, l)
        html += reasons(input, l)
        html += money(input, l)
        html += refundRequests(input, l)
        html += coverage(input, language)
        html += perApp(input, l)
        html += perStore(input, l)
        html += oldest(input, l)
        html += history(input, l)
        html += "<footer>\(e(l.footer))</footer></main></body></html>\n"
        return html
    }

    private static func e(_ s: String) -> String { HTML.escape(s) }

    /// A held night's page opens with why, before anything a person could act on.
    private static func held(_ input: Input, _ language: Language) -> String {
        guard !input.held.isEmpty else { return "" }
        let day = String(input.asOf.prefix(10))
        let (title, next) = language == .zh
            ? ("已扣留，未发布：本晚的清单看起来有误，请勿据此补发或扣回。",
               "核对原因；清单无误时由负责人发布：iap-reconcile release \(day) --note …；否则修正视图后重跑。")
            : ("HELD, not published: tonight's lists look wrong; do not pay out or claw back from them.",
               "Check the reasons; when the lists are right, the person responsible publishes them with iap-reconcile release \(day) --note …; else fix the views and run again.")
        return "<section class=\"held\" role=\"alert\"><p><strong>\(e(title))</strong></p><ul>"
            + input.held.map { "<li>\(e($0))</li>" }.joined() + "</ul><p>\(e(next))</p></section>"
    }

    /// One card per report: the label and the night's row count.
    private static func counts(_ input: Input, _ l: Labels) -> String {
        var html = "<section><h2>\(e(l.tonight))</h2><div class=\"cards\">"
        for name in Labels.ordered(input.counts.keys, by: Labels.reportOrder) {
            let n = input.counts[name] ?? 0
            html += "<div class=\"card\(n == 0 ? " zero" : "")\" data-report=\"\(e(name))\">"
                + "<span class=\"n\">\(n)</span><span class=\"label\">\(e(l.report(name)))</span>"
                + "<span class=\"code\">\(e(name))</span></div>"
        }
        return html + "</div></section>"
    }

    private static func reasons(_ input: Input, _ l: Labels) -> String {
        let reports = Labels.ordered(input.reasons.filter { !$0.value.isEmpty }.keys, by: Labels.reportOrder)
        guard !reports.isEmpty else { return "" }
        var html = "<section><h2>\(e(l.byReason))</h2><div class=\"tables\">"
        for report in reports {
            let rows = (input.reasons[report] ?? [:]).sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            html += "<div class=\"scroll\"><table><caption>\(e(l.report(report)))</caption><tbody>"
            for (reason, n) in rows {
                html += "<tr><th scope=\"row\"><code>\(e(reason))</code></th><td class=\"num\">\(n)</td></tr>"
            }
            html += "</tbody></table></div>"
        }
        return html + "</div></section>"
    }

    /// A row per measure (kind), a column per currency; amounts exactly as summary.json has them.
    /// Where the table does not fit (a phone), each measure is a block of its amounts, each
    /// labelled with its currency (`moneyStyle`), so no figure needs a sideways scroll.
    private static func money(_ input: Input, _ l: Labels) -> String {
        let currencies = moneyCurrencies(input)
        guard !currencies.isEmpty else { return "" }
        let kinds = Labels.ordered(currencies.flatMap { input.money[$0]!.keys }, by: Labels.kindOrder)
        var html = "<section data-section=\"money\"><h2>\(e(l.money))</h2><table class=\"money\"><thead><tr>"
            + "<th>\(e(l.measure))</th>"
        for currency in currencies { html += "<th scope=\"col\" class=\"num\">\(e(currency))</th>" }
        html += "</tr></thead><tbody>"
        for kind in kinds {
            html += "<tr data-kind=\"\(e(kind))\"><th scope=\"row\">\(e(l.kind(kind)))</th>"
            for currency in currencies {
                if let amount = input.money[currency]?[kind] {
                    html += "<td class=\"num\" data-currency=\"\(e(currency))\">\(e(amount))</td>"
                } else {
                    html += "<td class=\"num none\" data-currency=\"\(e(currency))\">–</td>"
                }
            }
            html += "</tr>"
        }
        return html + "</tbody></table></section>"
    }

    private static func moneyCurrencies(_ input: Input) -> [String] {
        input.money.filter { !$0.value.isEmpty }.keys.sorted()
    }

    /// The widest the page's content gets: `main`'s 980 px less its padding, in rem (16 px).
    static let contentRem = 59.5

    /// The width (rem) the money table needs as a table: the measures' column (its words wrap)
    /// and, per currency, its longest amount or code on one line, with the cells' padding. A
    /// generous estimate: digits of the system fonts are about 0.55rem wide.
    static func moneyTableRem(_ input: Input) -> Double {
        moneyCurrencies(input).reduce(12.0) { width, currency in
            let longest = ([currency] + (input.money[currency] ?? [:]).values).map(\.count).max() ?? 0
            return width + Double(longest) * 0.62 + 1.25
        }
    }

    /// The money table as blocks (a measure, then its amounts, each after its currency code) on
    /// screens narrower than the table needs, and always when the table would not fit even the
    /// widest page (many currencies).
    static func moneyStyle(_ input: Input) -> String {
        guard !moneyCurrencies(input).isEmpty else { return "" }
        let stacked = """
            table.money,table.money tbody,table.money tr{display:block}table.money thead{display:none}\
            table.money tr{border-bottom:1px solid var(--line);padding:6px 0}\
            table.money th{display:block;border:0;padding:0 0 2px}\
            table.money td{display:inline-block;border:0;padding:0 1.1em 0 0;text-align:left;white-space:normal;\
            overflow-wrap:anywhere}\
            table.money td:before{content:attr(data-currency) "\\a0";color:var(--muted);font-size:.85em}\
            table.money td.none{display:none}
            """
        let needed = moneyTableRem(input)
        // The page's padding (28 px) on top of the table; a table wider than the page never fits.
        if needed > contentRem { return stacked }
        let breakpoint = Int((needed + 1.75).rounded(.up))
        return "@media (max-width:\(breakpoint)rem){\(stacked)}"
    }

    /// Apple's refund requests: how many, answered in time, and what Apple did (a lower bound
    /// for declined: Apple reports those only for refunds asked in the app).
    /// Apple's sales reports against what the job learned: the headline, a line per product with the
    /// days that differ, and what a shortfall means.
    private static func coverage(_ input: Input, _ language: Language) -> String {
        guard let c = input.coverage else { return "" }
        let zh = language == .zh
        var html = "<section data-section=\"coverage\"><h2>\(e(zh ? "与苹果销售报告核对" : "Checked against Apple's sales reports"))</h2>"
        html += "<p data-coverage=\"headline\">\(e(c.headline(chinese: zh)))</p><ul>"
        for p in c.products { html += "<li>\(e(c.line(p, chinese: zh)))</li>" }
        html += "</ul>"
        if c.shortfall { html += "<p data-coverage=\"advice\">\(e(SalesCoverage.advice(chinese: zh)))</p>" }
        return html + "</section>"
    }

    private static func refundRequests(_ input: Input, _ l: Labels) -> String {
        guard let n = input.refundRequests["requests"], n != "0" else { return "" }
        var html = "<section data-section=\"refund_requests\"><h2>\(e(l.refundRequests))</h2><div class=\"scroll\"><table><tbody>"
        for key in Labels.ordered(input.refundRequests.keys, by: Labels.funnelOrder) {
            html += "<tr><th scope=\"row\">\(e(l.funnel[key] ?? key)) <code>\(e(key))</code></th>"
                + "<td class=\"num\">\(e(input.refundRequests[key] ?? ""))</td></tr>"
        }
        return html + "</tbody></table></div></section>"
    }

    /// One block per app (from two apps on): rows of each findings report, money owed and to claw
    /// back per currency (an amount per line where the cell is narrow), the requests sent, each
    /// figure under its words, as many side by side as the screen holds; a refused key is said in
    /// the app's heading.
    private static func perApp(_ input: Input, _ l: Labels) -> String {
        guard input.apps.count >= 2 else { return "" }
        let reports = ["compensate", "duplicate_grants", "clawback", "refunds", "unattributed"]
        func figure(_ label: String, _ value: String) -> String {
            "<div><dt>\(e(label))</dt><dd>\(value)</dd></div>"
        }
        func amounts(_ app: App, _ kind: String) -> String {
            let parts = app.money.keys.sorted().compactMap { c in
                app.money[c]?[kind].map { "<span class=\"amount\">\(e($0)) \(e(c))</span>" }
            }
            return parts.isEmpty ? "–" : parts.joined(separator: "; ")
        }
        var html = "<section data-section=\"apps\"><h2>\(e(l.perApp))</h2>"
        for app in input.apps {
            html += "<div class=\"app\" data-app=\"\(e(app.bundleID))\"><h3><code>\(e(app.bundleID))</code>"
                + (app.refused ? " <small>(\(e(l.keyRefused)))</small>" : "") + "</h3><dl class=\"figures\">"
            for r in reports { html += figure(l.report(r), String(app.counts[r] ?? 0)) }
            html += figure(l.kind("owed"), amounts(app, "owed"))
                + figure(l.kind("claw_back"), amounts(app, "claw_back"))
                + figure(l.requests, String(app.requests))
            html += "</dl></div>"
        }
        return html + "</section>"
    }

    /// One block per store (with Google Play configured): the rows of each list people act on and
    /// the money owed and to claw back per currency, as the per-app blocks show them.
    private static func perStore(_ input: Input, _ l: Labels) -> String {
        guard !input.stores.isEmpty else { return "" }
        let reports = ["compensate", "acknowledge", "duplicate_grants", "clawback", "refunds", "unattributed"]
        var html = "<section data-section=\"stores\"><h2>\(e(l.perStore))</h2>"
        for store in input.stores {
            html += "<div class=\"app\" data-store=\"\(e(store.bundleID))\"><h3>\(e(l.stores[store.bundleID] ?? store.bundleID))</h3>"
                + "<dl class=\"figures\">"
            for r in reports where store.counts[r] != nil {
                html += "<div><dt>\(e(l.report(r)))</dt><dd>\(store.counts[r] ?? 0)</dd></div>"
            }
            for kind in ["owed", "claw_back"] {
                let parts = store.money.keys.sorted().compactMap { c in
                    store.money[c]?[kind].map { "<span class=\"amount\">\(e($0)) \(e(c))</span>" }
                }
                html += "<div><dt>\(e(l.kind(kind)))</dt><dd>\(parts.isEmpty ? "–" : parts.joined(separator: "; "))</dd></div>"
            }
            html += "</dl></div>"
        }
        return html + "</section>"
    }

    private static func oldest(_ input: Input, _ l: Labels) -> String {
        var html = "<section><h2>\(e(l.oldest))</h2>"
        guard let o = input.oldestOpen else { return html + "<p>\(e(l.noneOpen))</p></section>" }
        html += "<dl class=\"oldest\"><dt>\(e(l.report))</dt><dd>\(e(l.report(o.report)))</dd>"
            + "<dt>\(e(l.key))</dt><dd><code>\(e(o.key))</code></dd>"
            + "<dt>\(e(l.firstSeen))</dt><dd>\(e(o.firstSeen))"
        if let days = daysBetween(o.firstSeen, String(input.asOf.prefix(10))), days >= 0 {
            html += " <span class=\"age\">(\(days) \(e(l.daysOpen)))</span>"
        }
        return html + "</dd></dl></section>"
    }

    /// One chart per report that had any finding in the window, each followed by its numbers.
    private static func history(_ input: Input, _ l: Labels) -> String {
        var byDate: [String: [String: Tally]] = [:]
        for night in input.history { byDate[night.date, default: [:]].merge(night.reports) { $1 } }
        let dates = Array(byDate.keys.sorted().suffix(nights))
        var html = "<section><h2>\(e(l.history)) <small>(\(dates.count) \(e(l.unitNights)))</small></h2>"
        guard !dates.isEmpty else { return html + "<p>\(e(l.historyNone))</p></section>" }
        html += "<p class=\"legend\"><span class=\"key opened\"></span>\(e(l.opened)) "
            + "<span class=\"key closed\"></span>\(e(l.closed)) <span class=\"key open\"></span>\(e(l.stillOpen))</p>"
        let reports = Labels.ordered(dates.flatMap { byDate[$0]!.keys }, by: Labels.reportOrder)
        for report in reports {
            let series = dates.map { (date: $0, tally: byDate[$0]?[report] ?? Tally()) }
            guard series.contains(where: { $0.tally != Tally() }) else { continue }
            html += "<figure data-report=\"\(e(report))\"><figcaption>\(e(l.report(report)))</figcaption>"
            html += Chart.svg(report: report, nights: series, labels: l)
            html += "<details><summary>\(e(l.numbers))</summary><div class=\"scroll\"><table><thead><tr>"
                + "<th>\(e(l.night))</th><th class=\"num\">\(e(l.opened))</th><th class=\"num\">\(e(l.closed))</th>"
                + "<th class=\"num\">\(e(l.stillOpen))</th></tr></thead><tbody>"
            for point in series.reversed() {
                html += "<tr><th scope=\"row\">\(e(point.date))</th><td class=\"num\">\(point.tally.opened)</td>"
                    + "<td class=\"num\">\(point.tally.closed)</td><td class=\"num\">\(point.tally.stillOpen)</td></tr>"
            }
            html += "</tbody></table></div></details></figure>"
        }
        return html + "</section>"
    }

    /// Whole days from one `YYYY-MM-DD` to another; nil when either is not such a date.
    static func daysBetween(_ from: String, _ to: String) -> Int? {
        func day(_ s: String) -> Int? {
            let parts = s.split(separator: "-")
            guard s.utf8.count == 10, parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]),
                  let d = Int(parts[2]), (1...12).contains(m), (1...31).contains(d) else { return nil }
            // Days from civil (Howard Hinnant), as Reconciliation's UTC does.
            let yy = m <= 2 ? y - 1 : y
            let era = (yy >= 0 ? yy : yy - 399) / 400
            let yoe = yy - era * 400
            let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1
            return era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy
        }
        guard let a = day(from), let b = day(to) else { return nil }
        return b - a
    }

    /// Phone first: one column of cards and charts at full width, more columns as room allows;
    /// nothing set wider than a phone (390 px less the page's padding), so no figure needs a
    /// sideways scroll; system fonts only (no font is loaded); colours follow the reader's dark mode.
    static let style = """
        :root{color-scheme:light dark;--fg:#1b1f23;--muted:#5f6b76;--bg:#fff;--card:#f4f6f8;--line:#d6dbe0;\
        --opened:#2e7d32;--closed:#1565c0;--open:#e65100}
        @media (prefers-color-scheme:dark){:root{--fg:#e8eaed;--muted:#a0a8b0;--bg:#15181b;--card:#22272c;\
        --line:#3a4148;--opened:#66bb6a;--closed:#64b5f6;--open:#ffa726}}
        *{box-sizing:border-box}
        .held{border:3px solid #c62828;border-radius:8px;padding:.5em 1em;margin:1em 0;overflow-wrap:anywhere}
        body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.45 system-ui,-apple-system,"Segoe UI",\
        "PingFang SC","Microsoft YaHei","Noto Sans CJK SC",sans-serif;-webkit-text-size-adjust:100%}
        main{max-width:980px;margin:0 auto;padding:12px 14px 32px}
        h1{font-size:1.5rem;margin:.3em 0}h2{font-size:1.15rem;margin:1.4em 0 .5em}
        .meta,footer,small,.code,.age{color:var(--muted)}footer{margin-top:2em;font-size:.85rem}
        .cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:10px}
        .card{background:var(--card);border-radius:10px;padding:10px 12px;display:flex;flex-direction:column}
        .card .n{font-size:1.9rem;font-weight:700;font-variant-numeric:tabular-nums}
        .card.zero .n{color:var(--muted)}.card .code{font-size:.75rem;overflow-wrap:anywhere}
        .tables{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:12px}
        .scroll{overflow-x:auto}
        .app{border-bottom:1px solid var(--line);padding:2px 0 10px}.app h3{font-size:1rem;margin:.6em 0 .3em}
        dl.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:6px 14px;margin:0}
        dl.figures dt{color:var(--muted);font-size:.85rem}dl.figures dd{margin:0;font-weight:600;\
        font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
        .amount{display:inline-block}
        table{border-collapse:collapse;width:100%}caption{text-align:left;font-weight:600;padding:4px 0}
        th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
        .num{text-align:right;font-variant-numeric:tabular-nums}td.num{white-space:nowrap}
        code{overflow-wrap:anywhere}
        dl.oldest{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0}dd{margin:0}
        figure{margin:0 0 18px}figcaption{font-weight:600;margin-bottom:4px}
        .chart{display:block;width:100%;max-width:760px;height:auto}
        .chart .axis{stroke:var(--muted)}.chart .grid{stroke:var(--line);stroke-dasharray:3 3}
        .chart .tick{fill:var(--muted);font-size:17px}
        .chart rect.opened,.key.opened{fill:var(--opened);background:var(--opened)}
        .chart rect.closed,.key.closed{fill:var(--closed);background:var(--closed)}
        .chart polyline.open{fill:none;stroke:var(--open);stroke-width:2}.chart circle.open{fill:var(--open)}
        .key{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin:0 .3em 0 .8em}
        .key.open{background:var(--open)}.legend .key:first-child{margin-left:0}
        details summary{cursor:pointer;color:var(--muted);font-size:.9rem}
        """
}
