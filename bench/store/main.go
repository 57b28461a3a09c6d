// Command store measures the tape store (issue 18) against its peers, in
// one run against a local Versity S3 Gateway:
//
//   - upload: tapestore's Upload of a big tape (verified before, read back
//     after) against a plain multipart PUT of the same bytes through the
//     same client (target: at least 80% of its throughput);
//   - remote open: the turntable's first screen of that tape opened from
//     the store (a fresh cache each run) against the same from the local
//     file, with the round trips counted at the server's door (requests in
//     flight together are one; target: at most 4, and under 3x the local
//     open plus those round trips); the door holds each request -rtt (10 ms)
//     as a network would, so that requests sent together overlap there
//     however loaded this machine is;
//   - verify: verify of the tape's store URL (its bytes of now, fetched
//     whole and checked) against verify of the local file (target: at most
//     2x), and the bytes the cache then holds against the tape's (target:
//     at most 1.1x);
//   - ls: listing a store of 1,000 tapes with their summaries (target:
//     under 3 s).
//
// It needs the gateway binary: eval "$(bash .ci/versitygw.sh)" first.
//
//	go -C bench run ./store [-mb 1024] [-tapes 1000] [-runs 5] [-rtt 10ms]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"gocloud.dev/blob"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/internal/s3test"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/tui"
)

func main() {
	mb := flag.Int("mb", 1024, "size of the big tape, in MB")
	tapes := flag.Int("tapes", 1000, "tapes uploaded to the store that ls lists")
	index := flag.Int("index", 100000, "tapes in the big index ls reads (the uploaded ones and entries written as reindex does)")
	only := flag.String("only", "", "ls: measure ls alone")
	runs := flag.Int("runs", 5, "runs per measurement (median reported)")
	rtt := flag.Duration("rtt", 10*time.Millisecond, "latency the door adds to each request of the remote open, as a network between client and store would")
	flag.Parse()
	if err := run(*mb, *tapes, *index, *runs, *rtt, *only == "ls"); err != nil {
		fmt.Fprintln(os.Stderr, "bench/store:", err)
		os.Exit(1)
	}
}

// counter is a reverse proxy in front of the gateway that counts the
// requests it passes, and notes when each began and ended: requests made
// together (in flight at once) are one round trip.
type counter struct {
	n     atomic.Int64
	h     http.Handler
	delay atomic.Int64 // ns each request waits at the door first
	mu    sync.Mutex
	at    []span // while recording
	on    bool
}

// span is one request's time at the door.
type span struct{ start, end time.Time }

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	t0 := time.Now()
	time.Sleep(time.Duration(c.delay.Load()))
	c.h.ServeHTTP(w, r)
	c.mu.Lock()
	if c.on {
		c.at = append(c.at, span{t0, time.Now()})
	}
	c.mu.Unlock()
}

// record starts noting requests' times; trips stops and returns the
// requests seen and the round trips they took: the longest sequence of
// requests each of which began after the one before it ended (requests
// in flight together count once).
func (c *counter) record() {
	c.mu.Lock()
	c.at, c.on = nil, true
	c.mu.Unlock()
}

func (c *counter) trips() (requests, trips int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	slices.SortFunc(c.at, func(a, b span) int { return a.end.Compare(b.end) })
	var last time.Time
	for _, s := range c.at {
		if s.start.After(last) {
			trips++
			last = s.end
		}
	}
	return len(c.at), trips
}

func run(mb, nTapes, nIndex, runs int, latency time.Duration, lsOnly bool) error {
	bin := os.Getenv("JUKEBOX_VERSITYGW")
	if bin == "" {
		return fmt.Errorf(`JUKEBOX_VERSITYGW is not set: run eval "$(bash .ci/versitygw.sh)" first`)
	}
	root, err := os.MkdirTemp("", "store-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	gw := filepath.Join(root, "gw")
	for _, b := range []string{"tapes", "plain", "many"} {
		if err := os.MkdirAll(filepath.Join(gw, b), 0o755); err != nil {
			return err
		}
	}
	srv, err := s3test.Run(bin, gw)
	if err != nil {
		return err
	}
	defer srv.Stop()
	for _, kv := range srv.Env() {
		k, v, _ := cut(kv)
		os.Setenv(k, v)
	}
	target, _ := url.Parse(srv.Endpoint)
	cnt := &counter{h: httputil.NewSingleHostReverseProxy(target)}
	door := httptest.NewServer(cnt)
	defer door.Close()
	storeURL := func(bucket string) string {
		return "s3://" + bucket + "?endpoint=" + door.URL + "&region=" + srv.Region + "&use_path_style=true"
	}
	ctx := context.Background()
	if lsOnly {
		return lsBench(ctx, root, storeURL("many"), cnt, nTapes, nIndex, runs)
	}

	big := filepath.Join(root, "big.jbx")
	start := time.Now()
	if err := writeTape(big, mb); err != nil {
		return err
	}
	st, _ := os.Stat(big)
	fmt.Printf("tape: %d MB, %d bytes, built in %s\n", mb, st.Size(), time.Since(start).Round(time.Millisecond))

	// Upload against a plain PUT, alternating, each under a prefix of its
	// own (the same tape, so the same key in each).
	var up, put []time.Duration
	plain, err := blob.OpenBucket(ctx, storeURL("plain"))
	if err != nil {
		return err
	}
	defer plain.Close()
	var remoteURL string
	for i := range runs {
		loc, err := tapestore.Parse(fmt.Sprintf("s3://tapes/r%d/?endpoint=%s&region=%s&use_path_style=true", i, door.URL, srv.Region))
		if err != nil {
			return err
		}
		s, err := tapestore.Open(ctx, loc)
		if err != nil {
			return err
		}
		t0 := time.Now()
		u, err := s.Upload(ctx, big, nil)
		if err != nil {
			return err
		}
		up = append(up, time.Since(t0))
		remoteURL = u.URL
		s.Close()
		t0 = time.Now()
		if err := plainPut(ctx, plain, fmt.Sprintf("plain-%d", i), big); err != nil {
			return err
		}
		put = append(put, time.Since(t0))
	}
	mbps := func(d time.Duration) float64 { return float64(st.Size()) / (1 << 20) / d.Seconds() }
	u, p := benchutil.Median(up), benchutil.Median(put)
	fmt.Printf("upload      median %8.0f ms  %6.1f MB/s  (verified while it goes, then proven: the store's CRC32s, or a read-back)\n", benchutil.MS(u), mbps(u))
	fmt.Printf("plain PUT   median %8.0f ms  %6.1f MB/s  (same client, same part size)\n", benchutil.MS(p), mbps(p))
	fmt.Printf("upload throughput / plain PUT: %.0f%%  (target >= 80%%)\n", 100*mbps(u)/mbps(p))

	// The first screen, local and remote (a fresh cache each run), each
	// request to the store held rtt at the door, as a network would: then
	// requests made together overlap there and requests made one after
	// another do not, whatever the load of this machine.
	cnt.delay.Store(int64(latency))
	defer cnt.delay.Store(0)
	local := big
	var lo, re []time.Duration
	var trips []int
	var requests int
	for i := range runs {
		t0 := time.Now()
		if err := firstScreen(local); err != nil {
			return err
		}
		lo = append(lo, time.Since(t0))
		os.Setenv("JUKEBOX_CACHE_DIR", filepath.Join(root, fmt.Sprintf("cache%d", i)))
		cnt.record()
		t0 = time.Now()
		if err := firstScreen(remoteURL); err != nil {
			return err
		}
		re = append(re, time.Since(t0))
		n, tr := cnt.trips()
		trips = append(trips, tr)
		requests = max(requests, n)
	}
	var rtts []time.Duration // with the door's latency
	for range 21 {
		t0 := time.Now()
		if _, err := plain.Attributes(ctx, "plain-0"); err != nil {
			return err
		}
		rtts = append(rtts, time.Since(t0))
	}
	cnt.delay.Store(0)
	l, r, rtt := benchutil.Median(lo), benchutil.Median(re), benchutil.Median(rtts)
	maxTrips := trips[0]
	for _, t := range trips {
		maxTrips = max(maxTrips, t)
	}
	allowed := 3*l + time.Duration(maxTrips)*rtt
	fmt.Printf("first screen, local   median %8.2f ms\n", benchutil.MS(l))
	fmt.Printf("first screen, remote  median %8.2f ms  %d round trips (target <= 4; %d requests, those of a round made together), one round trip %.2f ms (%s at the door)\n", benchutil.MS(r), maxTrips, requests, benchutil.MS(rtt), latency)
	fmt.Printf("remote / (3x local + round trips): %.2f  (target < 1)\n", float64(r)/float64(allowed))

	// verify of the store's tape (its bytes of now, fetched whole in one
	// GET, checked, kept in the cache once) against verify of the local
	// file; and what the cache then holds against the tape's size.
	// Straight to the gateway (the door would add its proxying to the
	// bytes).
	direct := strings.Replace(remoteURL, door.URL, srv.Endpoint, 1)
	var lv, rv []time.Duration
	vcache := filepath.Join(root, "vcache")
	os.Setenv("JUKEBOX_CACHE_DIR", vcache)
	for range runs {
		t0 := time.Now()
		if err := verifyLocal(local); err != nil {
			return err
		}
		lv = append(lv, time.Since(t0))
		t0 = time.Now()
		if err := verifyRemote(ctx, direct); err != nil {
			return err
		}
		rv = append(rv, time.Since(t0))
	}
	ci, err := tapestore.Info()
	if err != nil {
		return err
	}
	lvm, rvm := benchutil.Median(lv), benchutil.Median(rv)
	fmt.Printf("verify, local     median %8.0f ms\n", benchutil.MS(lvm))
	fmt.Printf("verify, store URL median %8.0f ms  (the object read whole each time; its bytes checked the first time, proven the same after)\n", benchutil.MS(rvm))
	fmt.Printf("remote verify / local: %.2f  (target <= 2)\n", float64(rvm)/float64(lvm))
	fmt.Printf("cache after %d verifies: %d bytes for a tape of %d: %.2fx  (target <= 1.1)\n", runs, ci.Bytes, st.Size(), float64(ci.Bytes)/float64(st.Size()))

	return lsBench(ctx, root, storeURL("many"), cnt, nTapes, nIndex, runs)
}

// verifyLocal is jukebox verify's full check of a local tape.
func verifyLocal(path string) error {
	t, err := tapefmt.Open(path)
	if err != nil {
		return err
	}
	defer t.Close()
	_, err = t.Verify(tapefmt.VerifyOptions{Blobs: true})
	return err
}

// verifyRemote is what jukebox verify does with a store URL: fetch the
// object whole; bytes the same as bytes that passed before are not
// checked again, others are, and kept in the cache when they pass.
func verifyRemote(ctx context.Context, url string) error {
	f, err := tapestore.Fetch(ctx, url, false)
	if err != nil {
		return err
	}
	if f.Note() != nil {
		_, err = f.Keep()
		return err
	}
	if err := verifyLocal(f.Path); err != nil {
		f.Drop()
		return err
	}
	if _, err = f.Keep(); err != nil {
		return err
	}
	return f.KeepNote([]byte(`{"ok":true}`))
}

// firstScreen opens the tape in the turntable and draws its first screen.
func firstScreen(path string) error {
	d := tui.New([]string{path}, tui.Options{Remote: tapestore.Opener(false)})
	defer d.Close()
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	if v := d.View(); len(v) < 100 {
		return fmt.Errorf("%s: the first screen is empty: %q", path, v)
	}
	return nil
}

// plainPut sends the file's bytes under key as the store's upload does
// (multipart, the same part size), and nothing else.
func plainPut(ctx context.Context, b *blob.Bucket, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := b.NewWriter(ctx, key, &blob.WriterOptions{BufferSize: 16 << 20})
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// writeTape writes a tape of about mb MB: steps of an LLM call and
// output and a 1 MB file change of incompressible bytes (mb 0: one small
// step).
func writeTape(path string, mb int) error {
	s := tapetest.Steps{Argv: []string{"python", "agent.py"}, Steps: max(mb, 1), Responses: true, Output: true,
		Request: func(i int) []byte {
			return fmt.Appendf(nil, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"step %d"}]}`, i)
		},
		ResponseBody: func(i int) []byte {
			return fmt.Appendf(nil, `{"choices":[{"message":{"content":"done %d"}}],"usage":{"prompt_tokens":10,"completion_tokens":2}}`, i)
		}}
	if mb > 0 {
		s.FileSize = 1 << 20
	}
	_, err := tapetest.WriteSteps(path, s)
	return err
}

func cut(kv string) (string, string, bool) {
	for i := range kv {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// lsBench measures ls of a store: nTapes uploaded (each upload writes
// the store's index), listed by reading every summary object (List, what
// ls did before the index: the peer) and from the index (Index); then an
// index of nIndex tapes (the uploaded ones and entries written as
// reindex writes them), read as ls reads it. Requests are counted at the
// door.
func lsBench(ctx context.Context, root, url string, cnt *counter, nTapes, nIndex, runs int) error {
	loc, err := tapestore.Parse(url)
	if err != nil {
		return err
	}
	s, err := tapestore.Open(ctx, loc)
	if err != nil {
		return err
	}
	defer s.Close()
	t0 := time.Now()
	for i := range nTapes {
		p := filepath.Join(root, fmt.Sprintf("t%04d.jbx", i))
		if err := writeTape(p, 0); err != nil {
			return err
		}
		if _, err := s.Upload(ctx, p, nil); err != nil {
			return err
		}
	}
	fmt.Printf("uploaded %d small tapes in %s\n", nTapes, time.Since(t0).Round(time.Millisecond))
	measure := func(what string, want int, list func() ([]tapestore.Entry, error)) (time.Duration, int, error) {
		var ds []time.Duration
		reqs := 0
		for range runs {
			before := cnt.n.Load()
			t0 := time.Now()
			entries, err := list()
			if err != nil {
				return 0, 0, err
			}
			ds = append(ds, time.Since(t0))
			reqs = int(cnt.n.Load() - before)
			if len(entries) != want || entries[0].Record == nil {
				return 0, 0, fmt.Errorf("%s: %d entries, want %d", what, len(entries), want)
			}
		}
		m := benchutil.Median(ds)
		fmt.Printf("%-34s median %8.0f ms  %6d requests\n", what, benchutil.MS(m), reqs)
		return m, reqs, nil
	}
	index := func() ([]tapestore.Entry, error) {
		e, _, err := s.Index(ctx)
		return e, err
	}
	scan, scanReqs, err := measure(fmt.Sprintf("ls of %d tapes, every summary", nTapes), nTapes, func() ([]tapestore.Entry, error) { return s.List(ctx) })
	if err != nil {
		return err
	}
	idx, idxReqs, err := measure(fmt.Sprintf("ls of %d tapes, the index", nTapes), nTapes, index)
	if err != nil {
		return err
	}
	fmt.Printf("index / every summary: %.2fx the time, %.3fx the requests\n", float64(idx)/float64(scan), float64(idxReqs)/float64(scanReqs))
	if nIndex > nTapes {
		up, _, err := s.Index(ctx)
		if err != nil {
			return err
		}
		more := make([]tapestore.Entry, 0, nIndex-nTapes)
		for i := range nIndex - nTapes {
			e := up[i%len(up)]
			e.Key = fmt.Sprintf("fleet-%07d.jbx", i)
			more = append(more, e)
		}
		if err := s.WriteIndex(ctx, more); err != nil {
			return err
		}
		big, _, err := measure(fmt.Sprintf("ls of %d tapes, the index", nIndex), nIndex, index)
		if err != nil {
			return err
		}
		fmt.Printf("ls of %d tapes through the index: %.0f ms  (target < 3000 ms)\n", nIndex, benchutil.MS(big))
	}
	return nil
}
