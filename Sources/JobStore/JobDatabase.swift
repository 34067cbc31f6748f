import Postgres

/// How every session of the job reaches Postgres.
package enum JobDatabase {
    /// Connects with `DATABASE_URL` (checked by `Night` before the first connection), else
    /// libpq's own variables. Every session asks the server to check every 2 s that the job is
    /// still there: when the job is killed in the middle of a long statement, Postgres ends its
    /// backend within seconds instead of at the end of the statement, and the advisory lock goes
    /// with it, so the next run does not find it held.
    package static func connect(_ settings: DatabaseSettings) throws -> PGConnection {
        let db = try PGConnection(conninfo: settings.databaseURL ?? "")
        do {
            try db.execute("SET client_connection_check_interval = '2s'")
        } catch let e as PGError where e.sqlState == "42704" {
            // PostgreSQL before 14 has no such setting: the lock then goes at the statement's end.
        }
        return db
    }
}

extension PGConnection {
    /// Runs `sql` for its effect: by the extended protocol when it binds values (one statement),
    /// else by the simple one (several statements may follow each other).
    package func run(_ sql: SQL) throws {
        if sql.bindsValues { _ = try query(sql) } else { try execute(sql) }
    }
}
