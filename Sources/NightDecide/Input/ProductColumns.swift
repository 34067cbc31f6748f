// The product relation's columns the decide stage reads: the valid products and their list prices
// (contract §1 `price`, `currency`), built from SourceRelation's checks (NightLearn/Input/SourceRows.swift).

import NightLearn
import Postgres

extension DecideStage {
    /// `p`, the valid products (one row per product_id), and `known_products`, every product id
    /// of the source with whether it has a valid row: the product checks of orders and grants.
    /// The optional list price (contract §1 `price`, `currency`) as milliunits of one unit and
    /// its currency: used only when the price is 0 or more (below 10^12) and the currency is three
    /// upper-case letters; any other value counts as no price (`ignoredPricesSQL` counts them).
    var listPriceColumns: SQL { SourceRelation.listPriceColumns(present: settings.listPriceColumns) }

    static let usablePrice = SourceRelation.usablePrice

    /// Products whose price or currency is present but unusable (a warning, not an input error:
    /// the row still decides, only its amounts stay empty).
    var ignoredPricesSQL: SQL {
        "SELECT count(*) FROM \(src).iap_products WHERE (price IS NOT NULL OR currency IS NOT NULL) "
            + "AND NOT coalesce(\(Self.usablePrice), false)"
    }

    var productsSQL: SQL {
        """
        DROP TABLE IF EXISTS p, known_products;
        CREATE \(newTable("p")) AS
            SELECT DISTINCT ON (product_id) product_id, product_type, \(listPriceColumns) FROM \(src).iap_products
            WHERE product_id IS NOT NULL
            ORDER BY product_id, \(SourceRelation.products.firstRowOrder);
        DELETE FROM p WHERE product_type IS NULL OR product_type NOT IN \(SourceRelation.productTypes);
        CREATE \(newTable("known_products")) AS
            SELECT DISTINCT k.product_id, (p.product_id IS NOT NULL) AS valid
            FROM \(src).iap_products k LEFT JOIN p ON p.product_id = k.product_id
            WHERE k.product_id IS NOT NULL;
        ANALYZE p; ANALYZE known_products;\(playProductsSQL)
        """
    }

    /// Google Play's rows, with two stores (contract §1, "Two stores in one shop"): their views, and
    /// `play_known_products`, every Play product id with whether its first row is valid (the
    /// product checks of Play's orders and grants). Nothing else of the stage reads them.
    var playViews: SQL? {
        guard settings.storeRows != nil, scope == .night, let schema = try? StoreViews.schema(of: settings.jobSchema, store: .googlePlay)
        else { return nil }
        return schema.sql
    }

    private var playProductsSQL: SQL {
        guard let play = playViews else { return "" }
        return "\n" + SourceRelation.playKnownProductsSQL(views: play, table: "play_known_products", temporary: false)
    }

    /// `input_errors` from the copies (SourceCopies.swift): the problems of each key's first row
    /// (kept in `bad_o`, `bad_r`, `bad_g`), every row of the rare duplicated keys read again from
    /// the source (only when there are any: `duplicated` names those relations), one line per
    /// duplicated key, and the products (a handful of rows) straight from the source.
    /// Fixed text but for the run id: one statement, its values bound (the copies' checks are
    /// literals, as the copies themselves run as several statements in one text).
    /// `playDuplicated`: the same of Google Play's rows (`playInputErrors`).
    func inputErrorSQL(duplicated: Set<SourceRelation>, playDuplicated: Set<SourceRelation> = []) -> SQL {
        let parts = SourceRelation.allCases.flatMap { relation -> [SQL] in
            let key = relation.keySQL
            let table: SQL = "\(src).\(relation.name)"
            let relationName = SQLLiteral.text(relation.rawValue), keyName = SQLLiteral.text(relation.key)
            func values(_ problem: (SourceRelation.Check) -> SQL) -> SQL {
                relation.checks(jobSchema: settings.jobSchema).map { "(\(literal: .text($0.column)), \(problem($0)))" as SQL }
                    .joined(separator: ", ")
            }
            func rows(from: SQL, _ problem: (SourceRelation.Check) -> SQL, where condition: SQL) -> SQL {
                """
                SELECT \(literal: relationName), coalesce(x.\(key), ''), v.col, v.problem
                FROM \(from) CROSS JOIN LATERAL (VALUES \(values(problem))) AS v(col, problem)
                WHERE v.problem IS NOT NULL AND \(condition)
                """
            }
            guard let copy = relation.copy else {
                return [
                    rows(from: relation.from(table), \.problem, where: "true"),
                    """
                    SELECT \(literal: relationName), \(key), \(literal: keyName), 'duplicate key (' || count(*) || ' rows)'
                    FROM \(table) WHERE \(key) IS NOT NULL GROUP BY \(key) HAVING count(*) > 1
                    """,
                ]
            }
            var parts = [rows(from: "\(ident: "bad_" + copy) x", { "x.\($0.problemColumn)" }, where: "NOT x.dup_key")]
            if duplicated.contains(relation) {
                parts.append(rows(from: relation.from(table), \.problem, where: "x.\(key) IN (SELECT k FROM \(ident: "dk_" + copy))"))
            }
            parts.append(
                "SELECT \(literal: relationName), k, \(literal: keyName), 'duplicate key (' || n || ' rows)' FROM \(ident: "dk_" + copy)")
            return parts
        }
        return "INSERT INTO \(S).input_errors (relation, key, column_name, problem, run_id) SELECT e.*, \(runID)::bigint FROM ("
            + (parts + unknownStoreErrors + playInputErrors(duplicated: playDuplicated)).joined(separator: "\nUNION ALL ") + ") e"
    }

    /// Google Play's rows that break §1 as Play's rows are checked (`SourceRelation.checks`,
    /// `store: .googlePlay`), and their duplicated keys, as the App Store's are listed: from the
    /// copies of Play's rows (the problems of each key's first row, every row of a duplicated key
    /// read again from Play's rows: `duplicated` names those relations) and, for the products,
    /// from Play's rows themselves (OtherStoreRows.swift). Each problem begins `google_play: `.
    func playInputErrors(duplicated: Set<SourceRelation>) -> [SQL] {
        guard playViews != nil else { return [] }
        return SourceRelation.allCases.filter(settings.storeColumns.contains).flatMap { relation -> [SQL] in
            let key = relation.keySQL, table: SQL = "\(S).\(ident: relation.playRowsTable)"
            let checks = relation.checks(jobSchema: settings.jobSchema, store: .googlePlay)
            let name = SQLLiteral.text(relation.rawValue), keyName = SQLLiteral.text(relation.key)
            func rows(from: SQL, _ problem: (SourceRelation.Check) -> SQL, where condition: SQL) -> SQL {
                let values = checks.map { "(\(literal: .text($0.column)), \(problem($0)))" as SQL }.joined(separator: ", ")
                return """
                    SELECT \(literal: name), coalesce(x.\(key)::text, ''), v.col, v.problem
                    FROM \(from) CROSS JOIN LATERAL (VALUES \(values)) AS v(col, problem)
                    WHERE v.problem IS NOT NULL AND \(condition)
                    """
            }
            guard let copy = relation.copy(.googlePlay) else {
                return [
                    rows(from: relation.from(table, store: .googlePlay), \.problem, where: "true"),
                    """
                    SELECT \(literal: name), \(key)::text, \(literal: keyName), 'google_play: duplicate key (' || count(*) || ' rows)'
                    FROM \(table) WHERE \(key) IS NOT NULL GROUP BY \(key) HAVING count(*) > 1
                    """,
                ]
            }
            let dk: SQL = "\(S).\(ident: "dk_" + copy)"
            var parts = [rows(from: "\(S).\(ident: "bad_" + copy) x", { "x.\($0.problemColumn)" }, where: "NOT x.dup_key")]
            if duplicated.contains(relation) {
                parts.append(
                    rows(from: relation.from(table, store: .googlePlay), \.problem, where: "x.\(key) IN (SELECT k FROM \(dk))"))
            }
            parts.append(
                "SELECT \(literal: name), k::text, \(literal: keyName), 'google_play: duplicate key (' || n || ' rows)' FROM \(dk)")
            return parts
        }
    }

    /// Contract §1, "Two stores in one shop": the rows whose `store` names neither store, set
    /// aside by the night (OtherStoreRows.swift: the App Store's views leave them out, as they
    /// leave out Play's).
    var unknownStoreErrors: [SQL] {
        guard settings.storeRows != nil, scope == .night else { return [] }
        return SourceRelation.allCases.filter(settings.storeColumns.contains).map { relation in
            """
            SELECT \(literal: .text(relation.rawValue)), coalesce(x.\(relation.keySQL)::text, ''), 'store', \(StoreViews.storeProblem)
            FROM \(S).\(ident: relation.noStoreTable) x WHERE \(StoreViews.unknownStore)
            """
        }
    }
}
