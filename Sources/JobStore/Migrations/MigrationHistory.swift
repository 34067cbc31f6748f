/// A text a migration has had in this repository: its checksum (sha256 of the text, `{S}`
/// unreplaced), the commits whose builds applied it, and the sha256 of each function body it
/// creates (the text between its `$fn$` quotes, what Postgres keeps as `pg_proc.prosrc`).
struct ShippedText: Sendable {
    let checksum: String
    let shipped: String
    let functions: [(name: String, sha256: String)]

    init(_ checksum: String, shipped: String, functions: [(String, String)]) {
        self.checksum = checksum
        self.shipped = shipped
        self.functions = functions.map { (name: $0.0, sha256: $0.1) }
    }
}

extension Migrations {
    /// Every text each version had in this repository's history, oldest first, up to commit
    /// 8f8d6a6, the last build that rendered migrations from Swift constants (RecordAnswers.sql
    /// and .setSQL, LearnTransactions.sql): the last of each list is the frozen text. Rendered
    /// once from every commit (the renderer was checked against the Swift build of 8f8d6a6, text
    /// for text). A database recorded before checksums existed is matched against these
    /// (SchemaCheck.backfill).
    /// Closed: a changed text is a new migration, never another entry here. A migration written
    /// after 8f8d6a6 has the one text it was frozen with (version 12 on).
    static let history: [Int: [ShippedText]] = [
        1: [
            ShippedText("e0096c1356c587f01e101bf9b3b18a93fba02ec0897d0d5c316d7f99911fc30b", shipped: "fd54cc2..d9701b7", functions: [
                ("record_answers", "68c3ecc8d59b69273c8838be5139b4c47fa68cd84ee3f888eb868c4b75ba3f2b")]),
            ShippedText("3175aa9086a39d2fa0c7b7d37f2002bb3a66c974b0aafc99f34c94e0f226ecfe", shipped: "14967ab..a16b257", functions: [
                ("record_answers", "fe73b6985a38dadbed7c56d7829f9692246c476a4828cf588743b03fa2f2fbc4")]),
            ShippedText("76fa8a0ec6345a0c23e2295bd8b280e5d2fc666eb9bed011b033d58afcf7d1b3", shipped: "609fd49..d99bc88", functions: [
                ("record_answers", "3911664e65e9398fca2aa8312d85de5f31567f99e871c0dbfad0e9a9f9b0bce0")]),
            ShippedText("78affd19594c0ea0586f8c8ed5626dd0bb8b4dc939770f0af9b31b56e5f2d4e7", shipped: "a5282e3..bce1d7d", functions: [
                ("record_answers", "62d7f248102d4c8f843d415f7766f4ce0b6881a6bc8f49ce9d9767d8cc534088")]),
            ShippedText("08158425b7d601b25538d60e4832e12e74609bb2cf9bdbefef24f689df1a09cb", shipped: "59de605..8f8d6a6", functions: [
                ("record_answers", "b8190126853f0a9ac4942b0d125dbbb5049acb8f62b75493325b3af67666077f")]),
        ],
        2: [
            ShippedText("43590509c8239ecbc7bbb715cea6950e6722a15d2771bd0b819bd5ba25986c9f", shipped: "4563a25", functions: [
                ("is_base64", "5643733e8c822438a5199c6d62129605dbf491fdd14875148b116328604c1765")]),
            ShippedText("624c826f7e9878c7f47300b7ee11572cf0512477ff4054f072886cc500a35cd3", shipped: "eb65af4..8f8d6a6", functions: [
                ("is_base64", "218492725fe086363ac811da63df558b2cae53c61c5b1fece7525b326b8c365d")]),
        ],
        3: [
            ShippedText("6994d46b758bf0f6c1128ee32c3841bab2e75ab6fd736596f45116169bcce395", shipped: "14967ab..a16b257", functions: [
                ("record_answers", "fe73b6985a38dadbed7c56d7829f9692246c476a4828cf588743b03fa2f2fbc4")]),
            ShippedText("65d934ade1bc3a7ebd53f5b32b5156127c44dbfb56cff3869e23a8a8881e931b", shipped: "609fd49..d99bc88", functions: [
                ("record_answers", "3911664e65e9398fca2aa8312d85de5f31567f99e871c0dbfad0e9a9f9b0bce0")]),
            ShippedText("bb0350e3fa8654ed72e10d2b257178ce8b388f2832ff9024271212df530dcf37", shipped: "a5282e3..bce1d7d", functions: [
                ("record_answers", "62d7f248102d4c8f843d415f7766f4ce0b6881a6bc8f49ce9d9767d8cc534088")]),
            ShippedText("abba2d9188147fba0650064fa7e1a795d758a27db951390a84abd800d9fb08bb", shipped: "59de605..8f8d6a6", functions: [
                ("record_answers", "b8190126853f0a9ac4942b0d125dbbb5049acb8f62b75493325b3af67666077f")]),
        ],
        4: [
            ShippedText("24e1f54d65fa852890968b9ae1adc10541e05df11f7ac2b42920fc4b849b39a1", shipped: "df04ac8..8f8d6a6", functions: [
                ("is_base64", "25e0cdcd5b13d693d153eeb6f5d57a2d31573be6033d0afcefa60a71010cc136")]),
        ],
        5: [
            ShippedText("3e33d99e86dbeff445a8e481a7ef0ee15bdeafc28fc3d4cb0de4f55c75ce9ddb", shipped: "609fd49..d99bc88", functions: [
                ("is_jws", "57b00efee8ec421e1aa14821b1b9892ac906e40757ae5e004b85f87af753b9f7"),
                ("record_answers", "3911664e65e9398fca2aa8312d85de5f31567f99e871c0dbfad0e9a9f9b0bce0")]),
            ShippedText("c4979f215cb1ce80c6bc836f048c314a6e858065db535057bedc2592a1e994c2", shipped: "a5282e3..bce1d7d", functions: [
                ("is_jws", "57b00efee8ec421e1aa14821b1b9892ac906e40757ae5e004b85f87af753b9f7"),
                ("record_answers", "62d7f248102d4c8f843d415f7766f4ce0b6881a6bc8f49ce9d9767d8cc534088")]),
            ShippedText("9377e600254d086f900737cfcfddf4be83bd9a9b153558dc261ef68a49a757e3", shipped: "59de605..8f8d6a6", functions: [
                ("is_jws", "57b00efee8ec421e1aa14821b1b9892ac906e40757ae5e004b85f87af753b9f7"),
                ("record_answers", "b8190126853f0a9ac4942b0d125dbbb5049acb8f62b75493325b3af67666077f")]),
        ],
        6: [
            ShippedText("7cea83d56856ad586dae36dcfcb0fc1c10a546c47b61fc054f1aa3262f81084f", shipped: "a5282e3..bce1d7d", functions: [
                ("source_rank", "67154555f5f0dee62adb3868810b07da8d2ef0518548ee1afe7fe1726d97006c"),
                ("money_text", "cc05a4e673fa2b24ea3fb89dc22702e6a23806ce70716428ba9a3ddd10c17445"),
                ("record_answers", "62d7f248102d4c8f843d415f7766f4ce0b6881a6bc8f49ce9d9767d8cc534088"),
                ("learn_transactions", "402538a0babd9b1ce1c39d4f0d5fcca8d406423003e107956805904f787d2f2a")]),
            ShippedText("6aaf16ceb2a62615ef33c09343d2bd27a8f9ee56604b9dfa0bbf32c85124be32", shipped: "59de605..8f8d6a6", functions: [
                ("source_rank", "67154555f5f0dee62adb3868810b07da8d2ef0518548ee1afe7fe1726d97006c"),
                ("money_text", "cc05a4e673fa2b24ea3fb89dc22702e6a23806ce70716428ba9a3ddd10c17445"),
                ("record_answers", "b8190126853f0a9ac4942b0d125dbbb5049acb8f62b75493325b3af67666077f"),
                ("learn_transactions", "fe0e454975042d4e40c1dcf1026f8730519333f7e9b64eeeb8dc70d1dce02835")]),
        ],
        7: [
            ShippedText("3c201729d9923683ef566521d8125158caba0af7b44eb48a34308e0e3afc74b4", shipped: "a262172..8f8d6a6", functions: []),
        ],
        8: [
            ShippedText("6f4fb3d7978a407fe1ea8ed305a0a1edac989ad7648f02fe0f75ee32cf18003d", shipped: "622e7ff..8f8d6a6", functions: [
                ("is_base64", "16d9a6e446b1b8a5fba3ac2eb87b3fa86a1d1f1bfd4077194366809be8f48c23")]),
        ],
        9: [
            ShippedText("f396afab0a917178ddb4e02f7571fd17967132922aad1beba37e8179b6759b14", shipped: "f090d46..8f8d6a6", functions: []),
        ],
        10: [
            ShippedText("778fcdb932ebe992cd459116008e47cebe33e1c82b7efda43f693f15911d66ff", shipped: "e1808c9..8f8d6a6", functions: []),
        ],
        11: [
            ShippedText("2906f775b0ac23becf6cc73831447bef722c500153b643c4c3bd349ef4f1359c", shipped: "90aae10..8f8d6a6", functions: [
                ("record_answers", "2e289ecbcf53751f0e5dd02c6fc3659dd66442ee17dcbe0a5cd8475893b00f12")]),
        ],
        12: [
            ShippedText("b6b4c4484f4692dffe2efbdcf8f008b08faecea23b9b542659e066dd2254213f", shipped: "from this build", functions: [
                ("answer_staging", "7d17513885a9b63ff0f7fd01bb8edef54a1fb8629ea8d9d629a551c44933c000"),
                ("record_staged_answers", "bc817d520d0c2f081053f2417505a5640a75401fce2a9be8fdae367cd1580f75")]),
        ],
        13: [ShippedText("30c1145b0a9851edbd8bd978ff63c73b2abef66af9cf0516011badf89a11fa96", shipped: "from this build", functions: [])],
        14: [ShippedText("0bd655134c0dc20a63a38605ead3ff87d8457709ee0a6a8433e0b21b7519337a", shipped: "from this build", functions: [])],
        15: [ShippedText("9421fc0e2189de57dc81446d29aaa7b7c5d59e24a907966ad3a7df76d9a1e482", shipped: "from this build", functions: [
            ("money_in_units", "0bd00dc51ab0d410e1363d07cd29fc5875e8b0207650247e440e63a8c665f187")])],
        16: [ShippedText("5e0b265d0bf14536ec287ccc677c783c6ba1fadc41aefd82b5a161f54777df03", shipped: "from this build", functions: [])],
        17: [ShippedText("c3d44b0f8a56404f7f1f4ecc3d37c45181c127ffd52614cbfed24ac2ff84ebdf", shipped: "from this build", functions: [
            ("answer_staging", "888812db42f9bae4f0fb530b0ebc06fe421e8d2aa7d4a6a6c4e6c9e977a23855"),
            ("record_staged_answers", "ddd79289cf1770254cd44d4ad6820ea0a8648bf486f069a5e9bba08694038531")])],
        18: [ShippedText("7e4d8e001331ba0360cfe41e8941074973c4b57e465c142d02d259cf4b9e6509", shipped: "from this build", functions: [])],
        19: [ShippedText("7d30311b913f4bcfc2ea5d0c43281a4c5c4e627c6faef7fe3f02789e5aae3d25", shipped: "from this build", functions: [])],
        20: [ShippedText("186393174fc4efa1cbabc561c92020e74fc734f379a60d3211db84381b6442be", shipped: "from this build", functions: [])],
        21: [ShippedText("20e022707a9a812c24e346dd06cce923f57fb76bd4ef0628ba881cde698505f7", shipped: "from this build", functions: [])],
        22: [ShippedText("b6e5d056870b9be097bee15cac571c451477fcc65f075cbbfd3c3a4e3cba609e", shipped: "from this build", functions: [])],
    ]
}
