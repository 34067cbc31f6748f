import Foundation

/// Apple's daily Summary Sales Reports of the window's held days against the
/// production purchases and refunds the job has learned, per product. summary.json `coverage`,
/// the page's coverage line and the workbook's Summary lines read it; coverage.csv lists the
/// groups (day, product, country, currency) where the two differ. No I/O.
public struct SalesCoverage: Sendable, Equatable {
    /// One product's figures over the held days of the window.
    public struct Product: Sendable, Equatable {
        public var productID: String
        public var appleSold: Decimal, jobSold: Decimal
        public var appleRefunded: Decimal, jobRefunded: Decimal
        /// Report days (`YYYY-MM-DD`, ascending) whose figures for the product differ.
        public var daysDiffering: [String]

        public init(productID: String, appleSold: Decimal, jobSold: Decimal, appleRefunded: Decimal, jobRefunded: Decimal,
                    daysDiffering: [String]) {
            (self.productID, self.appleSold, self.jobSold, self.appleRefunded, self.jobRefunded, self.daysDiffering)
                = (productID, appleSold, jobSold, appleRefunded, jobRefunded, daysDiffering)
        }
    }

    /// The report time zone (`--sales-report-timezone`) and the window's first and last report day.
    public var timeZone: String
    public var from: String, to: String
    /// Days of the window Apple's report is held for (with rows, or empty): the days compared.
    public var daysHeld: Int
    public var products: [Product]

    public init(timeZone: String, from: String, to: String, daysHeld: Int, products: [Product]) {
        (self.timeZone, self.from, self.to, self.daysHeld, self.products) = (timeZone, from, to, daysHeld, products)
    }

    public var appleSold: Decimal { products.reduce(0) { $0 + $1.appleSold } }
    public var jobSold: Decimal { products.reduce(0) { $0 + $1.jobSold } }
    public var appleRefunded: Decimal { products.reduce(0) { $0 + $1.appleRefunded } }
    public var jobRefunded: Decimal { products.reduce(0) { $0 + $1.jobRefunded } }

    /// What the job knows of what Apple sold, in percent with one decimal (`98.1`); nil when Apple
    /// sold nothing.
    public static func percent(_ job: Decimal, of apple: Decimal) -> String? {
        guard apple > 0 else { return nil }
        var ratio = job / apple * 100, rounded = Decimal()
        NSDecimalRound(&rounded, &ratio, 1, .plain)
        return Self.text(rounded)
    }

    /// A number as Apple prints units: no trailing zeros (`3`, `0.5`).
    public static func text(_ x: Decimal) -> String { "\(x)" }

    /// Whether the job knows fewer purchases than Apple sold: purchases that never reached it.
    public var shortfall: Bool { jobSold < appleSold }

    /// The headline: "Apple sold N units in the window; the job knows M (x%)".
    public func headline(chinese: Bool) -> String {
        let pct = Self.percent(jobSold, of: appleSold).map { " (\($0)%)" } ?? ""
        if chinese {
            return "苹果销售报告：窗口内（\(from) 至 \(to)，\(timeZone)，已取得 \(daysHeld) 天）苹果售出 \(Self.text(appleSold)) 件；"
                + "本程序知道 \(Self.text(jobSold)) 件\(pct)。退款：苹果 \(Self.text(appleRefunded))，本程序 \(Self.text(jobRefunded))。"
        }
        return "Apple sold \(Self.text(appleSold)) units in the window (\(from) to \(to), \(timeZone), \(daysHeld) days of its "
            + "report held); the job knows \(Self.text(jobSold))\(pct). Refunded: Apple \(Self.text(appleRefunded)), the job "
            + "\(Self.text(jobRefunded))."
    }

    /// One product's line, with the days that differ.
    public func line(_ p: Product, chinese: Bool) -> String {
        let pct = Self.percent(p.jobSold, of: p.appleSold).map { " (\($0)%)" } ?? ""
        let days = p.daysDiffering.isEmpty ? (chinese ? "每天一致" : "every day agrees")
            : (chinese ? "不一致的日期：" : "days that differ: ") + p.daysDiffering.joined(separator: ", ")
        if chinese {
            return "\(p.productID)：苹果售出 \(Self.text(p.appleSold))，本程序知道 \(Self.text(p.jobSold))\(pct)；退款 "
                + "\(Self.text(p.appleRefunded)) / \(Self.text(p.jobRefunded))；\(days)"
        }
        return "\(p.productID): Apple sold \(Self.text(p.appleSold)), the job knows \(Self.text(p.jobSold))\(pct); refunded "
            + "\(Self.text(p.appleRefunded)) / \(Self.text(p.jobRefunded)); \(days)"
    }

    /// What a shortfall means and what to switch on.
    public static func advice(chinese: Bool) -> String {
        chinese
            ? "少于苹果的部分是本程序从未得知的购买（漏单的来源）：打开 App Store Server API 的扫描（IAP_ISSUER_ID、IAP_KEY_ID、"
                + "IAP_PRIVATE_KEY_FILE：通知历史与交易历史），并让应用上传每一笔购买（StoreKit 2 签名交易）。coverage.csv 列出每个不一致的日期、商品、国家和币种。"
            : "What the job knows less of than Apple sold are purchases that never reached it (where missed orders hide): "
                + "switch on the App Store Server API sweeps (IAP_ISSUER_ID, IAP_KEY_ID, IAP_PRIVATE_KEY_FILE: notification "
                + "and transaction history) and make the app upload every purchase (StoreKit 2 signed transactions). "
                + "coverage.csv lists each day, product, country and currency that differs."
    }
}
