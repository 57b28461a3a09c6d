package export

import (
	"bufio"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// HAR writes a tape's model calls as an HTTP Archive (HAR 1.2), which
// browsers' developer tools, Charles, Fiddler and HAR viewers open: one
// page for the run, one entry per call, at its recorded time, with the
// request and response as the agent and the provider sent them (bodies
// decoded; binary ones in base64). Each entry's _jukebox object names its
// frames. version is jukebox's, for the creator field.
func HAR(w io.Writer, t *tapefmt.Tape, path, version string) error {
	start, err := firstRunStart(t)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	blob := tapeBlobs(t)
	page := fmt.Sprintf("%x", t.ID())
	pending := map[uint64]*harPending{}
	var entries []harEntry
	for f, err := range t.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse) {
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p, err := f.Decode()
		if err != nil {
			return fmt.Errorf("%s: frame %d: %w", path, f.Seq, err)
		}
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			pending[p.Call] = &harPending{req: p, seq: f.Seq, at: t.Created().Add(f.Time)}
		case *tapefmt.LLMResponse:
			pr, ok := pending[p.Call]
			if !ok {
				continue
			}
			delete(pending, p.Call)
			entries = append(entries, harCall(page, start.Upstream, pr, p, f.Seq, blob))
		}
	}
	for _, pr := range pending { // asked, never answered (a torn tape, a crash)
		entries = append(entries, harCall(page, start.Upstream, pr, nil, 0, blob))
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Jukebox.Frame < entries[j].Jukebox.Frame })
	doc := harDoc{Log: harLog{Version: "1.2", Creator: harCreator{Name: "jukebox", Version: version},
		Pages: []harPage{{Started: t.Created().Format(time.RFC3339Nano), ID: page,
			Title: agentName(start) + " (" + path + ")", PageTimings: struct{}{},
			Jukebox: harRun{Tags: start.Tags, User: start.User, Host: start.Host, Git: start.Git}}},
		Entries: entries}}
	if doc.Log.Entries == nil {
		doc.Log.Entries = []harEntry{}
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}

type harPending struct {
	req *tapefmt.LLMRequest
	seq uint64
	at  time.Time
}

// harCall is one entry: a request and its response (nil when none came).
func harCall(page string, up map[string]string, pr *harPending, resp *tapefmt.LLMResponse, respSeq uint64, blob func(tapefmt.Hash) []byte) harEntry {
	req := pr.req
	base := up[req.Provider]
	if base == "" {
		base = "https://" + req.Provider
	}
	u := strings.TrimSuffix(base, "/") + req.Path
	if bu, err := url.Parse(base); err == nil && bu.Path != "" && strings.HasPrefix(req.Path, bu.Path) {
		u = strings.TrimSuffix(base, bu.Path) + req.Path // the path already holds the base's
	}
	if req.Query != "" {
		u += "?" + req.Query
	}
	e := harEntry{PageRef: page, Started: pr.at.Format(time.RFC3339Nano), Cache: struct{}{},
		Request: harRequest{Method: req.Method, URL: u, HTTPVersion: "HTTP/1.1", Cookies: []struct{}{},
			Headers: harHeaders(req.Header), Query: harQuery(req.Query), HeadersSize: -1, BodySize: req.Size},
		Jukebox: harJukebox{Frame: pr.seq, Call: req.Call, Provider: req.Provider}}
	if raw := blob(req.Body); raw != nil {
		text, enc := harText(llmwire.DecodeBody(req.Header, raw).Text)
		e.Request.PostData = &harPostData{MimeType: cmp.Or(req.Header.Get("Content-Type"), "application/json"), Text: text, Encoding: enc}
	}
	if resp == nil {
		e.Response = harResponse{Status: 0, StatusText: "no response recorded", HTTPVersion: "HTTP/1.1", Cookies: []struct{}{},
			Headers: []harNV{}, Content: harContent{MimeType: "x-unknown"}, HeadersSize: -1, BodySize: -1}
		e.Time, e.Timings = 0, harTimings{Send: 0, Wait: -1, Receive: -1}
		return e
	}
	e.Jukebox.ResponseFrame = &respSeq
	e.Response = harResponse{Status: resp.Status, StatusText: http.StatusText(resp.Status), HTTPVersion: "HTTP/1.1",
		Cookies: []struct{}{}, Headers: harHeaders(resp.Header), HeadersSize: -1, BodySize: resp.Size, Error: resp.Error,
		Content: harContent{Size: resp.Size, MimeType: cmp.Or(resp.Header.Get("Content-Type"), "application/octet-stream")}}
	if raw := blob(resp.Body); raw != nil {
		body := llmwire.PayloadBody(resp, raw).Text
		e.Response.Content.Size = int64(len(body))
		e.Response.Content.Text, e.Response.Content.Encoding = harText(body)
	}
	wait, all := ms(resp.Latency), ms(resp.Elapsed)
	e.Time = all
	e.Timings = harTimings{Send: 0, Wait: wait, Receive: max(all-wait, 0)}
	return e
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// harText is a body as HAR holds it: text, or base64 when not UTF-8.
func harText(b []byte) (text, encoding string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

// harHeaders are headers as HAR lists them: name and value pairs, by
// name.
func harHeaders(h http.Header) []harNV { return pairs(h) }

// harQuery is a query string as HAR lists it.
func harQuery(q string) []harNV {
	vals, err := url.ParseQuery(q)
	if err != nil {
		return []harNV{}
	}
	return pairs(vals)
}

// pairs lists a multi-valued map's pairs, by key, values in order.
func pairs(m map[string][]string) []harNV {
	out := []harNV{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		for _, v := range m[k] {
			out = append(out, harNV{Name: k, Value: v})
		}
	}
	return out
}

// The HAR 1.2 document (http://www.softwareishard.com/blog/har-12-spec/);
// fields starting with an underscore are jukebox's, as the spec allows.
type (
	harDoc struct {
		Log harLog `json:"log"`
	}
	harLog struct {
		Version string     `json:"version"`
		Creator harCreator `json:"creator"`
		Pages   []harPage  `json:"pages"`
		Entries []harEntry `json:"entries"`
	}
	harCreator struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	harPage struct {
		Started     string   `json:"startedDateTime"`
		ID          string   `json:"id"`
		Title       string   `json:"title"`
		PageTimings struct{} `json:"pageTimings"`
		Jukebox     harRun   `json:"_jukebox"`
	}
	// harRun is the run's metadata (run.start): its labels, who ran it,
	// where, and the commit and branch of its folder.
	harRun struct {
		Tags map[string]string `json:"tags,omitempty"`
		User string            `json:"user,omitempty"`
		Host string            `json:"host,omitempty"`
		Git  *tapefmt.GitRef   `json:"git,omitempty"`
	}
	harEntry struct {
		PageRef  string      `json:"pageref"`
		Started  string      `json:"startedDateTime"`
		Time     float64     `json:"time"`
		Request  harRequest  `json:"request"`
		Response harResponse `json:"response"`
		Cache    struct{}    `json:"cache"`
		Timings  harTimings  `json:"timings"`
		Jukebox  harJukebox  `json:"_jukebox"`
	}
	harRequest struct {
		Method      string       `json:"method"`
		URL         string       `json:"url"`
		HTTPVersion string       `json:"httpVersion"`
		Cookies     []struct{}   `json:"cookies"`
		Headers     []harNV      `json:"headers"`
		Query       []harNV      `json:"queryString"`
		PostData    *harPostData `json:"postData,omitempty"`
		HeadersSize int          `json:"headersSize"`
		BodySize    int64        `json:"bodySize"`
	}
	harPostData struct {
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Encoding string `json:"_encoding,omitempty"`
	}
	harResponse struct {
		Status      int        `json:"status"`
		StatusText  string     `json:"statusText"`
		HTTPVersion string     `json:"httpVersion"`
		Cookies     []struct{} `json:"cookies"`
		Headers     []harNV    `json:"headers"`
		Content     harContent `json:"content"`
		RedirectURL string     `json:"redirectURL"`
		HeadersSize int        `json:"headersSize"`
		BodySize    int64      `json:"bodySize"`
		Error       string     `json:"_error,omitempty"`
	}
	harContent struct {
		Size     int64  `json:"size"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text,omitempty"`
		Encoding string `json:"encoding,omitempty"`
	}
	harTimings struct {
		Send    float64 `json:"send"`
		Wait    float64 `json:"wait"`
		Receive float64 `json:"receive"`
	}
	harNV struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	harJukebox struct {
		Frame         uint64  `json:"frame"`
		ResponseFrame *uint64 `json:"response_frame,omitempty"`
		Call          uint64  `json:"call"`
		Provider      string  `json:"provider"`
	}
)
