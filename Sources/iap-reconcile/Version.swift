/// Printed by `iap-reconcile --version`.
let iapReconcileVersion = "0.4.0"
