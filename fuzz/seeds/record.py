"""Relays one TCP session between a client and a MariaDB server on loopback,
recording both directions as JSON [('c2s'|'s2c', base64), ...].

    python3 record.py LISTEN_PORT SERVER_PORT OUT.json
"""
import socket, sys, select, json, base64
listen_port, server_port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen_port)); ls.listen(1)
print("ready", flush=True)
c, _ = ls.accept()
s = socket.create_connection(("127.0.0.1", server_port))
log = []  # (direction, bytes)
socks = {c: ("c2s", s), s: ("s2c", c)}
alive = True
while alive:
    r, _, _ = select.select([c, s], [], [], 10)
    if not r: break
    for x in r:
        d = x.recv(1 << 20)
        if not d: alive = False; break
        name, other = socks[x]
        log.append((name, base64.b64encode(d).decode()))
        other.sendall(d)
json.dump(log, open(out, "w"))
