// Package pgtest finds the scratch PostgreSQL server that tests use.
//
// The test command starts one with `eval "$(bash .ci/postgres.sh)"`, which
// sets JUKEBOX_PG_DSN. Tests that need it skip, loudly, only when the
// variable is unset; when it is set but the server does not answer, they
// fail, so CI cannot pass by skipping.
package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable holding the server's DSN.
const EnvDSN = "JUKEBOX_PG_DSN"

// DSN returns the scratch server's DSN, or skips the test when none is
// configured.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := lookupEnv(EnvDSN)
	if dsn == "" {
		t.Skipf("SKIP (no PostgreSQL): %s is unset; run `eval \"$(bash .ci/postgres.sh)\"` first", EnvDSN)
	}
	return dsn
}

// Connect opens a connection to the scratch server (closed when the test
// ends), skipping when none is configured and failing when it is
// configured but unreachable.
func Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	dsn := DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s is set but the server is unreachable: %v", EnvDSN, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
