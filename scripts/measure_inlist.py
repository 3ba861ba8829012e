#!/usr/bin/python3
"""Peak RSS (VmHWM) and CPU of sluice for one huge `tid IN (1,1,...)` statement on a
sharded table (issue 15's exhaustion finding).

    scripts/measure_inlist.py SLUICE_BIN MASTER_PORT [MAX_STATEMENT_SIZE] [TERMS]

Starts SLUICE_BIN on free loopback ports in front of the MariaDB master on
MASTER_PORT (user sluice/sluice, e.g. a cluster from `scripts/cluster start`), with
`sharding.max_statement_size` = MAX_STATEMENT_SIZE (default: sluice's own default),
creates a sharded table with 41 rows through it, sends
`SELECT id FROM pr WHERE tid IN (1,1,...)` with TERMS terms (default 1,000,000:
1.9 MiB) and prints sluice's peak RSS and CPU time before and after, with the answer
(rows, or the error). Stops the sluice it started (by PID).
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import pymysql


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    binary, master_port = sys.argv[1], int(sys.argv[2])
    limit = sys.argv[3] if len(sys.argv) > 3 else None
    terms = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000
    db = f"measure_inlist_{os.getpid()}"
    port, admin = free_port(), free_port()
    tmp = tempfile.mkdtemp(prefix="sluice-measure-")
    config = os.path.join(tmp, "sluice.yaml")
    with open(config, "w") as f:
        f.write(
            f"listen: 127.0.0.1:{port}\nadmin_listen: 127.0.0.1:{admin}\n"
            "users:\n  - { name: app, password: app, backend: group }\n"
            "groups:\n  - name: main\n"
            f"    master: {{ addr: 127.0.0.1:{master_port}, user: sluice, password: sluice }}\n"
            "    replicas: []\n"
            "log:\n  level: warn\nfreshness:\n  mode: \"off\"\n"
            f"sharding:\n  tables: [\"{db}.pr.tid.4\"]\n"
            + (f"  max_statement_size: {limit}\n" if limit else "")
        )
    log = open(os.path.join(tmp, "sluice.log"), "w")
    proc = subprocess.Popen([binary, "serve", "--config", config], stdout=log, stderr=log)
    try:
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        direct = pymysql.connect(host="127.0.0.1", port=master_port, user="sluice", password="sluice", autocommit=True)
        direct.cursor().execute(f"CREATE DATABASE {db}")
        c = pymysql.connect(host="127.0.0.1", port=port, user="app", password="app", database=db, autocommit=True)
        cur = c.cursor()
        cur.execute(
            "CREATE TABLE pr (id BIGINT PRIMARY KEY, tid BIGINT NOT NULL, subject VARCHAR(64)) "
            "DEFAULT CHARSET=utf8mb4"
        )
        rows = ", ".join(f"({i}, {i % 8}, 's{i}')" for i in range(1, 42))
        cur.execute(f"INSERT INTO pr (id, tid, subject) VALUES {rows}")
        sql = "SELECT id FROM pr WHERE tid IN (" + ",".join(["1"] * terms) + ")"
        rss0, cpu0 = status_kib(proc.pid, "VmHWM"), cpu_seconds(proc.pid)
        t0 = time.time()
        try:
            cur.execute(sql)
            answer = f"{len(cur.fetchall())} rows"
        except pymysql.MySQLError as e:
            answer = f"error {e.args[0]}: {e.args[1][:120]}"
        wall = time.time() - t0
        rss1, cpu1 = status_kib(proc.pid, "VmHWM"), cpu_seconds(proc.pid)
        print(
            f"statement {len(sql)} bytes, max_statement_size {limit or 'default'}: {answer}; "
            f"sluice peak RSS {rss0} kB before, {rss1} kB after (+{(rss1 - rss0) / 1024:.1f} MiB); "
            f"CPU {cpu1 - cpu0:.2f} s; wall {wall:.2f} s"
        )
        direct.cursor().execute(f"DROP DATABASE {db}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


if __name__ == "__main__":
    main()
