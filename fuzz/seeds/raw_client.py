"""A small raw MySQL client (mysql_native_password, user app/app, database
test with a table post_reply) that sends commands of every response shape,
so a recorded session holds what a real server answers.

    python3 raw_client.py PORT [eof|deprecate]
"""
import socket, struct, hashlib, sys
port = int(sys.argv[1]); mode = sys.argv[2] if len(sys.argv) > 2 else "eof"
sock = socket.create_connection(("127.0.0.1", port))
buf = b""
def read_packet():
    global buf
    while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:3], "little"):
        d = sock.recv(65536)
        if not d: raise EOFError
        buf += d
    n = int.from_bytes(buf[:3], "little"); seq = buf[3]; p = buf[4:4+n]; buf = buf[4+n:]
    return seq, p
def send(seq, p): sock.sendall(len(p).to_bytes(3, "little") + bytes([seq]) + p)
def scramble(pw, nonce):
    s1 = hashlib.sha1(pw).digest(); s2 = hashlib.sha1(s1).digest()
    m = hashlib.sha1(nonce + s2).digest(); return bytes(a ^ b for a, b in zip(s1, m))
seq, g = read_packet()
i = g.index(0, 1); conn = g[i+1:i+5]; n1 = g[i+5:i+13]
rest = g[i+14:]
caps_lo = int.from_bytes(rest[0:2], "little"); caps_hi = int.from_bytes(rest[5:7], "little")
n2 = rest[18:18+12]; nonce = n1 + n2
CLIENT_LONG_PASSWORD=1; FOUND_ROWS=2; LONG_FLAG=4; CONNECT_WITH_DB=8; LOCAL_FILES=0x80; PROTOCOL_41=0x200; TRANSACTIONS=0x2000; SECURE=0x8000; MULTI_STMT=0x10000; MULTI_RES=0x20000; PS_MULTI=0x40000; PLUGIN=0x80000; ATTRS=0x100000; LENENC=0x200000; SESSION_TRACK=0x800000; DEPRECATE_EOF=0x1000000
caps = CLIENT_LONG_PASSWORD|LONG_FLAG|CONNECT_WITH_DB|LOCAL_FILES|PROTOCOL_41|TRANSACTIONS|SECURE|MULTI_STMT|MULTI_RES|PS_MULTI|PLUGIN|ATTRS|LENENC
if mode == "deprecate": caps |= DEPRECATE_EOF|SESSION_TRACK|FOUND_ROWS
auth = scramble(b"app", nonce)
attrs = b"\x04_pid\x0512345\x0c_client_name\x0aseedclient"
resp = struct.pack("<IIB", caps, 1 << 24, 45) + b"\0"*23 + b"app\0" + bytes([len(auth)]) + auth + b"test\0" + b"mysql_native_password\0" + bytes([len(attrs)]) + attrs
send(seq + 1, resp)
seq, p = read_packet(); assert p[0] == 0, p
def cmd(payload, until=None):
    send(0, payload)
    out = []
    while True:
        try:
            sock.settimeout(0.5); seq, p = read_packet(); out.append(p)
            if len(out) == 1 and p[:1] == b"\xfb" and payload[:1] == b"\x03":
                send(seq + 1, b"")  # LOCAL INFILE: an empty file
        except (socket.timeout, TimeoutError):
            break
    sock.settimeout(None)
    return out
Q = lambda s: cmd(b"\x03" + s.encode())
Q("SELECT 1")
Q("SELECT * FROM post_reply ORDER BY id")
Q("SELECT id, subject FROM post_reply WHERE tid = 99")
Q("SELECT 1; SELECT 'a', NULL; INSERT INTO post_reply (id, tid) VALUES (3, 7)")
Q("UPDATE post_reply SET tid = tid + 1 WHERE id = 3")
Q("SELECT nonexistent FROM nowhere")
Q("SHOW VARIABLES LIKE 'version%'")
Q("DELETE FROM post_reply WHERE id = 3")
Q("BEGIN"); Q("COMMIT")
Q("SET @x := 5")
Q("LOAD DATA LOCAL INFILE '/nonexistent' INTO TABLE post_reply")
cmd(b"\x04post_reply\0")           # COM_FIELD_LIST
cmd(b"\x09")                        # COM_STATISTICS
cmd(b"\x0e")                        # COM_PING
cmd(b"\x02test")                    # COM_INIT_DB
r = cmd(b"\x16SELECT id, subject, d, price, f, b FROM post_reply WHERE id >= ? AND tid <> ?")
stmt = r[0][1:5] if r and r[0][0] == 0 else b"\1\0\0\0"
# execute: id, flags, iterations, null bitmap (2 params -> 1 byte), bound=1, types, values
cmd(b"\x17" + stmt + b"\x00" + b"\x01\0\0\0" + b"\x00" + b"\x01" + b"\x08\x00\x03\x00" + struct.pack("<q", 0) + struct.pack("<i", 100))
cmd(b"\x17" + stmt + b"\x00" + b"\x01\0\0\0" + b"\x00" + b"\x00" + struct.pack("<q", 1) + struct.pack("<i", 100))
# with a read-only cursor, then fetch
cmd(b"\x17" + stmt + b"\x01" + b"\x01\0\0\0" + b"\x02" + b"\x01" + b"\x08\x00\x03\x00" + struct.pack("<q", 0))
cmd(b"\x1c" + stmt + struct.pack("<I", 1))
cmd(b"\x1c" + stmt + struct.pack("<I", 10))
cmd(b"\x18" + stmt + b"\x00\x00" + b"long data")  # COM_STMT_SEND_LONG_DATA: no answer
cmd(b"\x1a" + stmt)                                 # COM_STMT_RESET
r = cmd(b"\x16INSERT INTO post_reply (id, tid, subject) VALUES (?, ?, ?)")
st2 = r[0][1:5] if r and r[0][0] == 0 else b"\2\0\0\0"
cmd(b"\x17" + st2 + b"\x00\x01\0\0\0" + b"\x04" + b"\x01" + b"\x03\x00\x03\x00\xfd\x00" + struct.pack("<ii", 9, 9))
cmd(b"\x16SELECT * FROM nowhere WHERE x = ?")
cmd(b"\x19" + st2)                                  # COM_STMT_CLOSE: no answer
cmd(b"\x1f")                                        # COM_RESET_CONNECTION
# COM_CHANGE_USER to the same user
cmd(b"\x11" + b"app\0" + bytes([20]) + scramble(b"app", nonce) + b"test\0" + b"\x2d\x00" + b"mysql_native_password\0" + bytes([len(attrs)]) + attrs)
cmd(b"\x01")
