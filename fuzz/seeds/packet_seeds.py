"""Turns sessions recorded by record.py into seed inputs for packet_decoder,
handshake_response, stmt_execute and backend_rows.

    python3 packet_seeds.py OUT_DIR DIR_WITH_JSON
"""
import json, base64, glob, os, sys, hashlib, struct
out = sys.argv[1]
def put(target, data):
    d = os.path.join(out, target); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb").write(data)
def frames(stream):
    at = 0; res = []
    while at + 4 <= len(stream):
        n = int.from_bytes(stream[at:at+3], "little")
        if at + 4 + n > len(stream): break
        res.append((stream[at+3], stream[at+4:at+4+n], stream[at:at+4+n])); at += 4 + n
    return res
def lenenc(b, i):
    c = b[i]
    if c < 0xfb: return c, i + 1
    if c == 0xfc: return int.from_bytes(b[i+1:i+3], "little"), i + 3
    if c == 0xfd: return int.from_bytes(b[i+1:i+4], "little"), i + 4
    return int.from_bytes(b[i+1:i+9], "little"), i + 9
def coldef_meta(p):
    i = 0
    for _ in range(6):
        n, i = lenenc(p, i); i += n
    i += 1  # 0x0c
    charset = p[i:i+2]; ty = p[i+6]; flags = p[i+7:i+9]; dec = p[i+9]
    return bytes([ty]) + flags + charset + bytes([dec])
for f in sorted(glob.glob(sys.argv[2] + "/*.json")):
    log = [(d, base64.b64decode(b)) for d, b in json.load(open(f))]
    # group consecutive chunks by direction: exchanges
    runs = []
    for d, b in log:
        if runs and runs[-1][0] == d: runs[-1][1] += b
        else: runs.append([d, bytearray(b)])
    c2s = b"".join(bytes(b) for d, b in runs if d == "c2s")
    put("packet_decoder", b"\x0f" + c2s)        # raw, limit 1 GiB, whole reads
    put("packet_decoder", b"\x04" + c2s[:4096])  # raw, handshake limit, 3-byte reads
    client_frames = frames(c2s)
    if client_frames:
        hs = client_frames[0][1]
        put("handshake_response", b"\x00" + hs)
        put("handshake_response", b"\x03" + hs)
        ssl = bytearray(hs[:32]); ssl[1] |= 0x08  # CLIENT_SSL = 0x800
        put("handshake_response", b"\x01" + bytes(ssl))
    for _, p, _ in client_frames:
        if p[:1] == b"\x11":
            put("handshake_response", b"\x00" + p[1:])
        if p[:1] == b"\x17":
            put("stmt_execute", b"\x02\x00" + p)
            put("stmt_execute", b"\x03\x00" + p)
    # each server answer on its own, for the response tracker
    last_cmd = None
    for d, b in runs:
        if d == "c2s":
            fr = frames(bytes(b)); last_cmd = fr[0][1][:1] if fr else None
            continue
        put("packet_decoder", b"\x0f" + bytes(b))
        fr = frames(bytes(b))
        # result sets: column definitions, then rows
        first = fr[0][1] if fr else b""
        if last_cmd in (b"\x03", b"\x17") and first and first[0] not in (0, 0xff, 0xfb, 0xfe):
            ncol, _ = lenenc(first, 0)
            defs = [p for _, p, _ in fr[1:1+ncol]]
            try:
                metas = b"".join(coldef_meta(p) for p in defs[:8])
            except IndexError:
                continue
            n = min(ncol, 8)
            for p in defs[:2]:
                put("backend_rows", bytes([n - 1]) + metas + p)
            for _, p, _ in fr[1+ncol:]:
                if p[:1] in (b"\xfe", b"\xff") and len(p) < 16: continue
                put("backend_rows", bytes([n - 1]) + metas + p)
