#!/usr/bin/python3
"""Point-select QPS through sluice with one server account vs 50 accounts sharing
the pool (issue 13), in the same run against the same sluice.

Usage: /usr/bin/python3 benches/accounts.py (Debian python3-pymysql)
      benches/accounts.py SLUICE_PORT MASTER_PORT [SECONDS] [PROCS]
  SLUICE_PORT  a sluice with `auth.account` set in front of the master at MASTER_PORT
  MASTER_PORT  the master (accounts and the table are created there as `sluice`/`sluice`)
  SECONDS      seconds per run (default 10); PROCS client processes (default 8)
Each client process runs `SELECT v FROM t WHERE id = ?` (text protocol, PyMySQL) in a
loop on its own connection; with 50 accounts, process i logs in as account i % 50 and
reconnects as the next account every 200 statements, so all 50 accounts' pools are in
use. Rounds alternate one/many twice; QPS is statements per second over all processes.
Prints one line per run and the ratio. Everything on 127.0.0.1.
"""
import multiprocessing as mp
import sys
import time

import pymysql

DB = "bench_accounts"
PW = "bench-pw"
N_ACCOUNTS = 50
ROWS = 10000


def admin(port):
    return pymysql.connect(host="127.0.0.1", port=port, user="sluice", password="sluice", autocommit=True)


def setup(master_port):
    c = admin(master_port)
    cur = c.cursor()
    cur.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {DB}.t (id INT PRIMARY KEY, v INT)")
    cur.execute(f"SELECT COUNT(*) FROM {DB}.t")
    if cur.fetchone()[0] < ROWS:
        cur.execute(f"DELETE FROM {DB}.t")
        for start in range(0, ROWS, 1000):
            vals = ",".join(f"({i},{i * 7})" for i in range(start, start + 1000))
            cur.execute(f"INSERT INTO {DB}.t VALUES {vals}")
    for i in range(N_ACCOUNTS):
        cur.execute(f"CREATE USER IF NOT EXISTS 'bench{i}'@'%' IDENTIFIED BY '{PW}'")
        cur.execute(f"GRANT SELECT ON {DB}.* TO 'bench{i}'@'%'")
    c.close()


def client(port, proc, procs, accounts, seconds, out):
    n = 0
    deadline = time.time() + seconds
    k = proc
    while time.time() < deadline:
        user = f"bench{k % accounts}"
        c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=PW, database=DB)
        cur = c.cursor()
        for j in range(200):
            cur.execute(f"SELECT v FROM t WHERE id = {(n * 7919 + j) % ROWS}")
            cur.fetchall()
            n += 1
            if time.time() >= deadline:
                break
        c.close()
        k += procs
    out.put(n)


def run(port, accounts, seconds, procs):
    q = mp.Queue()
    ps = [mp.Process(target=client, args=(port, i, procs, accounts, seconds, q)) for i in range(procs)]
    t = time.time()
    for p in ps:
        p.start()
    total = sum(q.get() for _ in ps)
    for p in ps:
        p.join()
    return total / (time.time() - t)


def main():
    port, master = int(sys.argv[1]), int(sys.argv[2])
    seconds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    procs = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    setup(master)
    time.sleep(3)  # sluice's account refresh (auth.refresh, 2 s by default)
    run(port, 1, 2, procs)  # warm-up
    res = {1: [], N_ACCOUNTS: []}
    for accounts in [1, N_ACCOUNTS, N_ACCOUNTS, 1]:
        qps = run(port, accounts, seconds, procs)
        res[accounts].append(qps)
        print(f"accounts={accounts:2d} procs={procs} seconds={seconds}: {qps:,.0f} qps", flush=True)
    one = sum(res[1]) / len(res[1])
    many = sum(res[N_ACCOUNTS]) / len(res[N_ACCOUNTS])
    print(f"mean: 1 account {one:,.0f} qps, {N_ACCOUNTS} accounts {many:,.0f} qps, ratio {many / one:.2f}")


if __name__ == "__main__":
    main()
