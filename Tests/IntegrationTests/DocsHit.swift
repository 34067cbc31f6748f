/// One line of the docs or sources that breaks a rule of a docs check (HistoryInDocsTests,
/// FiguresInDocsTests), and what in it does.
struct DocsHit<Rule: RawRepresentable & Hashable & Sendable>: Hashable, Sendable, CustomStringConvertible
where Rule.RawValue == String {
    var file: String
    var line: Int
    var rule: Rule
    var match: String
    var description: String { "\(file):\(line): \(rule.rawValue): \(match)" }
}
