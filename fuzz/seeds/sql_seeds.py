"""Seed SQL for the classify and shard_plan targets: every string literal in
the crate's sources and tests that reads like a statement.

    python3 fuzz/seeds/sql_seeds.py OUT_DIR [PREFIX_HEX [REGEX]]

Run from the repository root. PREFIX_HEX is prepended to each seed (the
shard_plan target's config byte); REGEX keeps only matching statements."""
import re, sys, os, glob, hashlib
KW = ("SELECT","INSERT","UPDATE","DELETE","REPLACE","CREATE","DROP","ALTER","TRUNCATE","SET","SHOW","USE","BEGIN","START","COMMIT","ROLLBACK","LOCK","UNLOCK","CALL","DO","LOAD","WITH","EXPLAIN","DESCRIBE","DESC","HANDLER","PREPARE","EXECUTE","DEALLOCATE","XA","SAVEPOINT","RELEASE","FLUSH","KILL","GRANT","REVOKE","ANALYZE","OPTIMIZE","CHECK","VALUES","TABLE","RENAME","HELP","BACKUP","GET","/*","--","#","(")
lit = re.compile(r'(?:b?r(#*)"(.*?)"\1)|(?:b?"((?:[^"\\]|\\.)*)")', re.S)
def unescape(s):
    out=bytearray(); i=0
    while i < len(s):
        c=s[i]
        if c=='\\' and i+1 < len(s):
            n=s[i+1]
            if n=='n': out+=b'\n'; i+=2
            elif n=='t': out+=b'\t'; i+=2
            elif n=='r': out+=b'\r'; i+=2
            elif n=='0': out+=b'\0'; i+=2
            elif n=='\\': out+=b'\\'; i+=2
            elif n=='"': out+=b'"'; i+=2
            elif n=="'": out+=b"'"; i+=2
            elif n=='x': out.append(int(s[i+2:i+4],16)); i+=4
            elif n=='\n':
                i+=2
                while i<len(s) and s[i] in ' \t\n': i+=1
            elif n=='u':
                m=re.match(r'\\u\{([0-9a-fA-F]+)\}', s[i:]); out+=chr(int(m.group(1),16)).encode(); i+=m.end()
            else: out+=c.encode(); i+=1
        else:
            out+=c.encode(); i+=1
    return bytes(out)
seen=set()
for f in sorted(glob.glob('src/**/*.rs',recursive=True)+glob.glob('tests/**/*.rs',recursive=True)):
    text=open(f,encoding='utf-8').read()
    for m in lit.finditer(text):
        if m.group(2) is not None: raw=m.group(2).encode()
        else:
            try: raw=unescape(m.group(3))
            except Exception: continue
        t=raw.lstrip()
        up=t[:12].upper()
        if len(t)<3 or len(t)>4000: continue
        if not any(up.startswith(k.encode()) for k in KW): continue
        if t.startswith(b"--") and not t.startswith(b"-- "): continue
        seen.add(raw)
d=sys.argv[1]; os.makedirs(d,exist_ok=True)
prefix=bytes.fromhex(sys.argv[2]) if len(sys.argv)>2 else b''
filt=sys.argv[3].encode() if len(sys.argv)>3 else None
n=0
for s in sorted(seen):
    if filt and not re.search(filt, s, re.I): continue
    data=prefix+s
    open(os.path.join(d,hashlib.sha1(data).hexdigest()),'wb').write(data); n+=1
print(n, "seeds in", d)
