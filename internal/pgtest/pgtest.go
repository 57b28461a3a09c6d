// Package pgtest finds the scratch PostgreSQL server that tests use.
//
// The test command starts one with `eval "$(bash .ci/postgres.sh)"`, which
// sets JUKEBOX_PG_DSN. Tests that need it skip only when the variable is
// unset (through internal/testenv, so JUKEBOX_REQUIRE_ALL=1 makes that a
// failure); when it is set but the server does not answer, they fail.
package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// envDSN names the environment variable holding the server's DSN.
const envDSN = testenv.EnvPostgresDSN

// DSN returns the scratch server's DSN, or skips the test when none is
// configured (testenv.RequirePostgres).
func DSN(t testing.TB) string {
	t.Helper()
	return testenv.RequirePostgres(t)
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
		t.Fatalf("%s is set but the server is unreachable: %v", envDSN, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
