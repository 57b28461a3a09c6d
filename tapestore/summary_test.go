package tapestore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestStoredSummaryKeepsNoCost: the summary object holds the run's tokens
// by model and no cost, and ls of the store works the cost out when it
// reads it, the same way as ls of the tape here (so a price changed since
// the upload shows in both alike).
func TestStoredSummaryKeepsNoCost(t *testing.T) {
	s, root := folderStore(t)
	key, got, want := storedAndHere(t, s, copyTape(t, t.TempDir(), "run.jbx"))
	raw, err := os.ReadFile(filepath.Join(root, summaryKey(key)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"cost_usd"`) || !strings.Contains(string(raw), `"models"`) {
		t.Errorf("the summary object freezes a cost or keeps no tokens by model:\n%s", raw)
	}
	if g, w := jsonOf(got), jsonOf(want); g != w {
		t.Errorf("ls of the store: %s\nls here: %s", g, w)
	}
	if want.Calls == 0 || want.Cost == 0 {
		t.Errorf("the sample tape has no priced calls: %+v", want)
	}
}

// TestStoredForkSummary: ls of a store shows what a fork spent as ls of
// its tape here does: the store keeps the tokens of the fork's own calls,
// and works both costs out when it reads them.
func TestStoredForkSummary(t *testing.T) {
	s, _ := folderStore(t)
	tape := filepath.Join(t.TempDir(), "fork.jbx")
	tapetest.WriteCalls(t, tape, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeFork, Parent: &tapefmt.ParentRef{Tape: "ab", Frame: 3, Call: 1}},
		"demo-large", "demo-small", "demo-large")
	_, got, want := storedAndHere(t, s, tape)
	if want.Fork == nil || !reflect.DeepEqual(got.Fork, want.Fork) || got.Fork.Spent <= 0 || got.Fork.Spent >= got.Cost {
		t.Errorf("a fork's share in ls of the store: %+v\nhere: %+v (cost $%v)", got.Fork, want.Fork, want.Cost)
	}
}

// storedAndHere uploads tape to s and returns its key, the summary ls of
// the store shows of it, and the one ls of the tape here shows.
func storedAndHere(t *testing.T, s *Store, tape string) (key string, got, want timeline.Summary) {
	t.Helper()
	ctx := context.Background()
	up, err := s.Upload(ctx, tape, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := RecordOf(ctx, up.URL)
	if err != nil || r == nil || r.Summary == nil {
		t.Fatalf("record: %+v, %v", r, err)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	want, err = timeline.Summarize(up.URL, tp)
	if err != nil {
		t.Fatal(err)
	}
	return up.Key, r.Summary.Timeline(up.URL), want
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestOldStoredSummaryReads: a summary object stored before the store kept
// tokens by model (a timeline.Summary, with the cost of the upload) still
// reads, with that cost.
func TestOldStoredSummaryReads(t *testing.T) {
	old := `{"id":"ab","head":"cd","size":9,"verified":true,"uploaded":"2026-01-02T03:04:05Z",
	"summary":{"path":"","name":"run","started":"2026-01-02T03:00:00Z","duration_ns":5,"frames":7,
	"steps":2,"llm_calls":3,"tokens":{"input":10,"output":4},"cost_usd":0.25,
	"unpriced_models":["mystery"],"sealed":false}}`
	var r Record
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	got := r.Summary.Timeline("s3://b/run.jbx")
	if got.Cost != 0.25 || !reflect.DeepEqual(got.Unpriced, []string{"mystery"}) || got.Calls != 3 || got.Name != "run" || got.Usage.Output != 4 {
		t.Errorf("old summary read as %+v", got)
	}
}
