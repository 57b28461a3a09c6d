package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStepsNumberedAlike: verify counted the step.commit frames (5) where
// ls and the turntable count 6 (the step the run ended in too), and cost
// --by step numbered steps from 0 where the turntable's step table and
// bisect number them from 1. They agree now.
func TestStepsNumberedAlike(t *testing.T) {
	tape := filepath.Join(sampleTapes(t), "agent-run.jbx")
	out, _ := wantCode(t, ExitOK, "ls", "--json", tape)
	var ls []struct{ Steps int }
	must(t, json.Unmarshal([]byte(out), &ls))
	out, _ = wantCode(t, ExitOK, "verify", "--json", tape)
	var v []struct{ Steps int }
	must(t, json.Unmarshal([]byte(out), &v))
	if len(ls) != 1 || len(v) != 1 || ls[0].Steps != v[0].Steps || ls[0].Steps < 2 {
		t.Fatalf("steps: ls %+v, verify %+v", ls, v)
	}
	out, _ = wantCode(t, ExitOK, "cost", "--by", "step", "--json", tape)
	var bill struct{ Rows []struct{ Key string } }
	must(t, json.Unmarshal([]byte(out), &bill))
	for _, r := range bill.Rows {
		if n, err := strconv.Atoi(r.Key); err != nil || n < 1 || n > ls[0].Steps {
			t.Errorf("cost --by step: step %q, want 1 to %d", r.Key, ls[0].Steps)
		}
	}
	if len(bill.Rows) == 0 || bill.Rows[0].Key != "1" {
		t.Errorf("cost --by step: rows %+v, want the first numbered 1", bill.Rows)
	}
}
