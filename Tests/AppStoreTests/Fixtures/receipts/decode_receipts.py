#!/usr/bin/env python3
"""Decode the Apple app-receipt fixtures in this folder into golden.json.

Standard library only: a small BER/DER reader, PKCS#7 SignedData walker,
X.509 field extraction, the receipt attribute SET decoder, and a pure-Python
RSA PKCS#1 v1.5 check of the receipt signature and of the certificate chain.

Usage (from this folder):  python3 decode_receipts.py > golden.json
"""
import base64
import datetime
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- BER reader


class TLV:
    __slots__ = ("cls", "cons", "tag", "start", "hlen", "clen", "data", "raw", "indef")

    def __repr__(self):
        return f"TLV(cls={self.cls},cons={self.cons},tag={self.tag},len={self.clen})"


def read_tlv(buf, pos=0):
    start = pos
    b = buf[pos]
    pos += 1
    cls = b >> 6
    cons = bool(b & 0x20)
    tag = b & 0x1F
    if tag == 0x1F:  # high tag number form
        tag = 0
        while True:
            c = buf[pos]
            pos += 1
            tag = (tag << 7) | (c & 0x7F)
            if not c & 0x80:
                break
    l = buf[pos]
    pos += 1
    indef = False
    if l == 0x80:
        if not cons:
            raise ValueError("indefinite length on primitive")
        indef = True
        # find end-of-contents by walking children
        p = pos
        while not (buf[p] == 0 and buf[p + 1] == 0):
            p += len(read_tlv(buf, p).raw)
        clen = p - pos
    elif l & 0x80:
        n = l & 0x7F
        if n == 0 or n > 8:
            raise ValueError("bad length")
        clen = int.from_bytes(buf[pos:pos + n], "big")
        pos += n
    else:
        clen = l
    t = TLV()
    t.cls, t.cons, t.tag, t.start, t.hlen, t.clen, t.indef = cls, cons, tag, start, pos - start, clen, indef
    t.data = buf[pos:pos + clen]
    if len(t.data) != clen:
        raise ValueError("truncated")
    t.raw = buf[start:pos + clen + (2 if indef else 0)]
    return t


def children(t):
    out, p = [], 0
    while p < len(t.data):
        c = read_tlv(t.data, p)
        out.append(c)
        p += len(c.raw)
    return out


def parse_one(buf):
    t = read_tlv(buf, 0)
    if len(t.raw) != len(buf):
        raise ValueError(f"trailing bytes: {len(buf) - len(t.raw)}")
    return t


def expect(t, cls, tag, cons=None):
    if t.cls != cls or t.tag != tag or (cons is not None and t.cons != cons):
        raise ValueError(f"expected cls={cls} tag={tag}, got {t}")
    return t


U = 0  # universal class
CTX = 2


def oid_str(t):
    expect(t, U, 6)
    d = t.data
    parts, v = [], 0
    for c in d:
        v = (v << 7) | (c & 0x7F)
        if not c & 0x80:
            parts.append(v)
            v = 0
    first = min(parts[0] // 40, 2)
    return ".".join(str(x) for x in [first, parts[0] - 40 * first] + parts[1:])


def int_val(t):
    expect(t, U, 2)
    return int.from_bytes(t.data, "big", signed=True)


def octets(t):
    """OCTET STRING, primitive or (BER) constructed."""
    expect(t, U, 4)
    if not t.cons:
        return t.data
    return b"".join(octets(c) for c in children(t))


STRING_TAGS = {12: "UTF8String", 19: "PrintableString", 22: "IA5String", 20: "T61String",
               26: "VisibleString", 30: "BMPString"}


def time_val(t):
    s = t.data.decode("ascii")
    if t.tag == 23:  # UTCTime YYMMDDHHMMSSZ
        yy = int(s[0:2])
        year = 1900 + yy if yy >= 50 else 2000 + yy
        s = f"{year:04d}{s[2:]}"
    elif t.tag != 24:
        raise ValueError("not a time")
    dt = datetime.datetime.strptime(s, "%Y%m%d%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    return dt


def iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


OID_NAMES = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.10": "O", "2.5.4.11": "OU",
    "1.2.840.113549.1.7.1": "pkcs7-data", "1.2.840.113549.1.7.2": "pkcs7-signedData",
    "1.3.14.3.2.26": "sha1", "2.16.840.1.101.3.4.2.1": "sha256",
    "1.2.840.113549.1.1.1": "rsaEncryption", "1.2.840.113549.1.1.5": "sha1WithRSAEncryption",
    "1.2.840.113549.1.1.11": "sha256WithRSAEncryption",
    "1.2.840.10045.2.1": "ecPublicKey",
    "2.5.29.19": "basicConstraints", "2.5.29.15": "keyUsage", "2.5.29.14": "subjectKeyIdentifier",
    "2.5.29.35": "authorityKeyIdentifier", "2.5.29.31": "cRLDistributionPoints",
    "2.5.29.32": "certificatePolicies", "1.3.6.1.5.5.7.1.1": "authorityInfoAccess",
    "1.2.840.113549.1.9.3": "contentType", "1.2.840.113549.1.9.4": "messageDigest",
    "1.2.840.113549.1.9.5": "signingTime",
}

# ---------------------------------------------------------------- X.509


def name_val(t):
    expect(t, U, 16)
    rdns = []
    for rdn in children(t):
        for atv in children(rdn):
            oid_t, val_t = children(atv)
            oid = oid_str(oid_t)
            rdns.append([OID_NAMES.get(oid, oid), val_t.data.decode("utf-8")])
    return rdns


def cn_of(rdns):
    cns = [v for k, v in rdns if k == "CN"]
    return cns[0] if cns else None


KU_BITS = ["digitalSignature", "nonRepudiation", "keyEncipherment", "dataEncipherment",
           "keyAgreement", "keyCertSign", "cRLSign", "encipherOnly", "decipherOnly"]


def parse_cert(t):
    tbs, sigalg, sig = children(expect(t, U, 16))
    f = children(tbs)
    i = 0
    version = 1
    if f[0].cls == CTX and f[0].tag == 0:
        version = int_val(children(f[0])[0]) + 1
        i = 1
    serial = int_val(f[i])
    tbs_sigalg = oid_str(children(f[i + 1])[0])
    issuer = name_val(f[i + 2])
    nb, na = children(f[i + 3])
    subject = name_val(f[i + 4])
    spki = f[i + 5]
    alg_t, key_bits_t = children(spki)
    alg_children = children(alg_t)
    key_alg = oid_str(alg_children[0])
    key = {"algorithm_oid": key_alg, "algorithm": OID_NAMES.get(key_alg, key_alg)}
    rsa = None
    if key_alg == "1.2.840.113549.1.1.1":
        rsa_seq = parse_one(key_bits_t.data[1:])
        n_t, e_t = children(rsa_seq)
        n, e = int_val(n_t), int_val(e_t)
        key.update({"type": "RSA", "bits": n.bit_length(), "exponent": e})
        rsa = (n, e)
    elif key_alg == "1.2.840.10045.2.1":
        key.update({"type": "EC", "curve_oid": oid_str(alg_children[1])})
    exts = []
    basic = None
    ku = None
    apple = []
    for extra in f[i + 6:]:
        if extra.cls == CTX and extra.tag == 3:
            for ext in children(children(extra)[0]):
                parts = children(ext)
                oid = oid_str(parts[0])
                critical = False
                if len(parts) == 3:
                    critical = parts[1].data != b"\x00"
                value = octets(parts[-1])
                exts.append({"oid": oid, "name": OID_NAMES.get(oid, None), "critical": critical})
                if oid == "2.5.29.19":
                    bc = children(parse_one(value))
                    ca, pathlen = False, None
                    for c in bc:
                        if c.tag == 1:
                            ca = c.data != b"\x00"
                        elif c.tag == 2:
                            pathlen = int_val(c)
                    basic = {"critical": critical, "cA": ca, "pathLenConstraint": pathlen}
                elif oid == "2.5.29.15":
                    bs = parse_one(value)
                    unused, bits = bs.data[0], bs.data[1:]
                    names = []
                    for bit in range(len(bits) * 8 - unused):
                        if bits[bit // 8] & (0x80 >> (bit % 8)):
                            names.append(KU_BITS[bit] if bit < len(KU_BITS) else f"bit{bit}")
                    ku = {"critical": critical, "usages": names}
                elif oid.startswith("1.2.840.113635."):
                    apple.append({"oid": oid, "critical": critical, "value_hex": value.hex()})
    return {
        "version": version,
        "serial_decimal": str(serial),
        "serial_hex": format(serial, "X"),
        "subject_cn": cn_of(subject),
        "issuer_cn": cn_of(issuer),
        "subject": subject,
        "issuer": issuer,
        "not_before": iso(time_val(nb)),
        "not_after": iso(time_val(na)),
        "signature_algorithm_oid": oid_str(children(sigalg)[0]),
        "public_key": key,
        "basic_constraints": basic,
        "key_usage": ku,
        "apple_extensions": apple,
        "extensions": exts,
        "sha256_fingerprint": hashlib.sha256(t.raw).hexdigest().upper(),
        "der_length": len(t.raw),
        "_tbs": tbs.raw,
        "_sig_alg": oid_str(children(sigalg)[0]),
        "_sig": sig.data[1:],
        "_rsa": rsa,
    }


# ---------------------------------------------------------------- RSA check

DIGEST_INFO_PREFIX = {
    "sha1": bytes.fromhex("3021300906052b0e03021a05000414"),
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
}
HASH_OF_SIGALG = {"1.2.840.113549.1.1.5": "sha1", "1.2.840.113549.1.1.11": "sha256"}
HASH_OF_DIGEST_OID = {"1.3.14.3.2.26": "sha1", "2.16.840.1.101.3.4.2.1": "sha256"}


def rsa_pkcs1_ok(pub, sig, hash_name, message):
    n, e = pub
    k = (n.bit_length() + 7) // 8
    if len(sig) != k:
        return False
    em = pow(int.from_bytes(sig, "big"), e, n).to_bytes(k, "big")
    t = DIGEST_INFO_PREFIX[hash_name] + hashlib.new(hash_name, message).digest()
    expected = b"\x00\x01" + b"\xff" * (k - len(t) - 3) + b"\x00" + t
    return em == expected


# ---------------------------------------------------------------- receipt payload


def decode_inner(value):
    """The value OCTET STRING usually holds one DER element; describe it."""
    if not value:
        return {"kind": "empty-octets"}
    try:
        t = parse_one(value)
    except Exception:
        return {"kind": "raw", "hex": value.hex()}
    if t.cls == U and t.tag == 2:
        return {"kind": "INTEGER", "value": int_val(t)}
    if t.cls == U and t.tag in STRING_TAGS:
        return {"kind": STRING_TAGS[t.tag], "value": t.data.decode("utf-8")}
    if t.cls == U and t.tag == 17:
        return {"kind": "SET", "length": len(value)}
    return {"kind": f"cls{t.cls}-tag{t.tag}", "hex": value.hex()}


def attr_set(buf):
    s = parse_one(buf)
    expect(s, U, 17)
    out = []
    for seq in children(s):
        typ_t, ver_t, val_t = children(expect(seq, U, 16))
        out.append((int_val(typ_t), int_val(ver_t), octets(val_t)))
    return out


RECEIPT_FIELDS = {0: "environment", 2: "bundle_id", 3: "application_version",
                  19: "original_application_version", 12: "creation_date", 21: "expiration_date"}
RECEIPT_KINDS = {0: "UTF8String", 2: "UTF8String", 3: "UTF8String", 19: "UTF8String",
                 12: "IA5String", 21: "IA5String"}
IAP_FIELDS = {1701: "quantity", 1702: "product_id", 1703: "transaction_id",
              1705: "original_transaction_id", 1704: "purchase_date",
              1706: "original_purchase_date", 1708: "expires_date",
              1711: "web_order_line_item_id", 1712: "cancellation_date",
              1719: "is_in_intro_offer_period"}
IAP_KINDS = {1701: "INTEGER", 1702: "UTF8String", 1703: "UTF8String", 1705: "UTF8String",
             1704: "IA5String", 1706: "IA5String", 1708: "IA5String", 1711: "INTEGER",
             1712: "IA5String", 1719: "INTEGER"}


def take_fields(attrs, names, kinds):
    """Named fields: absent -> None; present -> the inner value exactly as encoded."""
    out = {v: None for v in names.values()}
    notes = []
    for typ, ver, val in attrs:
        if typ in names:
            d = decode_inner(val)
            if d.get("kind") != kinds[typ]:
                notes.append(f"type {typ}: expected {kinds[typ]}, found {d}")
            if out[names[typ]] is not None:
                notes.append(f"type {typ} appears more than once")
            out[names[typ]] = d.get("value", d)
            if ver != 1:
                notes.append(f"type {typ} has attribute version {ver}")
    return out, notes


def other_types(attrs, known):
    counts = {}
    for typ, ver, val in attrs:
        if typ not in known:
            counts[str(typ)] = counts.get(str(typ), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: int(kv[0])))


def other_detail(attrs, known):
    return [{"type": typ, "version": ver, "value_hex": val.hex(), "decoded": decode_inner(val)}
            for typ, ver, val in sorted(attrs, key=lambda a: a[0]) if typ not in known and typ != 17]


def rfc3339_unix(s):
    return int(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
               .replace(tzinfo=datetime.timezone.utc).timestamp())


def decode_receipt(der):
    ci = parse_one(der)
    ct_t, content = children(expect(ci, U, 16))
    content_type = oid_str(ct_t)
    sd = children(expect(content, CTX, 0))[0]
    f = children(expect(sd, U, 16))
    sd_version = int_val(f[0])
    digest_algs = [oid_str(children(a)[0]) for a in children(f[1])]
    eci = children(f[2])
    econtent_type = oid_str(eci[0])
    econtent = octets(children(expect(eci[1], CTX, 0))[0])
    certs, crls, signer_infos = [], None, None
    for x in f[3:]:
        if x.cls == CTX and x.tag == 0:
            certs = [parse_cert(c) for c in children(x)]
        elif x.cls == CTX and x.tag == 1:
            crls = len(children(x))
        elif x.cls == U and x.tag == 17:
            signer_infos = children(x)
    if len(signer_infos) != 1:
        raise ValueError("expected one signer")
    si = children(signer_infos[0])
    si_version = int_val(si[0])
    sid = children(si[1])
    sid_issuer_cn = cn_of(name_val(sid[0]))
    sid_serial = int_val(sid[1])
    si_digest = oid_str(children(si[2])[0])
    j = 3
    signed_attrs = None
    if si[j].cls == CTX and si[j].tag == 0:
        signed_attrs = si[j]
        j += 1
    sig_alg = oid_str(children(si[j])[0])
    signature = octets(si[j + 1])
    unsigned_present = len(si) > j + 2

    # signer certificate, signature check over eContent (no signed attributes)
    signer = [c for c in certs if c["serial_decimal"] == str(sid_serial) and c["issuer_cn"] == sid_issuer_cn]
    hash_name = HASH_OF_DIGEST_OID[si_digest]
    if signed_attrs is None:
        signed_bytes = econtent
    else:  # re-tag [0] IMPLICIT as SET OF for the signature input
        signed_bytes = b"\x31" + signed_attrs.raw[1:]
    sig_ok = bool(signer) and rsa_pkcs1_ok(signer[0]["_rsa"], signature, hash_name, signed_bytes)

    # chain: each certificate's signature checked against every carried cert and the pinned root
    root_der = pem_to_der(open(os.path.join(HERE, "apple-root-ca.pem")).read())
    root = parse_cert(parse_one(root_der))
    pool = certs + [root]
    chain = []
    for c in certs:
        issuers = [p for p in pool if p["subject"] == c["issuer"]]
        ok = any(p["_rsa"] and rsa_pkcs1_ok(p["_rsa"], c["_sig"], HASH_OF_SIGALG[c["_sig_alg"]], c["_tbs"])
                 for p in issuers)
        chain.append({"subject_cn": c["subject_cn"], "signed_by": c["issuer_cn"], "signature_valid": ok})

    attrs = attr_set(econtent)
    top, notes = take_fields(attrs, RECEIPT_FIELDS, RECEIPT_KINDS)
    iaps = []
    iap_other = {}
    for typ, ver, val in attrs:
        if typ != 17:
            continue
        ia = attr_set(val)
        fields, n2 = take_fields(ia, IAP_FIELDS, IAP_KINDS)
        notes += [f"in_app[{len(iaps)}] {n}" for n in n2]
        for k, v in other_types(ia, IAP_FIELDS).items():
            iap_other[k] = iap_other.get(k, 0) + v
        fields["other_attribute_types"] = other_detail(ia, IAP_FIELDS)
        iaps.append(fields)
    top_other = other_types(attrs, set(RECEIPT_FIELDS) | {17})

    return {
        "der_length": len(der),
        "der_sha256": hashlib.sha256(der).hexdigest(),
        "content_type_oid": content_type,
        "signed_data_version": sd_version,
        "digest_algorithm_oids": digest_algs,
        "encap_content_type_oid": econtent_type,
        "econtent_length": len(econtent),
        "econtent_sha256": hashlib.sha256(econtent).hexdigest(),
        "crls": crls,
        "signer_info": {
            "version": si_version,
            "sid_issuer_cn": sid_issuer_cn,
            "sid_serial_decimal": str(sid_serial),
            "digest_algorithm_oid": si_digest,
            "signature_algorithm_oid": sig_alg,
            "signed_attributes_present": signed_attrs is not None,
            "unsigned_attributes_present": unsigned_present,
            "signature_length": len(signature),
            "signature_valid_pure_python": sig_ok,
        },
        "certificates": [{k: v for k, v in c.items() if not k.startswith("_")} for c in certs],
        "certificate_chain_check_pure_python": chain,
        "receipt": {
            **top,
            "creation_date_unix": rfc3339_unix(top["creation_date"]) if top["creation_date"] else None,
            "in_app_count": len(iaps),
            "top_level_attribute_count": len(attrs),
            "other_top_level_attribute_types": top_other,
            "other_top_level_attributes": other_detail(attrs, set(RECEIPT_FIELDS)),
            "other_in_app_attribute_types": dict(sorted(iap_other.items(), key=lambda kv: int(kv[0]))),
            "in_app": iaps,
            "decoder_notes": notes,
        },
    }


def pem_to_der(text):
    lines = [l for l in text.splitlines() if l and not l.startswith("-----")]
    return base64.b64decode("".join(lines))


def main():
    out = {
        "generated_by": "decode_receipts.py (python3 standard library only)",
        "conventions": {
            "absent_field": "null",
            "empty_string": "the attribute is present and its inner string is empty",
            "integers": "JSON numbers (all below 2^53)",
            "fingerprints": "SHA-256 of the certificate DER, upper-case hex",
        },
        "receipts": {},
    }
    for name in ("sandbox-2015", "production-2024"):
        b64 = open(os.path.join(HERE, name + ".b64")).read().strip()
        der = base64.b64decode(b64, validate=True)
        out["receipts"][name] = {"file": name + ".b64", **decode_receipt(der)}
    root_der = pem_to_der(open(os.path.join(HERE, "apple-root-ca.pem")).read())
    root = parse_cert(parse_one(root_der))
    out["apple_root_ca"] = {k: v for k, v in root.items() if not k.startswith("_")}
    json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
