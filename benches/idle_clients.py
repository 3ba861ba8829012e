"""Hold N logged-in MySQL client connections open and idle (for the benchmarks' memory
and multiplexing figures; started by hold_start in benches/lib.sh).

usage: idle_clients.py PORT N [--user U] [--password P] [--database DB] [--query SQL]
                       [--workers K] [--autocommit off|on|server]

Opens N connections (K threads opening them in parallel; default 1), then, if --query is
given, runs it on the last one (proving that one really works), and prints
"ready K SECS [FAILED: error]" (K < N if a connection failed: the K that worked are held
anyway, so their memory can still be measured). Then it reads commands from stdin:
--autocommit: PyMySQL's autocommit argument; "off" (PyMySQL's default, as DB-API wants)
sends SET AUTOCOMMIT = 0 right after the login, "server" (None) sends nothing and keeps
the server's default. "check" pings every connection (COM_PING) and prints "alive A of K[ (first error)]"; at
EOF (the benchmark closed our stdin, or died) it exits, which closes the connections.
"""

import argparse
import resource
import sys
import threading
import time

import pymysql

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("n", type=int)
ap.add_argument("--user", default="sbtest")
ap.add_argument("--password", default="sbtest")
ap.add_argument("--database", default=None)
ap.add_argument("--query", default=None)
ap.add_argument("--workers", type=int, default=1)
ap.add_argument("--autocommit", choices=("off", "on", "server"), default="off")
args = ap.parse_args()
autocommit = {"off": False, "on": True, "server": None}[args.autocommit]

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.n + 100)), hard))

conns, failures, lock = [], [], threading.Lock()


def opener(count):
    for _ in range(count):
        if failures:
            return
        try:
            c = pymysql.connect(host="127.0.0.1", port=args.port, user=args.user,
                                password=args.password, database=args.database,
                                connect_timeout=30, autocommit=autocommit)
        except Exception as e:  # noqa: BLE001 - reported, not raised
            with lock:
                failures.append(e)
            return
        with lock:
            conns.append(c)


t0 = time.monotonic()
workers = max(1, min(args.workers, args.n))
share = [args.n // workers + (1 if i < args.n % workers else 0) for i in range(workers)]
threads = [threading.Thread(target=opener, args=(k,)) for k in share]
for t in threads:
    t.start()
for t in threads:
    t.join()
failure = " FAILED: %s" % (failures[0],) if failures else ""
if args.query and conns and not failures:
    try:
        cur = conns[-1].cursor()
        cur.execute(args.query)
        cur.fetchall()
    except Exception as e:  # noqa: BLE001
        failure = " FAILED: %s" % (e,)
print("ready %d %.2f%s" % (len(conns), time.monotonic() - t0, failure), flush=True)

for line in sys.stdin:
    if line.strip() == "check":
        alive, first = 0, ""
        for c in conns:
            try:
                c.ping(reconnect=False)
                alive += 1
            except Exception as e:  # noqa: BLE001
                first = first or " (%s)" % (e,)
        print("alive %d of %d%s" % (alive, len(conns), first), flush=True)
