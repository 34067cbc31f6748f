// The lower targets take their slice of the settings (DatabaseSettings, TransportSettings); the
// night's code hands them the whole JobSettings, and these pass the slice on.

import JobStore
import Postgres
import StoreIO

extension JobDatabase {
    /// A session of the job's database with the run's settings.
    package static func connect(_ settings: JobSettings) throws -> PGConnection {
        try connect(settings.database)
    }
}

extension AppStoreTransport {
    /// The transport of a run with `settings` (its slice `transport`); `service` names the other
    /// end in the exit-75 line.
    package init(settings: JobSettings, service: String, concurrency: Int? = nil) {
        self.init(settings: settings.transport, service: service, concurrency: concurrency)
    }
}

extension ServerAPICaller {
    /// `lookup`'s caller with the run's settings.
    package init(api: ServerAPISettings, settings: JobSettings) {
        self.init(api: api, settings: settings.transport)
    }
}
