// Package jaegertest runs a real Jaeger v2 for a test: the OTLP receiver
// (HTTP and gRPC) whose traces the test then reads back through Jaeger's
// query API, and whose metrics it scrapes from the Prometheus endpoint the
// Collector inside Jaeger serves (export/testdata/jaeger.yaml). The binary
// comes from testenv.RequireJaeger.
package jaegertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// Jaeger is a running Jaeger.
type Jaeger struct {
	OTLPHTTP   string // base URL of the OTLP/HTTP receiver: http://127.0.0.1:PORT
	OTLPGRPC   string // the OTLP/gRPC receiver: http://127.0.0.1:PORT
	query      string
	prometheus string
	log        *bytes.Buffer
}

// Start runs Jaeger on free ports until the test ends.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := testenv.RequireJaeger(t)
	config := filepath.Join(testenv.RepoRoot(t), "export", "testdata", "jaeger.yaml")
	j, stop, err := Run(bin, config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", j.log)
		}
	})
	return j
}

// Run starts the Jaeger binary bin with config (export/testdata/jaeger.yaml)
// on free ports and waits until it answers; stop ends it. For programs
// that are not tests (bench/proxy). Jaeger binds the ports it is given, so
// a port another process took after it was found free makes it exit:
// then it starts again, on other ports (three times at most).
func Run(bin, config string) (j *Jaeger, stop func(), err error) {
	for range 3 {
		j, stop, err = run(bin, config)
		if err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return j, stop, err
}

func run(bin, config string) (j *Jaeger, stop func(), err error) {
	env := os.Environ()
	ports := map[string]int{}
	for _, name := range []string{"JB_JAEGER_QUERY", "JB_JAEGER_QUERY_GRPC", "JB_OTLP_GRPC", "JB_OTLP_HTTP", "JB_PROMETHEUS"} {
		if ports[name], err = testenv.FreePort(); err != nil {
			return nil, nil, err
		}
		env = append(env, fmt.Sprintf("%s=%d", name, ports[name]))
	}
	j = &Jaeger{
		OTLPHTTP:   fmt.Sprintf("http://127.0.0.1:%d", ports["JB_OTLP_HTTP"]),
		OTLPGRPC:   fmt.Sprintf("http://127.0.0.1:%d", ports["JB_OTLP_GRPC"]),
		query:      fmt.Sprintf("http://127.0.0.1:%d", ports["JB_JAEGER_QUERY"]),
		prometheus: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports["JB_PROMETHEUS"]),
		log:        &bytes.Buffer{},
	}
	cmd := exec.Command(bin, "--config", config)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, j.log, j.log
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start jaeger: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, nil, fmt.Errorf("jaeger exited: %v\n%s", err, j.log)
		default:
		}
		if r, err := http.Get(j.query + "/api/services"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 && reachable(j.OTLPHTTP) && reachable(j.OTLPGRPC) {
				return j, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("jaeger did not answer in 60 s:\n%s", j.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func reachable(u string) bool {
	c, err := net.DialTimeout("tcp", u[len("http://"):], time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Trace is a trace as Jaeger's query API returns it.
type Trace struct {
	ID        string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
}

// Span is one span of a Trace. Times are in microseconds since the epoch.
type Span struct {
	ID         string      `json:"spanID"`
	Name       string      `json:"operationName"`
	References []Reference `json:"references"`
	Start      int64       `json:"startTime"`
	Duration   int64       `json:"duration"`
	Tags       []KeyValue  `json:"tags"`
	Logs       []Log       `json:"logs"`
	Process    string      `json:"processID"`
}

// Reference links a span to its parent.
type Reference struct {
	Type   string `json:"refType"`
	SpanID string `json:"spanID"`
}

// KeyValue is a tag.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Log is a span event.
type Log struct {
	Timestamp int64      `json:"timestamp"`
	Fields    []KeyValue `json:"fields"`
}

// Process is the resource of a trace's spans.
type Process struct {
	Service string     `json:"serviceName"`
	Tags    []KeyValue `json:"tags"`
}

// Parent is the span's parent's id, "" for a root.
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.Type == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag is the value of a tag, as text ("" when the span has none).
func (s Span) Tag(key string) string {
	for _, kv := range s.Tags {
		if kv.Key == key {
			switch v := kv.Value.(type) {
			case string:
				return v
			case float64:
				return strconv.FormatFloat(v, 'f', -1, 64)
			default:
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

// WaitTrace reads the trace with the given id once it holds at least
// spans spans (Jaeger stores what it receives a moment later), failing
// the test after 20 s.
func (j *Jaeger) WaitTrace(t testing.TB, id string, spans int) Trace {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last Trace
	for {
		var out struct {
			Data []Trace `json:"data"`
		}
		if err := getJSON(j.query+"/api/traces/"+id, &out); err == nil && len(out.Data) == 1 {
			last = out.Data[0]
			if len(last.Spans) >= spans {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans after 20 s, want %d", id, len(last.Spans), spans)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Services lists the services Jaeger has traces of.
func (j *Jaeger) Services(t testing.TB) []string {
	t.Helper()
	var out struct {
		Data []string `json:"data"`
	}
	if err := getJSON(j.query+"/api/services", &out); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

// Metrics is the Prometheus text of the metrics received so far.
func (j *Jaeger) Metrics(t testing.TB) string {
	t.Helper()
	r, err := http.Get(j.prometheus)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func getJSON(u string, v any) error {
	r, err := http.Get(u)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		return fmt.Errorf("%s: %s", u, r.Status)
	}
	return json.NewDecoder(r.Body).Decode(v)
}
