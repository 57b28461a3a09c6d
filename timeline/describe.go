package timeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Describe returns a one-line summary of a decoded payload, as the timeline
// and `jukebox show` print it.
func Describe(p tapefmt.Payload) string {
	switch p := p.(type) {
	case *tapefmt.RunStart:
		return "start " + OneLine(strings.Join(p.Argv, " "), 60)
	case *tapefmt.RunEnd:
		if p.Signal != "" {
			return "end " + p.Signal + reason(string(p.Reason))
		}
		return fmt.Sprintf("end exit %d%s", p.ExitCode, reason(string(p.Reason)))
	case *tapefmt.Step:
		return fmt.Sprintf("step %d", p.Step)
	case *tapefmt.LLMRequest:
		return describeRequest(p)
	case *tapefmt.LLMResponse:
		return describeResponse(p)
	case *tapefmt.ToolCall:
		return fmt.Sprintf("%s(%s)", p.Name, OneLine(string(p.Args), 50))
	case *tapefmt.ToolResult:
		return describeResult(p)
	case *tapefmt.MCPMessage:
		s := describeMCP(p)
		if p.Call != nil {
			s += fmt.Sprintf(" (the model's call %s, frame %d)", OneLine(p.Call.ID, 24), p.Call.Frame)
		}
		if p.Problem != "" {
			s += " [" + OneLine(p.Problem, 40) + "]"
		}
		return s
	case *tapefmt.FileChange:
		if p.Op == tapefmt.OpRefused {
			return fmt.Sprintf("refused %s %s: %s", p.Refused, p.Where(), p.Reason)
		}
		return describeFile(p)
	case *tapefmt.Snapshot:
		return fmt.Sprintf("workspace at the start: %d paths (part %d of %d)", len(p.Files), p.Part, p.Parts)
	case *tapefmt.Output:
		return fmt.Sprintf("fd%d %s", p.Fd, OneLine(string(p.Data), 60))
	case *tapefmt.HTTPRequest, *tapefmt.HTTPResponse, *tapefmt.NetConn:
		return describeHTTP(p)
	}
	return describeRest(p)
}

// describeHTTP is the line of a plain HTTP request, its answer, or a
// connection (a WebSocket session, plain TCP).
func describeHTTP(p tapefmt.Payload) string {
	switch p := p.(type) {
	case *tapefmt.HTTPRequest:
		u := p.Scheme + "://" + p.Host + p.Path
		if p.Query != "" {
			u += "?" + p.Query
		}
		s := fmt.Sprintf("#%d %s %s", p.ID, p.Method, OneLine(u, 80))
		if p.Size > 0 {
			s += fmt.Sprintf(" (%d bytes)", p.Size)
		}
		return s
	case *tapefmt.HTTPResponse:
		if p.Error != "" {
			return fmt.Sprintf("#%d error: %s", p.ID, OneLine(p.Error, 50))
		}
		s := fmt.Sprintf("#%d %d %d bytes", p.ID, p.Status, p.Size)
		if len(p.Chunks) > 1 {
			s += fmt.Sprintf(", %d chunks", len(p.Chunks))
		}
		return s
	case *tapefmt.NetConn:
		where := p.Addr
		if p.Host != "" && !strings.HasPrefix(p.Addr, p.Host) {
			where = p.Host + " (" + p.Addr + ")"
		}
		if p.Refused {
			return fmt.Sprintf("%s to %s refused", p.Proto, where)
		}
		s := fmt.Sprintf("%s %s: %d bytes sent, %d received", p.Proto, where, p.UpSize, p.DownSize)
		if p.Error != "" {
			s += " (" + OneLine(p.Error, 40) + ")"
		}
		return s
	}
	return ""
}

func describeRest(p tapefmt.Payload) string {
	switch p := p.(type) {
	case *tapefmt.Clock:
		s := "clock " + time.Unix(0, p.Unix).UTC().Format("2006-01-02 15:04:05.000000 UTC")
		if p.Source != "" {
			s += " (" + p.Source + ")"
		}
		return s
	case *tapefmt.Seed:
		return fmt.Sprintf("seed %d", p.Seed)
	case *tapefmt.TxBegin:
		switch {
		case p.Confined == nil:
			return fmt.Sprintf("begin %s (%s)", p.Tx, p.Mode)
		case *p.Confined:
			return fmt.Sprintf("begin %s (%s, confined)", p.Tx, p.Mode)
		}
		return fmt.Sprintf("begin %s (%s, NOT confined)", p.Tx, p.Mode)
	case *tapefmt.TxCommit:
		return fmt.Sprintf("commit %s, %s%s", p.Tx, termtext.Count(p.Changes, "change", "changes"), sqlText(p.SQL))
	case *tapefmt.TxRollback:
		return fmt.Sprintf("rollback %s%s%s", p.Tx, sqlText(p.SQL), reason(p.Reason))
	case *tapefmt.BreakerTrip:
		return fmt.Sprintf("tripped %s: %s%s", p.Rule, p.Reason, evidenceText(p.Evidence))
	case *tapefmt.AgentTurn:
		who := strings.TrimSpace(p.Agent + " " + p.Role)
		extra := ""
		if p.Model != "" {
			extra += " " + p.Model
		}
		if p.Reported() > 0 {
			extra += fmt.Sprintf(" $%.4f", p.Reported())
		}
		return fmt.Sprintf("turn %d %s%s %s", p.Turn, who, extra, OneLine(p.Text, 50))
	case *tapefmt.Marker:
		return "marker " + p.Label
	case *tapefmt.NetRefused:
		if p.Host != "" { // the name the agent asked the booth's resolver for
			return fmt.Sprintf("refused connection to %s (%s, %s)", p.Host, p.Addr, p.Errno)
		}
		return fmt.Sprintf("refused connection to %s (%s)", p.Addr, p.Errno)
	case *tapefmt.Control:
		return fmt.Sprintf("%s %s %d %s", p.Method, p.Path, p.Status, OneLine(string(p.Request), 50))
	case tapefmt.Unknown:
		return OneLine(string(p.JSON), 60)
	}
	return fmt.Sprintf("%T", p)
}

func describeRequest(p *tapefmt.LLMRequest) string {
	s := fmt.Sprintf("#%d %s %s%s %s", p.Call, p.Method, p.Host, p.Path, p.Model)
	if p.Stream {
		s += " stream"
	}
	return s
}

func describeResponse(p *tapefmt.LLMResponse) string {
	if p.Error != "" {
		return fmt.Sprintf("#%d error: %s", p.Call, OneLine(p.Error, 50))
	}
	s := fmt.Sprintf("#%d %d", p.Call, p.Status)
	if len(p.Chunks) > 0 {
		s += fmt.Sprintf(" %d chunks", len(p.Chunks))
	}
	if p.Usage.Total() > 0 {
		s += fmt.Sprintf(" %d→%d tok", p.Usage.Input, p.Usage.Output)
	}
	return s
}

func describeResult(p *tapefmt.ToolResult) string {
	s := p.ID + " → " + OneLine(string(p.Result), 50)
	if p.IsError {
		s += " (error)"
	}
	return s
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// evidenceText names a trip's evidence frames: " (frames 3, 4, 9)".
func evidenceText(frames []uint64) string {
	if len(frames) == 0 {
		return ""
	}
	return " (frames " + FrameList(frames) + ")"
}

// FrameList lists frame numbers: "3, 4, 9".
func FrameList(frames []uint64) string {
	parts := make([]string, len(frames))
	for i, f := range frames {
		parts[i] = fmt.Sprint(f)
	}
	return strings.Join(parts, ", ")
}

// describeMCP says what an MCP message is, as a tool call reads: the
// server, which way, and the method with the tool and its arguments, or
// the result's text.
func describeMCP(p *tapefmt.MCPMessage) string {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Tool string          `json:"tool"`      // an outbox entry
		Args json.RawMessage `json:"arguments"` // an outbox entry
		Argv []string        `json:"argv"`      // a start
	}
	if json.Unmarshal(p.Message, &m) != nil {
		return fmt.Sprintf("%s %s %s", p.Server, p.Direction, OneLine(string(p.Message), 50))
	}
	switch {
	case p.Direction == tapefmt.MCPStart:
		return fmt.Sprintf("%s start %s", p.Server, OneLine(strings.Join(m.Argv, " "), 60))
	case p.Direction == tapefmt.MCPOutbox:
		return fmt.Sprintf("%s outbox %s(%s)", p.Server, m.Tool, OneLine(string(m.Args), 50))
	case m.Method == "tools/call":
		return fmt.Sprintf("%s → %s(%s)", p.Server, m.Params.Name, OneLine(string(m.Params.Arguments), 50))
	case m.Method != "":
		return fmt.Sprintf("%s %s %s", p.Server, arrow(p.Direction), m.Method)
	case m.Error != nil:
		return fmt.Sprintf("%s ← error: %s", p.Server, OneLine(m.Error.Message, 60))
	case m.Result != nil && len(m.Result.Content) > 0:
		return fmt.Sprintf("%s ← %s", p.Server, OneLine(m.Result.Content[0].Text, 60))
	}
	return fmt.Sprintf("%s %s %s", p.Server, arrow(p.Direction), OneLine(string(p.Message), 50))
}

func arrow(d tapefmt.MCPDirection) string {
	if d == tapefmt.MCPToServer {
		return "→"
	}
	return "←"
}

// sqlText counts a booth transaction's SQL (record --pg) for its line:
// ", 3 SQL statements (1 sensitive)", or "" without SQL.
func sqlText(sql []tapefmt.SQLSession) string {
	if len(sql) == 0 {
		return ""
	}
	n, sensitive := tapefmt.SQLCount(sql)
	out := ", " + termtext.Count(n, "SQL statement", "SQL statements")
	if sensitive > 0 {
		out += fmt.Sprintf(" (%d sensitive)", sensitive)
	}
	return out
}

// SummaryIn is the row's summary for a column of w cells: the least
// important parts go first, so what tells frames apart stays. An LLM
// request drops its method, then its host and all of its path but the
// last part (…/completions), then the path: the model is the last to go.
// A control exchange on a transaction (POST /v1/tx/ID/write) says its
// operation and the end of the id, which the path cut off. Other rows
// are their Summary; the caller cuts what still does not fit.
func (r Row) SummaryIn(w int) string {
	if utf8.RuneCountInString(r.Summary) <= w {
		return r.Summary
	}
	switch p := r.Payload.(type) {
	case *tapefmt.LLMRequest:
		return requestIn(p, w)
	case *tapefmt.Control:
		return controlIn(p, r.Summary)
	}
	return r.Summary
}

// controlIn is summary, the line of a control exchange, with the
// operation first when it is on a transaction: "tx…4b01d3 write 200
// {...}" for "POST /v1/tx/tx-18ef…4b01d3/write 200 {...}", so that rows
// of one transaction's writes, commit and rollback tell apart in a
// narrow column.
func controlIn(p *tapefmt.Control, summary string) string {
	rest, ok := strings.CutPrefix(p.Path, "/v1/tx/")
	id, op, hasOp := strings.Cut(rest, "/")
	if !ok || !hasOp || id == "" || op == "" {
		return summary
	}
	const keep = 6 // the end of the id: its random part
	if r := []rune(id); len(r) > keep+3 {
		id = "tx…" + string(r[len(r)-keep:])
	}
	return fmt.Sprintf("%s %s %d %s", id, op, p.Status, OneLine(string(p.Request), 50))
}

// requestIn is SummaryIn of an LLM request.
func requestIn(p *tapefmt.LLMRequest, w int) string {
	tail := p.Model
	if p.Stream {
		tail = strings.TrimSpace(tail + " stream")
	}
	path := p.Path
	if i := strings.LastIndexByte(strings.TrimSuffix(path, "/"), '/'); i > 0 {
		path = "…" + path[i:]
	}
	for _, s := range []string{
		fmt.Sprintf("#%d %s%s %s", p.Call, p.Host, p.Path, tail),
		fmt.Sprintf("#%d %s %s", p.Call, p.Path, tail),
		fmt.Sprintf("#%d %s %s", p.Call, path, tail),
	} {
		if utf8.RuneCountInString(s) <= w {
			return s
		}
	}
	return fmt.Sprintf("#%d %s", p.Call, tail)
}

// describeFile is a file change's line; a step record says its boundary
// and is not part of the change set.
func describeFile(p *tapefmt.FileChange) string {
	s := fmt.Sprintf("%s %s", p.Op, p.Where())
	switch {
	case p.Op == tapefmt.OpWrite:
		s += fmt.Sprintf(" (%d bytes)", p.Size)
	case p.Op == tapefmt.OpSymlink:
		s += " → " + p.Target
	}
	if p.IsStep() {
		return fmt.Sprintf("workspace, boundary %d: %s", p.Step, s)
	}
	return s
}
