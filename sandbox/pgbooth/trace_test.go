package pgbooth

import (
	"fmt"
	"os"
)

func init() {
	if os.Getenv("PGBOOTH_TRACE") != "" {
		trace = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
}
