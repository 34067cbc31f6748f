// The decide stage's copies of the source relations, in one pass over each.
// Each copy holds the first row of every key with the columns the night
// reads and the problems the row has (contract §1, said once in SourceRows.swift); the rows
// with a problem then move to a small `bad_` table. So one scan of a relation gives the clean
// rows the rules decide from (`o`, `r`, `g`), the input errors, the conservation tally's
// buckets and unresolved.csv, where each used to read the relation again.

import JobStore
import NightLearn
import Postgres

extension DecideStage {
    /// The night's tables of the rows the App Store's views leave out (`OtherStoreRows`), nil with
    /// one store.
    var otherStoreRowsSQL: SQL? {
        guard let rows = settings.storeRows, scope == .night else { return nil }
        return OtherStoreRows.sql(
            rows: rows, jobSchema: settings.jobSchema, storeColumns: settings.storeColumns, newTable: { newTable($0) })
    }

    /// The copies of receipts, orders and grants, in this order, each with fresh statistics, one
    /// piece of SQL per relation (they are made side by side: NightTables.swift). No indexes: every statement
    /// reads them whole through hash joins (the three indexes they had cost seconds and no plan at
    /// the benchmark's size used them).
    func copiesSQL(_ db: PGConnection) throws -> [SQL] {
        let indexed = try keyIndexedRelations(db)
        // The receipts first: the longest copy (its checks decode base64), so the other two share
        // the second core meanwhile.
        return [SourceRelation.receipts, .orders, .grants].map {
            $0.copySQL(
                source: "\(src).\($0.name)", jobSchema: settings.jobSchema, keyIndexed: indexed.contains($0),
                counted: counted(SourceCopy.duplicatedKeys($0)), newTable: { newTable($0) })
        }
    }

    /// The table `SourceCopy` made of `name`'s keys at the source database, if it did.
    func counted(_ name: String) -> SQL? {
        settings.sourceKeysCounted.contains(name) ? "\(src).\(ident: name)" : nil
    }

    /// The source relations with a valid, whole (not partial) btree index whose first column is
    /// their key. (A view has none.)
    func keyIndexedRelations(_ db: PGConnection) throws -> Set<SourceRelation> {
        try Set(SourceRelation.allCases.filter { try indexLed(by: $0.key, of: $0, db) })
    }

    /// Whether the source `relation` has a valid, whole (not partial) btree index whose first
    /// column is `column`. With two stores the night reads the App Store's views (contract §1,
    /// "Two stores in one shop"), which have none: the relation under the view is asked, and
    /// Postgres reads its index through the view's filter (the grants' duplicated keys in key
    /// order from the index: 0.93 s, hashed: 1.26 s, at the two-store benchmark's size).
    func indexLed(by column: String, of relation: SourceRelation, _ db: PGConnection) throws -> Bool {
        try relation.indexLed(by: column, schema: settings.storeRows ?? settings.sourceSchema, db)
    }

    /// The relations with a duplicated key tonight among `store`'s rows (their rows are read again
    /// for input_errors).
    func duplicatedRelations(_ db: PGConnection, store: SourceStore = .appStore) throws -> Set<SourceRelation> {
        var found: Set<SourceRelation> = []
        for relation in SourceRelation.allCases {
            guard let copy = relation.copy(store) else { continue }
            if try db.query("SELECT EXISTS (SELECT 1 FROM \(ident: "dk_" + copy))").value(0, 0) == "t" { found.insert(relation) }
        }
        return found
    }
}
