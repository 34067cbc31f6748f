/// JobStore's slice of a run's settings: where the job's database is and which schema holds the
/// job's state. `JobSettings.database` carries it; `migrate --status` needs nothing else.
public struct DatabaseSettings: Sendable {
    /// `$DATABASE_URL` when set and not empty (may hold a password: never printed); nil: libpq's
    /// own variables (`PGHOST`, …).
    public var databaseURL: String?
    /// `--job-schema`: the schema of the job's own tables.
    public var jobSchema: JobSchema

    public init(databaseURL: String? = nil, jobSchema: JobSchema) {
        self.databaseURL = databaseURL
        self.jobSchema = jobSchema
    }
}
