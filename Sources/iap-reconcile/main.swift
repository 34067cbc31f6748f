print("iap-reconcile")
