// The page's words in English and Chinese. Codes from the contract (reasons, kinds,
// currencies, report file names) are shown as they are, so a reader can match them with the
// CSV files; only the words around them are translated.

struct Labels {
    let lang: String
    let title: String
    let run: String
    let asOf: String
    let tonight: String
    let byReason: String
    let money: String
    /// The money table's corner: the measures down, the currencies across.
    let measure: String
    let oldest: String
    let noneOpen: String
    let daysOpen: String
    let report: String
    let key: String
    let firstSeen: String
    let history: String
    let historyNone: String
    let opened: String
    let closed: String
    let stillOpen: String
    let night: String
    let numbers: String
    let rows: String
    let unitNights: String
    let footer: String
    let reports: [String: String]
    let kinds: [String: String]
    /// The refund defense funnel: its title, and each figure's words.
    let refundRequests: String
    let funnel: [String: String]
    /// The table per app: its title, the app column, the money column, the refused mark.
    let perApp: String
    let app: String
    let requests: String
    let keyRefused: String
    /// The block per store (with Google Play configured): its title and each store's name.
    let perStore: String
    let stores: [String: String]

    /// The order reports are shown in: the work first, then what needs a look, then the rest.
    static let reportOrder = ["compensate", "acknowledge", "duplicate_grants", "clawback", "refunds", "unattributed", "unresolved",
                              "input_errors", "closed", "consumption_requests", "coverage"]
    static let kindOrder = ["owed", "claw_back", "refunded", "refunded_still_granted", "refund_declined", "proceeds_owed",
                            "proceeds_claw_back", "proceeds_refunded", "proceeds_refunded_still_granted"]
    static let funnelOrder = ["requests", "answered_in_time", "refunded", "declined", "pending", "no_outcome",
                              "refund_rate_answered", "refund_rate_unanswered"]

    static func of(_ language: Language) -> Labels {
        switch language {
        case .en:
            return Labels(
                lang: "en", title: "Reconciliation summary", run: "Run", asOf: "As of (UTC)",
                tonight: "Findings tonight", byReason: "By reason or kind", money: "Money by currency",
                measure: "Measure", oldest: "Oldest open finding", noneOpen: "No finding is open.",
                daysOpen: "days open", report: "Report", key: "Key", firstSeen: "First seen (UTC)",
                history: "Findings per night", historyNone: "No history yet: this is the first night.",
                opened: "opened", closed: "closed", stillOpen: "still open", night: "Night", numbers: "Numbers",
                rows: "Rows", unitNights: "nights",
                footer: "Written by iap-reconcile. The CSV files and reconciliation.xlsx hold every row.",
                reports: [
                    "compensate": "Compensate (paid, not granted)", "duplicate_grants": "Duplicate grants",
                    "clawback": "Claw back", "refunds": "Refunds", "unattributed": "Unattributed purchases",
                    "unresolved": "Unresolved receipts", "input_errors": "Input errors", "closed": "Closed",
                    "consumption_requests": "Apple's refund requests",
                    "coverage": "Differences from Apple's sales reports (day, product, country, currency)",
                    "acknowledge": "Google Play purchases to acknowledge (before Google refunds them)",
                ],
                kinds: [
                    "owed": "Owed (compensate)", "claw_back": "To claw back", "refunded": "Refunded",
                    "refunded_still_granted": "Refunded, still granted", "refund_declined": "Refund declined",
                    "proceeds_owed": "Apple's proceeds: owed", "proceeds_claw_back": "Apple's proceeds: to claw back",
                    "proceeds_refunded": "Apple's proceeds: refunded",
                    "proceeds_refunded_still_granted": "Apple's proceeds: refunded, still granted",
                ],
                refundRequests: "Apple's refund requests (refund window)",
                funnel: [
                    "requests": "Requests", "answered_in_time": "Answered within 12 hours", "refunded": "Refunded",
                    "declined": "Declined (at least)", "pending": "Pending", "no_outcome": "No outcome after 30 days",
                    "refund_rate_answered": "Refund rate, answered", "refund_rate_unanswered": "Refund rate, not answered",
                ],
                perApp: "Per app", app: "App", requests: "App Store requests",
                keyRefused: "key refused by Apple tonight (HTTP 401): not swept",
                perStore: "Per store", stores: ["app_store": "App Store", "google_play": "Google Play"])
        case .zh:
            return Labels(
                lang: "zh-CN", title: "对账摘要", run: "运行", asOf: "截至（UTC）",
                tonight: "今晚的问题", byReason: "按原因或类型", money: "按币种的金额",
                measure: "项目", oldest: "最早未关闭的问题", noneOpen: "没有未关闭的问题。",
                daysOpen: "天未关闭", report: "报表", key: "键", firstSeen: "首次发现（UTC）",
                history: "每晚的问题", historyNone: "还没有历史：这是第一晚。",
                opened: "新增", closed: "关闭", stillOpen: "仍未关闭", night: "日期", numbers: "数字",
                rows: "行数", unitNights: "晚",
                footer: "由 iap-reconcile 生成。每一行都在 CSV 文件和 reconciliation.xlsx 中。",
                reports: [
                    "compensate": "补发（已付款未发放）", "duplicate_grants": "重复发放", "clawback": "追回",
                    "refunds": "退款", "unattributed": "无法归属的购买", "unresolved": "未能核实的收据",
                    "input_errors": "输入错误", "closed": "已关闭", "consumption_requests": "苹果的退款请求",
                    "coverage": "与苹果销售报告不一致之处（按日、产品、国家、币种）",
                    "acknowledge": "待确认的 Google Play 购买（在 Google 退款之前）",
                ],
                kinds: [
                    "owed": "应补发", "claw_back": "应追回", "refunded": "已退款", "refunded_still_granted": "已退款但仍在发放",
                    "refund_declined": "已拒绝退款", "proceeds_owed": "苹果分成收入：应补发", "proceeds_claw_back": "苹果分成收入：应追回",
                    "proceeds_refunded": "苹果分成收入：已退款", "proceeds_refunded_still_granted": "苹果分成收入：已退款但仍在发放",
                ],
                refundRequests: "苹果的退款请求（退款窗口内）",
                funnel: [
                    "requests": "请求", "answered_in_time": "12 小时内已答复", "refunded": "已退款", "declined": "已拒绝（至少）",
                    "pending": "待定", "no_outcome": "30 天后仍无结果", "refund_rate_answered": "退款率（已答复）",
                    "refund_rate_unanswered": "退款率（未答复）",
                ],
                perApp: "按应用", app: "应用", requests: "App Store 请求数",
                keyRefused: "今晚苹果拒绝了该应用的密钥（HTTP 401）：未扫描",
                perStore: "按商店", stores: ["app_store": "App Store", "google_play": "Google Play"])
        }
    }

    func report(_ name: String) -> String { reports[name] ?? name }
    func kind(_ name: String) -> String { kinds[name] ?? name }

    /// Known names in their order, then any others sorted, so a new report still shows.
    static func ordered(_ names: some Sequence<String>, by order: [String]) -> [String] {
        let set = Set(names)
        return order.filter(set.contains) + set.subtracting(order).sorted()
    }
}
