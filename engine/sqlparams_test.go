package engine

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestSQLParamsKeepWholeNumbers: a whole number past int64 (a Python int,
// 2**70) reaches PostgreSQL whole, as a numeric; it went as a float64,
// and 1180591620717411303424 was stored as 1180591620717411300000 without
// a word. Whole numbers within int64 go as int64, others as float64.
func TestSQLParamsKeepWholeNumbers(t *testing.T) {
	args, err := sqlParams([]json.RawMessage{json.RawMessage(`1180591620717411303424`), json.RawMessage(`-12345678901234567890123`),
		json.RawMessage(`9223372036854775807`), json.RawMessage(`12.5`), json.RawMessage(`"text"`)})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"1180591620717411303424", "-12345678901234567890123"} {
		n, ok := args[i].(pgtype.Numeric)
		if !ok || !n.Valid || n.Exp != 0 || n.Int.String() != want {
			t.Errorf("params[%d] = %#v, want the numeric %s", i, args[i], want)
		}
	}
	if args[2] != int64(9223372036854775807) || args[3] != 12.5 || args[4] != "text" {
		t.Errorf("params = %#v", args[2:])
	}
}
