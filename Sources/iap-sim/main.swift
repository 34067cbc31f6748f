print("iap-sim")
