import Reconciliation
import Testing

/// A storefront (ISO 3166-1 alpha-3, as signed transactions give it) mapped to the sales report's
/// country (alpha-2), for coverage.
@Suite("Storefronts: alpha-3 to alpha-2")
struct StorefrontsTests {
    @Test("the storefronts of the simulator and Apple's largest stores; Kosovo; anything else unknown")
    func mapping() {
        let known = ["USA": "US", "JPN": "JP", "DEU": "DE", "CHN": "CN", "GBR": "GB", "KOR": "KR", "FRA": "FR",
                     "BRA": "BR", "IND": "IN", "CAN": "CA", "AUS": "AU", "TWN": "TW", "HKG": "HK", "MAC": "MO",
                     "CHE": "CH", "AUT": "AT", "NLD": "NL", "ZAF": "ZA", "ARE": "AE", "SAU": "SA", "XKS": "XK"]
        for (storefront, country) in known { #expect(Storefronts.countryCode(storefront) == country, "\(storefront)") }
        for hostile in ["", "usa", "US", "USAA", "ZZZ", "U\u{0}A", "ÜSA", "USA ", " JPN"] {
            #expect(Storefronts.countryCode(hostile) == nil, "\(hostile.debugDescription)")
        }
    }

    @Test("the table: 250 codes, each three capital letters to two, no country named twice")
    func table() {
        let all = Storefronts.all
        #expect(all.count == 250)
        #expect(Set(all.map(\.country)).count == all.count)
        let capitals = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        for (storefront, country) in all {
            #expect(storefront.count == 3 && country.count == 2 && (storefront + country).allSatisfy(capitals.contains),
                    "\(storefront) \(country)")
        }
        #expect(all.map(\.storefront) == all.map(\.storefront).sorted())
    }
}
