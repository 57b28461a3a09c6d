// Package otlpwire sends OpenTelemetry spans and metrics to an OTLP
// receiver over OTLP/HTTP (protobuf) or OTLP/gRPC, without gRPC's Go
// library: a unary gRPC call is an HTTP/2 POST, which net/http makes
// (over TLS, or h2c for an insecure endpoint). Its exporters take the
// OpenTelemetry SDK's spans and metrics and read the standard
// OTEL_EXPORTER_OTLP_* variables as the OpenTelemetry Go exporters do.
package otlpwire

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	HTTP = "http/protobuf"
	GRPC = "grpc"
)

// Config says where and how an exporter sends.
type Config struct {
	// URL is the receiver's base URL: over HTTP /v1/traces or /v1/metrics
	// is appended; over gRPC its scheme and host:port count (http:// for
	// no TLS). "" reads the OTEL_EXPORTER_OTLP_[SIGNAL_]ENDPOINT variables.
	URL      string
	Protocol string // HTTP or GRPC; "" is HTTP
	// Headers go with every request, over the variables' headers.
	Headers map[string]string
	// Timeout bounds each request; 0 is the variables', else 10 s.
	Timeout time.Duration
	// NoRetry sends once; otherwise a refusal that may pass (HTTP 429,
	// 502, 503, 504; gRPC UNAVAILABLE and the like) is retried with
	// backoff (5 s doubling to 30 s, a minute in all), or after the
	// receiver's Retry-After.
	NoRetry bool
	// OnRetry, when set, is told of each refusal that is tried again and
	// of the wait before it (from the exporters' goroutines).
	OnRetry func(err error, wait time.Duration)
	// Getenv reads the variables; nil is os.Getenv.
	Getenv func(string) string
	// OnPartial is told of an answer that rejected part of a request (the
	// OpenTelemetry exporters log it); nil ignores it.
	OnPartial func(error)
}

// signal is one kind of data a sender sends.
type signal struct {
	env      string // TRACES or METRICS
	path     string // over HTTP
	method   string // over gRPC
	rejected string // what a partial success counts
}

var (
	traces  = signal{"TRACES", "/v1/traces", "/opentelemetry.proto.collector.trace.v1.TraceService/Export", "spans"}
	metrics = signal{"METRICS", "/v1/metrics", "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", "data points"}
)

// sender posts encoded requests of one signal to one receiver.
type sender struct {
	cfg     Config
	sig     signal
	url     string
	grpc    bool
	gzip    bool
	headers map[string]string
	timeout time.Duration
	client  *http.Client
	// backoff is the retry schedule: first wait, longest wait, and the
	// time after which no retry starts.
	first, longest, total time.Duration
}

func newSender(cfg Config, sig signal) (*sender, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_" + sig.env + "_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	s := &sender{cfg: cfg, sig: sig, grpc: cfg.Protocol == GRPC, headers: map[string]string{},
		first: 5 * time.Second, longest: 30 * time.Second, total: time.Minute}
	if cfg.Protocol != "" && cfg.Protocol != HTTP && cfg.Protocol != GRPC {
		return nil, fmt.Errorf("protocol %q: want %s or %s", cfg.Protocol, HTTP, GRPC)
	}
	// Where.
	raw, whole := strings.TrimSuffix(cfg.URL, "/"), false
	if raw == "" {
		if v := getenv("OTEL_EXPORTER_OTLP_" + sig.env + "_ENDPOINT"); v != "" {
			raw, whole = v, true
		} else if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
			raw = strings.TrimSuffix(v, "/")
		} else if s.grpc {
			raw = "http://localhost:4317"
		} else {
			raw = "http://localhost:4318"
		}
	}
	if s.grpc {
		if !strings.Contains(raw, "://") { // host:port, as gRPC targets are written
			scheme := "https://"
			if strings.EqualFold(env("INSECURE"), "true") {
				scheme = "http://"
			}
			raw = scheme + raw
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("endpoint %q: want http://HOST:PORT or https://HOST:PORT", raw)
		}
		s.url = u.Scheme + "://" + u.Host + sig.method
	} else {
		if !whole {
			raw += sig.path
		}
		s.url = raw
	}
	u, err := url.Parse(s.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("endpoint %q: want an http:// or https:// URL", s.url)
	}
	// Headers: the variables', then the configuration's.
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_" + sig.env + "_HEADERS"} {
		h, err := ParseHeaders(getenv(name))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		maps.Copy(s.headers, h)
	}
	maps.Copy(s.headers, cfg.Headers)
	// Timeout and compression.
	s.timeout = cfg.Timeout
	if s.timeout <= 0 {
		s.timeout = 10 * time.Second
		if ms, err := strconv.Atoi(env("TIMEOUT")); err == nil && ms > 0 {
			s.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	switch c := env("COMPRESSION"); c {
	case "gzip":
		s.gzip = true
	case "", "none":
	default:
		return nil, fmt.Errorf("compression %q: want gzip or none", c)
	}
	// TLS.
	tlsConf, err := tlsConfig(env)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	if s.grpc {
		var p http.Protocols
		if u.Scheme == "http" {
			p.SetUnencryptedHTTP2(true)
		} else {
			p.SetHTTP2(true)
		}
		tr.Protocols = &p
		tr.ForceAttemptHTTP2 = true
	}
	s.client = &http.Client{Transport: tr}
	return s, nil
}

// ParseHeaders reads "k=v,k=v" as OTEL_EXPORTER_OTLP_HEADERS writes
// headers (values URL-encoded).
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("header %q: want name=value", kv)
		}
		uv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("header %q: %v", k, err)
		}
		out[k] = uv
	}
	return out, nil
}

// tlsConfig reads the certificate variables: a CA bundle the receiver's
// certificate must chain to, and a client certificate and key.
func tlsConfig(env func(string) string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if f := env("CERTIFICATE"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("certificate %s: no PEM certificate in it", f)
		}
		c.RootCAs = pool
	}
	cert, key := env("CLIENT_CERTIFICATE"), env("CLIENT_KEY")
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("client certificate: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY go together")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// retryable is a refusal that may pass: after, when the receiver said
// when to come back.
type retryable struct {
	err   error
	after time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// send posts one request, retrying as the configuration says.
func (s *sender) send(ctx context.Context, body []byte) error {
	payload, err := s.payload(body)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.total)
	wait := s.first
	for {
		err := s.post(ctx, payload)
		var r *retryable
		if err == nil || s.cfg.NoRetry || !errors.As(err, &r) {
			return err
		}
		d := wait + rand.N(wait/2+1) // jitter
		if r.after > 0 {
			d = r.after
		}
		if time.Now().Add(d).After(deadline) {
			return fmt.Errorf("%w (gave up retrying after %s)", err, s.total)
		}
		if s.cfg.OnRetry != nil {
			s.cfg.OnRetry(err, d)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%v while waiting to retry)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, s.longest)
	}
}

// payload is the body as sent: compressed if asked, framed for gRPC.
func (s *sender) payload(body []byte) ([]byte, error) {
	if s.gzip {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		body = b.Bytes()
	}
	if !s.grpc {
		return body, nil
	}
	framed := make([]byte, 5, 5+len(body))
	if s.gzip {
		framed[0] = 1
	}
	binary.BigEndian.PutUint32(framed[1:], uint32(len(body)))
	return append(framed, body...), nil
}

func (s *sender) post(ctx context.Context, payload []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "jukebox-otlp")
	if s.grpc {
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("TE", "trailers")
		req.Header.Set("grpc-timeout", strconv.FormatInt(s.timeout.Milliseconds(), 10)+"m")
		if s.gzip {
			req.Header.Set("grpc-encoding", "gzip")
		}
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		if s.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return &retryable{err: fmt.Errorf("%s: %w", s.url, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return &retryable{err: fmt.Errorf("%s: reading the answer: %w", s.url, err)}
	}
	if s.grpc {
		return s.grpcAnswer(resp, body)
	}
	return s.httpAnswer(resp, body)
}

func (s *sender) httpAnswer(resp *http.Response, body []byte) error {
	if resp.StatusCode/100 == 2 {
		s.partial(body)
		return nil
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	err := fmt.Errorf("%s: %s: %s", s.url, resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &retryable{err: err, after: retryAfter(resp.Header.Get("Retry-After"))}
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return &notTaken{err}
	}
	return err
}

// notTaken is a receiver's answer that nothing is served where the
// signal is sent: HTTP 404, 405 or 501 at its path, gRPC UNIMPLEMENTED
// (Jaeger takes traces on /v1/traces and has no /v1/metrics).
type notTaken struct{ err error }

func (e *notTaken) Error() string { return e.err.Error() }
func (e *notTaken) Unwrap() error { return e.err }

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// grpcRetryable reports whether a gRPC status code may pass, as the
// OTLP specification lists them: CANCELLED, DEADLINE_EXCEEDED, ABORTED,
// OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS (RESOURCE_EXHAUSTED only with
// retry information, which is not read).
func grpcRetryable(code int) bool {
	switch code {
	case 1, 4, 10, 11, 14, 15:
		return true
	}
	return false
}

var grpcCodes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
	"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// GRPCError is a gRPC call's refusal: its status code and message.
type GRPCError struct {
	URL     string
	Code    int
	Message string
}

func (e *GRPCError) Error() string {
	name := "code " + strconv.Itoa(e.Code)
	if e.Code >= 0 && e.Code < len(grpcCodes) {
		name = grpcCodes[e.Code]
	}
	if e.Message == "" {
		return fmt.Sprintf("%s: gRPC status %s", e.URL, name)
	}
	return fmt.Sprintf("%s: gRPC status %s: %s", e.URL, name, e.Message)
}

func (s *sender) grpcAnswer(resp *http.Response, body []byte) error {
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("%s: %s (not a gRPC answer)", s.url, resp.Status)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return &retryable{err: err}
		case http.StatusNotFound, http.StatusNotImplemented:
			return &notTaken{err}
		}
		return err
	}
	// The status is in the trailers, or in the headers of an answer
	// that is only trailers.
	st, msg := resp.Trailer.Get("grpc-status"), resp.Trailer.Get("grpc-message")
	if st == "" {
		st, msg = resp.Header.Get("grpc-status"), resp.Header.Get("grpc-message")
	}
	if st == "" {
		return &retryable{err: fmt.Errorf("%s: the answer has no grpc-status", s.url)}
	}
	code, err := strconv.Atoi(st)
	if err != nil {
		return fmt.Errorf("%s: grpc-status %q", s.url, st)
	}
	if code != 0 {
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m
		}
		e := &GRPCError{URL: s.url, Code: code, Message: msg}
		if grpcRetryable(code) {
			return &retryable{err: e}
		}
		if code == 12 { // UNIMPLEMENTED: no such service
			return &notTaken{e}
		}
		return e
	}
	if len(body) >= 5 {
		n := binary.BigEndian.Uint32(body[1:5])
		if msgBody := body[5:]; uint32(len(msgBody)) >= n {
			msgBody = msgBody[:n]
			if body[0] == 1 {
				r, err := gzip.NewReader(bytes.NewReader(msgBody))
				if err != nil {
					return nil
				}
				if msgBody, err = io.ReadAll(io.LimitReader(r, 4<<20)); err != nil {
					return nil
				}
			}
			s.partial(msgBody)
		}
	}
	return nil
}

// partial tells of an answer's partial success.
func (s *sender) partial(body []byte) {
	if s.cfg.OnPartial == nil {
		return
	}
	if p, ok := decodePartial(body); ok {
		s.cfg.OnPartial(fmt.Errorf("%s: the receiver rejected %d %s: %s", s.url, p.rejected, s.sig.rejected, p.message))
	}
}

// close lets the sender's idle connections go.
func (s *sender) close() { s.client.CloseIdleConnections() }
