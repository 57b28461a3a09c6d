package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/export"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ExportCmd writes tapes in other tools' formats.
type ExportCmd struct {
	Otlp    ExportOTLPCmd    `cmd:"" name:"otlp" help:"Send tapes to an OpenTelemetry receiver (Collector, Jaeger, Tempo, Langfuse, Phoenix): a trace per tape with GenAI spans and metrics, at the recorded times."`
	Har     ExportHARCmd     `cmd:"" name:"har" help:"Write a tape's model calls as an HTTP Archive (HAR 1.2) for browser dev tools and HAR viewers."`
	JSON    ExportJSONCmd    `cmd:"" name:"json" help:"Write a whole tape (frames, payloads, blobs) as one JSON document."`
	Parquet ExportParquetCmd `cmd:"" name:"parquet" help:"Write tapes as Parquet tables, a row per model call and per run, in a Hive-partitioned layout (calls/date=YYYY-MM-DD/, runs/date=.../) that DuckDB, Athena, Spark, Trino and ClickHouse query where they lie (docs/export.md)."`
}

// ExportOTLPCmd sends tapes over OTLP.
type ExportOTLPCmd struct {
	Tapes          []string      `arg:"" name:"tape" type:"tapes" help:"Tapes, folders of tapes, or tapes in a store (s3://BUCKET/PREFIX/NAME.jbx)."`
	Endpoint       string        `placeholder:"URL" help:"The receiver's base URL (/v1/traces and /v1/metrics are appended over HTTP), e.g. http://127.0.0.1:4318; default OTEL_EXPORTER_OTLP_ENDPOINT."`
	Protocol       string        `placeholder:"PROTO" help:"http/protobuf (default; also 'http') or grpc (e.g. --endpoint http://127.0.0.1:4317); default OTEL_EXPORTER_OTLP_PROTOCOL."`
	Headers        string        `placeholder:"K=V,..." help:"Headers for every request (an API key), as OTEL_EXPORTER_OTLP_HEADERS writes them (values URL-encoded); added to that variable's."`
	IncludeContent bool          `help:"Also export what was said: prompts, answers, tool arguments and results (off: they may hold personal data)."`
	Service        string        `placeholder:"NAME" help:"The service.name of the spans (default: each run's name)."`
	Compat         string        `name:"compat" placeholder:"VOCAB" help:"Also name what the spans say as openinference (Arize Phoenix: openinference.span.kind, llm.token_count.*, llm.input_messages.*) or openllmetry (Traceloop: llm.request.type, gen_ai.prompt.*, traceloop.span.kind) names it, beside the GenAI conventions' names (docs/opentelemetry.md)."`
	Timeout        time.Duration `default:"10s" help:"Bound on each request to the receiver; refused requests are retried for up to a minute."`
	All            bool          `help:"Send tapes the receiver has whole already (sent before, or live with nothing lost: the tape's sidecar otlp.json says so); without it they are skipped, as a receiver keeps every copy of a span."`
	JSON           bool          `help:"Print what was sent as JSON."`
}

// Validate checks the endpoint, protocol and headers before anything is read.
func (c *ExportOTLPCmd) Validate() error {
	if !export.Configured(c.Endpoint, os.Getenv) {
		return fmt.Errorf("no receiver: give --endpoint URL (e.g. http://127.0.0.1:4318) or set OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if _, err := export.ParseCompat(c.Compat); err != nil {
		return fmt.Errorf("--compat: %w", err)
	}
	_, err := otlpEndpoint(c.Endpoint, c.Protocol, c.Headers, "--")
	return err
}

// otlpEndpoint reads the endpoint flags (named with prefix: "--" or
// "--otlp-") into an export.Endpoint.
func otlpEndpoint(url, proto, headers, prefix string) (export.Endpoint, error) {
	var ep export.Endpoint
	if url != "" {
		if err := export.CheckURL(url); err != nil {
			return ep, fmt.Errorf("%sendpoint: %w", prefix, err)
		}
	}
	p, err := export.ProtocolFrom(proto, os.Getenv)
	if err != nil {
		return ep, fmt.Errorf("%sprotocol: %w", prefix, err)
	}
	h, err := export.ParseHeaders(headers)
	if err != nil {
		return ep, fmt.Errorf("%sheaders: %w", prefix, err)
	}
	return export.Endpoint{URL: url, Protocol: p, Headers: h}, nil
}

// Run sends each tape and says where its trace is.
func (c *ExportOTLPCmd) Run(ctx context.Context, env *Env) error {
	paths, err := expandTapes(c.Tapes)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no tapes in %s", strings.Join(c.Tapes, ", "))
	}
	ep, err := otlpEndpoint(c.Endpoint, c.Protocol, c.Headers, "--")
	if err != nil {
		return err
	}
	ep.Timeout = c.Timeout
	where := ep.URL
	if where == "" {
		where = "the OTEL_EXPORTER_OTLP_* endpoint"
	}
	var retrying sync.Once // a receiver that is down: a minute of retries, said once rather than silent
	ep.OnRetry = func(err error, _ time.Duration) {
		retrying.Do(func() {
			fmt.Fprintf(env.Stderr, "jukebox: %s did not take a request (%s): trying again, for up to a minute (Ctrl-C stops)\n",
				where, termtext.Sanitize(err.Error()))
		})
	}
	target := otlpTarget(ep)
	var skipped []string
	if !c.All {
		send := paths[:0:0]
		for _, p := range paths {
			if was := sentBefore(p, target); was != nil {
				skipped = append(skipped, p)
				if !c.JSON {
					how := "sent " + was.At.Local().Format(time.DateTime)
					if was.Live {
						how = "exported live with nothing lost"
					}
					fmt.Fprintf(env.Stderr, "jukebox: %s: skipped: %s has its trace %s whole (%s); --all sends it again\n", p, where, was.TraceID, how)
				}
				continue
			}
			send = append(send, p)
		}
		paths = send
	}
	var sent export.Sent
	noMetrics := false
	if len(paths) > 0 {
		sent, err = export.OTLP(ctx, paths, ep, export.Options{IncludeContent: c.IncludeContent, Service: c.Service, Remote: env.remote(), Compat: c.Compat},
			func(st export.SentTape) {
				if !c.JSON {
					fmt.Fprintf(env.Stderr, "jukebox: %s: trace %s, %d spans\n", st.Path, st.TraceID, st.Spans)
				}
				if st.MetricsNotTaken != "" && !noMetrics {
					noMetrics = true // said once: the same receiver answers alike for every tape
					fmt.Fprintf(env.Stderr, "jukebox: note: the receiver takes no metrics (%s; Jaeger takes traces alone): the traces went, the metrics did not\n", st.MetricsNotTaken)
				}
			})
	}
	if err == nil && sent.Failed == 0 {
		for _, st := range sent.Tapes {
			if nerr := noteSent(st.Path, otlpSentTo{Endpoint: target, TraceID: st.TraceID, Spans: st.Spans, At: time.Now().UTC()}); nerr != nil {
				fmt.Fprintf(env.Stderr, "jukebox: %s: the record of what was sent was not written (%v): a later export sends it again\n", st.Path, nerr)
			}
		}
	}
	for _, u := range sent.Unread {
		if !c.JSON {
			fmt.Fprintf(env.Stderr, "jukebox: %s: not sent: %v\n", u.Path, u.Err)
		}
	}
	if c.JSON {
		if jerr := writeJSON(env.Stdout, exportReport(sent, skipped, where, err)); jerr != nil {
			return jerr
		}
	} else if err == nil {
		noun := "tapes"
		if len(sent.Tapes) == 1 {
			noun = "tape"
		}
		fmt.Fprintf(env.Stdout, "exported %d %s, %d spans, to %s", len(sent.Tapes), noun, sent.Spans, where)
		if len(skipped) > 0 {
			fmt.Fprintf(env.Stdout, " (%d skipped: the receiver has them whole; --all sends them again)", len(skipped))
		}
		fmt.Fprintln(env.Stdout)
	}
	if err == nil && len(sent.Unread) > 0 {
		return withCode(ExitBadTape, fmt.Errorf("export otlp: %d of %d tapes do not read whole and were not sent (named above); the rest were",
			len(sent.Unread), len(paths)))
	}
	return err
}

// exportReport is export otlp's --json.
func exportReport(sent export.Sent, skipped []string, where string, err error) any {
	type tape struct {
		Path            string `json:"path"`
		TraceID         string `json:"trace_id"`
		Spans           int    `json:"spans"`
		MetricsNotTaken string `json:"metrics_not_taken,omitempty"`
	}
	type unread struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	}
	out := struct {
		Endpoint string   `json:"endpoint"`
		Tapes    []tape   `json:"tapes"`
		Skipped  []string `json:"skipped"`
		Unread   []unread `json:"unread,omitempty"`
		Spans    int64    `json:"spans_sent"`
		Failed   int64    `json:"spans_failed"`
		Error    string   `json:"error,omitempty"`
	}{Endpoint: where, Tapes: []tape{}, Skipped: append([]string{}, skipped...), Spans: sent.Spans, Failed: sent.Failed}
	for _, t := range sent.Tapes {
		out.Tapes = append(out.Tapes, tape{t.Path, t.TraceID, t.Spans, t.MetricsNotTaken})
	}
	for _, u := range sent.Unread {
		out.Unread = append(out.Unread, unread{u.Path, u.Err.Error()})
	}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// ExportHARCmd writes a HAR file.
type ExportHARCmd struct {
	Tape   string `arg:"" type:"tape" help:"The tape (a file, or a tape in a store)."`
	Output string `short:"o" type:"path" placeholder:"FILE" help:"Write here (never over an existing file) instead of stdout."`
}

// Run writes the archive.
func (c *ExportHARCmd) Run(env *Env) error {
	return exportTo(env, c.Tape, c.Output, func(w io.Writer, t *tapefmt.Tape) error {
		return export.HAR(w, t, c.Tape, version)
	})
}

// ExportJSONCmd writes a tape as JSON.
type ExportJSONCmd struct {
	Tape   string `arg:"" type:"tape" help:"The tape (a file, or a tape in a store)."`
	Output string `short:"o" type:"path" placeholder:"FILE" help:"Write here (never over an existing file) instead of stdout."`
}

// Run writes the document.
func (c *ExportJSONCmd) Run(env *Env) error {
	return exportTo(env, c.Tape, c.Output, func(w io.Writer, t *tapefmt.Tape) error {
		return export.JSON(w, t, c.Tape)
	})
}

// exportTo opens a tape and writes it with write, to stdout or to a new
// file, which a failure removes: nothing half written is left behind.
func exportTo(env *Env, path, out string, write func(io.Writer, *tapefmt.Tape) error) error {
	t, err := env.openTape(path)
	if err != nil {
		return err
	}
	defer t.Close()
	if out == "" {
		return write(env.Stdout, t)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err = write(f, t); err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err != nil {
		os.Remove(out)
		return err
	}
	fmt.Fprintf(env.Stderr, "jukebox: wrote %s\n", out)
	return nil
}
