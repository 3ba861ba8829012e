// loadgen: the client side of scripts/fleet-test. Applications' way of using MySQL:
// Go's database/sql pool with go-sql-driver/mysql (which checks an idle connection's
// liveness before reusing it and lets database/sql retry on another connection when it
// was closed while idle), through HAProxy in front of three sluices.
//
// Workers run write transactions (BEGIN, INSERT, COMMIT) and reads through HAProxy and
// remember every acknowledged row. A checker writes through one sluice directly and
// reads through another: in strict mode the row must be there at once (no stale read
// across instances); in causal mode it must be there at once through the same sluice,
// and the time until another sluice's reads see it is measured (the cross-instance
// window). At the end every acknowledged row is looked up on the master.
// Runs until the file -stop exists; prints one JSON object.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

type result struct {
	Mode            string   `json:"mode"`
	TxOK            int64    `json:"tx_ok"`
	TxFailed        int64    `json:"tx_failed"`
	ReadsOK         int64    `json:"reads_ok"`
	ReadsFailed     int64    `json:"reads_failed"`
	Failures        []string `json:"failures"`
	Acked           int      `json:"acked_writes"`
	Missing         int      `json:"missing_writes"`
	Checks          int64    `json:"cross_instance_checks"`
	CheckSkipped    int64    `json:"checks_skipped_instance_down"`
	StaleCross      int64    `json:"stale_cross_instance"`
	StaleSame       int64    `json:"stale_same_instance"`
	WindowP50Ms     float64  `json:"window_p50_ms"`
	WindowP99Ms     float64  `json:"window_p99_ms"`
	WindowMaxMs     float64  `json:"window_max_ms"`
	WindowSamples   int      `json:"window_samples"`
	WindowImmediate int      `json:"window_visible_at_once"`
}

func main() {
	front := flag.String("haproxy", "", "HAProxy address host:port")
	sluices := flag.String("sluices", "", "comma-separated sluice addresses")
	master := flag.String("master", "", "master address (the final check)")
	mode := flag.String("mode", "causal", "freshness mode the sluices run")
	workers := flag.Int("workers", 8, "pool workers")
	stop := flag.String("stop", "", "stop when this file exists")
	lifetime := flag.Duration("lifetime", 0, "the pool's SetConnMaxLifetime (0: none)")
	flag.Parse()

	open := func(login, addr string, conns int) *sql.DB {
		db, err := sql.Open("mysql", fmt.Sprintf("%s@tcp(%s)/fleet?timeout=2s&readTimeout=30s&writeTimeout=30s", login, addr))
		if err != nil {
			panic(err)
		}
		db.SetMaxOpenConns(conns)
		db.SetMaxIdleConns(conns)
		db.SetConnMaxLifetime(*lifetime)
		return db
	}
	pool := open("app:app", *front, *workers)
	var direct []*sql.DB
	for _, a := range strings.Split(*sluices, ",") {
		direct = append(direct, open("app:app", a, 2))
	}

	var res result
	res.Mode = *mode
	var mu sync.Mutex
	var acked []int64
	fail := func(counter *int64, what string, err error) {
		atomic.AddInt64(counter, 1)
		mu.Lock()
		if len(res.Failures) < 20 {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %v", what, err))
		}
		mu.Unlock()
	}
	stopped := func() bool { _, err := os.Stat(*stop); return err == nil }
	ctx := context.Background()

	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; !stopped(); seq++ {
				tx, err := pool.BeginTx(ctx, nil)
				if err != nil {
					fail(&res.TxFailed, "begin", err)
					continue
				}
				r, err := tx.Exec("INSERT INTO acct (writer, seq) VALUES (?, ?)", w, seq)
				if err != nil {
					tx.Rollback()
					fail(&res.TxFailed, "insert", err)
					continue
				}
				id, _ := r.LastInsertId()
				if err := tx.Commit(); err != nil {
					fail(&res.TxFailed, "commit", err)
					continue
				}
				atomic.AddInt64(&res.TxOK, 1)
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
				var n int64
				if err := pool.QueryRow("SELECT COUNT(*) FROM acct WHERE writer = ?", w).Scan(&n); err != nil {
					fail(&res.ReadsFailed, "read", err)
				} else {
					atomic.AddInt64(&res.ReadsOK, 1)
				}
			}
		}(w)
	}

	var windows []float64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; !stopped(); k++ {
			time.Sleep(20 * time.Millisecond)
			i, j := k%len(direct), (k+1)%len(direct)
			r, err := direct[i].Exec("INSERT INTO probe (v) VALUES (?)", k)
			if err != nil {
				atomic.AddInt64(&res.CheckSkipped, 1)
				continue
			}
			id, _ := r.LastInsertId()
			seen := func(db *sql.DB) (bool, error) {
				var n int
				err := db.QueryRow("SELECT COUNT(*) FROM probe WHERE id = ?", id).Scan(&n)
				return n == 1, err
			}
			if *mode == "causal" {
				if ok, err := seen(direct[i]); err == nil && !ok {
					atomic.AddInt64(&res.StaleSame, 1)
				}
			}
			start := time.Now()
			ok, err := seen(direct[j])
			if err != nil {
				atomic.AddInt64(&res.CheckSkipped, 1)
				continue
			}
			atomic.AddInt64(&res.Checks, 1)
			if *mode == "strict" {
				if !ok {
					atomic.AddInt64(&res.StaleCross, 1)
				}
				continue
			}
			if ok {
				res.WindowImmediate++
				windows = append(windows, 0)
				continue
			}
			for !ok && err == nil && time.Since(start) < 5*time.Second {
				time.Sleep(500 * time.Microsecond)
				ok, err = seen(direct[j])
			}
			if ok {
				windows = append(windows, float64(time.Since(start).Microseconds())/1000)
			}
		}
	}()
	wg.Wait()

	// Every acknowledged write, on the master.
	m := open("sluice:sluice", *master, 1)
	present := map[int64]bool{}
	rows, err := m.Query("SELECT id FROM acct")
	if err != nil {
		panic(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		present[id] = true
	}
	res.Acked = len(acked)
	for _, id := range acked {
		if !present[id] {
			res.Missing++
		}
	}
	if len(windows) > 0 {
		sort.Float64s(windows)
		at := func(q float64) float64 { return windows[int(q*float64(len(windows)-1))] }
		res.WindowP50Ms, res.WindowP99Ms, res.WindowMaxMs = at(0.5), at(0.99), windows[len(windows)-1]
		res.WindowSamples = len(windows)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}
