/// The release, as CHANGELOG.md's newest heading names it (a test holds them equal). Printed by
/// `iap-reconcile --version` with the commit of the build (`iapReconcileCommit`, written by the
/// BuildCommit plugin).
let iapReconcileVersion = "0.6.0"
