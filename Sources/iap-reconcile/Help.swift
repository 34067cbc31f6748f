// The text `--help` shows after the options: the environment variables, what a night does with
// the App Store Server API, the reports and the exit codes (docs/contract.md says the same at length).

let environmentHelp = """
    ENVIRONMENT
      DATABASE_URL               libpq URL of the database; else libpq's own
      PGHOST PGPORT PGDATABASE   variables. The source relations and the job
      PGUSER PGPASSWORD          schema live there.
      PGPASSFILE
      SOURCE_DATABASE_URL        libpq URL of the database the four source
                                 relations are read from (a read replica will
                                 do; only read, in one REPEATABLE READ
                                 transaction); the night copies them into
                                 DATABASE_URL's first. Default: DATABASE_URL's
      IAP_SHARED_SECRET          the app's shared secret, sent as "password";
                                 never logged, reported or printed
      IAP_VERIFY_URL_PRODUCTION  https://buy.itunes.apple.com/verifyReceipt
      IAP_VERIFY_URL_SANDBOX     https://sandbox.itunes.apple.com/verifyReceipt
      IAP_BUNDLE_IDS             comma list of your bundle ids: a valid receipt
                                 or signed transaction of another bundle is
                                 rejected (wrong_bundle)
      IAP_ROOT_CERTIFICATES      comma list of PEM files: the roots a StoreKit 2
                                 signed transaction must chain to, instead of
                                 the embedded Apple Root CA - G3 (tests, demo)
      IAP_RECEIPTS               where app receipts are verified: auto (default),
                                 offline or verify-receipt (as --receipts)
      IAP_RECEIPT_ROOT_CERTIFICATES
                                 comma list of PEM files: the roots an app
                                 receipt must chain to, instead of the embedded
                                 Apple Root CA (tests, demo)
      IAP_ISSUER_ID              App Store Server API (all three, or none):
      IAP_KEY_ID                 the issuer id and key id of an In-App Purchase
      IAP_PRIVATE_KEY_FILE       key (App Store Connect > Users and Access >
                                 Integrations) and its .p8 file, used for
                                 every app of IAP_BUNDLE_IDS (a token per
                                 app, bid = the app). The key is never
                                 logged, reported or printed
      IAP_APP_KEYS               BUNDLE=KEY_ID:FILE,...: apps with an In-App
                                 Purchase key of their own (same issuer)
      IAP_API_URL_PRODUCTION     https://api.storekit.apple.com
      IAP_API_URL_SANDBOX        https://api.storekit-sandbox.apple.com
      IAP_CONSUMPTION_RESPONSES  send: respond sends its answers to Apple (as
                                 --send); record (default): records them only
      ASC_ISSUER_ID              Apple's daily Summary Sales Report (all four,
      ASC_KEY_ID                 or none; some: exit 78): an App Store Connect
      ASC_PRIVATE_KEY_FILE       API team key (Users and Access > Integrations
      ASC_VENDOR_NUMBER          > Team Keys, Sales or Finance role; not the
                                 In-App Purchase key) and its .p8 file, and
                                 the vendor number. Never logged or printed
      ASC_API_URL                https://api.appstoreconnect.apple.com

    APP STORE SERVER API SWEEPS (with the three IAP_* key variables)
      Each night asks, for every app of IAP_BUNDLE_IDS (its own token,
      positions and rate budgets), Get Notification History for REFUND,
      REFUND_REVERSED, ONE_TIME_CHARGE and REFUND_DECLINED from where the
      app's last finished sweep reached (the first
      night: --refund-window-days back), and Get Transaction History for the
      customers with open orders in the window (--history-limit). Consumable
      refunds reach clawback.csv and refunds.csv; purchases that never reached
      your server reach compensate.csv (empty receipt_id, source notification
      or transaction_history) or, tied to no user, unattributed.csv. Needs App
      Store Server Notifications V2 set in App Store Connect. Without the key
      the night runs on receipts alone and says which checks it skipped. A
      401 is believed only when a fresh token a second later gets one too;
      then that app is asked nothing more tonight (skipped_checks, a
      warning) and the other apps go on; every app refused: exit 78.

    REPORTS (run: <out>/<as-of UTC date>/, swapped in whole)
      compensate.csv, duplicate_grants.csv, clawback.csv, refunds.csv,
      unattributed.csv, closed.csv (findings of earlier nights gone tonight,
      and why), unresolved.csv, input_errors.csv, consumption_requests.csv
      (Apple's refund requests, what respond answered, the outcome): for
      machines, UTC.
      summary.json: counts, money per currency (owed, claw_back, refunded,
      refunded_still_granted), the tally. Amounts: Apple's signed price, else
      iap_products.price (optional). With the ASC_* variables compensate,
      clawback and refunds fill proceeds, proceeds_currency (Apple's developer
      proceeds from its daily sales reports) and the money gains proceeds_*.
      reconciliation.xlsx: the same rows for people, ids as text, times in
      --report-timezone. summary.html: one page, counts, money, 30 nights.
      <out>/last-run.json (every run, failed or not) and --metrics-file (a
      node_exporter textfile) for the operator.

    SIGNED TRANSACTIONS
      A receipt_data in JWS form (StoreKit 2 Transaction.jwsRepresentation) is
      verified offline, without the App Store: ES256, a 3-certificate chain to
      a pinned root with Apple's marker OIDs, validity at its signedDate, the
      bundle id. A failed check is a definitive rejection with its reason.

    EXIT CODES
      0   done (findings are not errors)
      64  bad usage
      65  the source relations do not match the contract, or the night was
          held: it looks wrong, its reports are under <out>/held/<date>/
          (fix the views and run again, or iap-reconcile release <date>)
      70  a check of the job's own results failed (the conservation tally):
          a bug; no report was written
      73  the reports cannot be written
      75  temporary: database or App Store unreachable, or another run holds
          the lock (after --lock-wait-seconds), or the standby of
          SOURCE_DATABASE_URL cancelled the read twice (recovery conflict:
          max_standby_streaming_delay, hot_standby_feedback); run again later
      78  configuration: App Store status 21004 (shared secret) or 21000,
          DATABASE_URL or SOURCE_DATABASE_URL malformed, the database refused
          the user, password or database name, a privilege is missing, no
          signed transaction verifies against the roots (IAP_ROOT_CERTIFICATES),
          no app receipt verifies offline and some fail on the root
          (IAP_RECEIPT_ROOT_CERTIFICATES), a root file is unreadable, or the
          job schema was migrated by a different build (migrate --status),
          or the ASC_* variables incomplete or their key unreadable (App Store
          Connect refusing the team key is no exit code: skipped_checks)
      1   anything else
    """
