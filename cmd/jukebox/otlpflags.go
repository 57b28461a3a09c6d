package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/export"
	"github.com/jukebox-os/jukebox/internal/termtext"
)

// otlpFlags export a run live to an OpenTelemetry receiver as it is
// recorded (record, fork): spans per the GenAI conventions and metrics,
// never holding the agent up.
type otlpFlags struct {
	OTLPEndpoint       string `name:"otlp-endpoint" placeholder:"URL" help:"Export the run live to an OTLP receiver (an OpenTelemetry Collector, Jaeger, Tempo): its base URL, e.g. http://127.0.0.1:4318. OTEL_EXPORTER_OTLP_ENDPOINT, when set, does the same; 'none' turns export off. A receiver that is down or slow never slows the run: what it misses is counted on the tape's run.end."`
	OTLPProtocol       string `name:"otlp-protocol" placeholder:"PROTO" help:"http/protobuf (default) or grpc; default OTEL_EXPORTER_OTLP_PROTOCOL."`
	OTLPHeaders        string `name:"otlp-headers" placeholder:"K=V,..." help:"Headers for every export request (an API key), as OTEL_EXPORTER_OTLP_HEADERS writes them; added to that variable's."`
	OTLPIncludeContent bool   `name:"otlp-include-content" help:"Export prompts, answers, tool arguments and results too (off: they may hold personal data)."`
	OTLPCompat         string `name:"otlp-compat" placeholder:"VOCAB" help:"Also name what the spans say as openinference (Arize Phoenix) or openllmetry (Traceloop) names it, beside the GenAI conventions' names (docs/opentelemetry.md)."`
}

// on reports whether the run is exported live.
func (f otlpFlags) on() bool {
	return f.OTLPEndpoint != "none" && export.Configured(f.OTLPEndpoint, os.Getenv)
}

// validate checks the flags before the agent starts.
func (f otlpFlags) validate() error {
	if !f.on() {
		if f.OTLPEndpoint != "none" && (f.OTLPProtocol != "" || f.OTLPHeaders != "" || f.OTLPIncludeContent || f.OTLPCompat != "") {
			return fmt.Errorf("--otlp-protocol, --otlp-headers, --otlp-include-content and --otlp-compat need --otlp-endpoint URL (or OTEL_EXPORTER_OTLP_ENDPOINT)")
		}
		return nil
	}
	if _, err := export.ParseCompat(f.OTLPCompat); err != nil {
		return fmt.Errorf("--otlp-compat: %w", err)
	}
	_, err := otlpEndpoint(f.endpointURL(), f.OTLPProtocol, f.OTLPHeaders, "--otlp-")
	return err
}

func (f otlpFlags) endpointURL() string {
	if f.OTLPEndpoint == "none" {
		return ""
	}
	return f.OTLPEndpoint
}

// start begins the live export, when one is asked for, and hands it to
// the run's options; the returned func says, after the run, what it sent.
func (f otlpFlags) start(ctx context.Context, o *engine.RunOptions, stderr io.Writer) (after func(*engine.Result), err error) {
	if !f.on() {
		return func(*engine.Result) {}, nil
	}
	ep, err := otlpEndpoint(f.endpointURL(), f.OTLPProtocol, f.OTLPHeaders, "--otlp-")
	if err != nil {
		return nil, err
	}
	l, err := export.NewLive(ctx, ep, export.Options{IncludeContent: f.OTLPIncludeContent, Compat: f.OTLPCompat})
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: %w", err)
	}
	o.Telemetry = l
	where := ep.URL
	if where == "" {
		where = "the OTEL_EXPORTER_OTLP_* endpoint"
	}
	return func(res *engine.Result) {
		switch {
		case res == nil:
		case res.ExportLost > 0 || res.ExportError != "":
			resend := "jukebox export otlp " + termtext.ShellQuote(res.Tape) // the variables name the endpoint
			if ep.URL != "" {
				resend += " --endpoint " + termtext.ShellQuote(ep.URL)
				if ep.Protocol != "" && ep.Protocol != "http/protobuf" { // not the default
					resend += " --protocol " + ep.Protocol
				}
			}
			fmt.Fprintf(stderr, "jukebox: note: the live export to %s lost %d spans (%s); the tape has them all: send it with `%s`\n",
				where, res.ExportLost, res.ExportError, resend)
		default:
			fmt.Fprintf(stderr, "jukebox: exported live to %s: trace %s\n", where, l.TraceID())
			if nt := l.MetricsNotTaken(); nt != "" {
				fmt.Fprintf(stderr, "jukebox: note: the receiver takes no metrics (%s; Jaeger takes traces alone): the traces went, the metrics did not\n", nt)
			}
			// export otlp skips it there: the receiver has it whole.
			if err := noteSent(res.Tape, otlpSentTo{Endpoint: otlpTarget(ep), TraceID: l.TraceID(), Live: true, At: time.Now().UTC()}); err != nil {
				fmt.Fprintf(stderr, "jukebox: note: the record of the live export was not written beside the tape (%v): export otlp would send it again\n", err)
			}
		}
	}, nil
}
