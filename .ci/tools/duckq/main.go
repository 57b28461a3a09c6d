// Command duckq runs SQL with DuckDB and prints each result as JSON: one
// array of objects per statement, one per line. Tests use it to query
// what `jukebox export parquet` wrote, as a user's DuckDB would; it lives
// in the tools module so that DuckDB (cgo, C++) never enters the binary.
//
//	duckq [-C DIR] 'SELECT ...' ['SELECT ...' ...]
package main

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	dir := flag.String("C", "", "run in this folder (relative paths in the SQL start here)")
	flag.Parse()
	if *dir != "" {
		if err := os.Chdir(*dir); err != nil {
			fail(err)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		fail(err)
	}
	defer db.Close()
	for _, q := range flag.Args() {
		rows, err := db.Query(q)
		if err != nil {
			fail(fmt.Errorf("%s: %w", q, err))
		}
		cols, err := rows.Columns()
		if err != nil {
			fail(err)
		}
		out := []map[string]any{}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				fail(err)
			}
			row := map[string]any{}
			for i, c := range cols {
				if t, ok := vals[i].(time.Time); ok {
					vals[i] = t.UTC().Format(time.RFC3339Nano)
				}
				row[c] = vals[i]
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			fail(fmt.Errorf("%s: %w", q, err))
		}
		rows.Close()
		b, err := json.Marshal(out)
		if err != nil {
			fail(err)
		}
		fmt.Println(string(b))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "duckq:", err)
	os.Exit(1)
}
