import Foundation

/// Summary Sales Report files as Apple's two column orders write them; the
/// same as AppStoreTests' SalesReportTests, which this target cannot import.
enum SalesFixtures {
    /// Order A (28 columns).
    static let orderA = ["Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier",
                         "Units", "Developer Proceeds", "Begin Date", "End Date", "Customer Currency", "Country Code",
                         "Currency of Proceeds", "Apple Identifier", "Customer Price", "Promo Code", "Parent Identifier",
                         "Subscription", "Period", "Category", "CMB", "Device", "Supported Platforms", "Proceeds Reason",
                         "Preserved Pricing", "Client", "Order Type"]
    /// Order B: without Parent Identifier and Order Type, Customer Currency and Country Code after Customer Price.
    static let orderB: [String] = {
        var b = orderA.filter { !["Parent Identifier", "Order Type", "Customer Currency", "Country Code"].contains($0) }
        let at = b.firstIndex(of: "Customer Price")! + 1
        b.insert(contentsOf: ["Customer Currency", "Country Code"], at: at)
        return b
    }()

    /// One row as name → value; the columns a header lacks are left out.
    static func row(sku: String = "com.example.game.coins100", type: String = "IA1", units: String = "3",
                    proceeds: String = "0.70", begin: String = "11/20/2026", end: String = "11/20/2026",
                    customerCurrency: String = "USD", country: String = "US", proceedsCurrency: String = "USD",
                    price: String = "0.99", cmb: String = "") -> [String: String] {
        ["Provider": "APPLE", "Provider Country": "US", "SKU": sku, "Developer": "Example Ltd", "Title": "Coins",
         "Version": "", "Product Type Identifier": type, "Units": units, "Developer Proceeds": proceeds,
         "Begin Date": begin, "End Date": end, "Customer Currency": customerCurrency, "Country Code": country,
         "Currency of Proceeds": proceedsCurrency, "Apple Identifier": "1234567890", "Customer Price": price,
         "Promo Code": "", "Parent Identifier": "game", "Subscription": "", "Period": "", "Category": "Games", "CMB": cmb,
         "Device": "iPhone", "Supported Platforms": "iOS", "Proceeds Reason": "", "Preserved Pricing": "", "Client": "",
         "Order Type": ""]
    }

    static func file(_ header: [String], _ rows: [[String: String]], newline: String = "\n", finalNewline: Bool = true) -> [UInt8] {
        let lines = [header.joined(separator: "\t")] + rows.map { r in header.map { r[$0] ?? "" }.joined(separator: "\t") }
        return Array((lines.joined(separator: newline) + (finalNewline ? newline : "")).utf8)
    }

}
