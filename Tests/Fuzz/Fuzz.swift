// The verifyReceipt answer parser and the app receipt reader under libFuzzer (`make fuzz-build`,
// run by `make chaos`).
//
// Built with `-DFUZZING` and `-sanitize=fuzzer,address`, `main` hands every input libFuzzer
// makes to `VerifyReceipt.classify`, the whole path from body bytes to an answer class, to the
// offline receipt verifier (container, chain, signature) and to the receipt payload reader alone
// (which a mutated receipt never reaches past its signature): a crash, a hang past libFuzzer's
// timeout or an AddressSanitizer report fails the run. Built normally
// (`swift build`), it replays the files named on the command line through the same call, so the
// corpus in Tests/Fuzz/corpus stays compiled and runnable without libFuzzer.

import AppStore
#if canImport(Glibc)
import Glibc
#endif

/// libFuzzer's `LLVMFuzzerRunDriver`: its driver without its `main` (the package names the entry
/// point of an executable itself, so libFuzzer's own `main` cannot be used).
typealias RunDriver = @convention(c) (UnsafeMutablePointer<CInt>,
    UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// What must hold for every transaction id the job would keep: 1 to 20 digits.
func checkID(_ id: String, _ what: String) {
    if id.isEmpty || id.utf8.count > 20 || !id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
        fatalError("\(what) with transaction id \(id)")
    }
}

func classify(_ body: [UInt8]) {
    // Anchored at Apple Root CA (the corpus holds two real receipts), made for this input alone.
    if case .success(let receipt) = AppReceiptVerifier.standalone().verify(body, bundleIDs: nil) {
        for t in receipt.transactions { checkID(t.transactionID, "a verified receipt") }
    }
    if case .success(let ids) = AppReceiptVerifier.readPayload(body) {
        for id in ids { checkID(id, "a receipt payload") }
    }
    let answer = VerifyReceipt.classify(httpStatus: 200, body: body, environment: .production,
                                        allowedBundles: ["com.example.game"])
    // What must hold for every input: a garbage answer is never ok, and an ok one names its ids.
    if answer.answerClass == .ok {
        for t in answer.transactions where t.transactionID.isEmpty || t.transactionID.utf8.count > 20
            || !t.transactionID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            fatalError("an ok answer with transaction id \(t.transactionID)")
        }
    }
}

@main struct Fuzz {
    static func main() {
        #if FUZZING
        guard let driver = dlsym(dlopen(nil, RTLD_NOW), "LLVMFuzzerRunDriver") else {
            fatalError("built without libFuzzer: use make fuzz-build")
        }
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(unsafeBitCast(driver, to: RunDriver.self)(&argc, &argv) { data, size in
            classify(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        })
        #else
        var replayed = 0
        for path in CommandLine.arguments.dropFirst() {
            guard let file = fopen(path, "rb") else { continue }
            var body: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buffer, 1, buffer.count, file)
                if n <= 0 { break }
                body += buffer[..<n]
            }
            fclose(file)
            classify(body)
            replayed += 1
        }
        print("replayed \(replayed) inputs")
        #endif
    }
}
