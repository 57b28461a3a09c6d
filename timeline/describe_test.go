package timeline

import (
	"encoding/json"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestDescribeMCP: MCP messages read as tool calls do, whatever way they
// went.
func TestDescribeMCP(t *testing.T) {
	msg := func(dir tapefmt.MCPDirection, m string) *tapefmt.MCPMessage {
		return &tapefmt.MCPMessage{Server: "files", Direction: dir, Message: json.RawMessage(m)}
	}
	linked := msg(tapefmt.MCPToServer, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a"}}}`)
	linked.Call = &tapefmt.ToolLink{Frame: 12, ID: "call_1"}
	for _, c := range []struct {
		p    *tapefmt.MCPMessage
		want string
	}{
		{msg(tapefmt.MCPStart, `{"argv":["npx","srv","."]}`), "files start npx srv ."},
		{linked, `files → write_file({"path":"a"}) (the model's call call_1, frame 12)`},
		{msg(tapefmt.MCPFromServer, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Successfully wrote"}]}}`), "files ← Successfully wrote"},
		{msg(tapefmt.MCPFromServer, `{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"gone"}}`), "files ← error: gone"},
		{msg(tapefmt.MCPToServer, `{"jsonrpc":"2.0","method":"notifications/initialized"}`), "files → notifications/initialized"},
		{msg(tapefmt.MCPOutbox, `{"tool":"write_file","arguments":{"path":"a"},"key":"k"}`), `files outbox write_file({"path":"a"})`},
	} {
		if got := Describe(c.p); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestDescribeClockAndNewFile: a clock frame reads as a time, not raw
// nanoseconds; a new file's diff comes from /dev/null, as diff -u and git
// write it.
func TestDescribeClockAndNewFile(t *testing.T) {
	if got := Describe(&tapefmt.Clock{Unix: 1796117400000000000, Source: "time.time"}); got != "clock 2026-12-01 09:30:00.000000 UTC (time.time)" {
		t.Errorf("clock: %q", got)
	}
}

// TestOneLineBidiAndTabs: bidi controls and invisible characters never
// reach the terminal in a timeline row (U+202E could reorder what a user
// reads); ESC shows as ␛ as in the frame view (termtext.Sanitize, tested
// in its package); tabs in text shown whole keep their columns.
func TestOneLineBidiAndTabs(t *testing.T) {
	if got := OneLine("rm -rf /\u202e txt.exe\u200b \x1b[2J\u009b", 0); got != "rm -rf /� txt.exe� ␛[2J�" {
		t.Errorf("OneLine: %q", got)
	}
	if got := ExpandTabs("a\tb\n\tc\tdd"); got != "a   b\n    c   dd" {
		t.Errorf("ExpandTabs: %q", got)
	}
}

// TestControlRowsTellTheirOperation: in a column too narrow for the
// whole line, a control exchange on a transaction puts its operation
// first and keeps the end of the id (the timeline showed four rows of
// "POST /v1/tx/tx-18ef0802c243ae43344b01d…" for three writes and a
// commit); one that fits, and other control paths, are left as they are.
func TestControlRowsTellTheirOperation(t *testing.T) {
	row := func(path, req string) Row {
		p := &tapefmt.Control{Method: "POST", Path: path, Status: 200, Request: json.RawMessage(req)}
		return Row{Payload: p, Summary: Describe(p)}
	}
	write := row("/v1/tx/tx-18ef0802c243ae43344b01d3/write", `{"path":"src/a.txt","content":"new"}`)
	if got, want := write.SummaryIn(40), `tx…4b01d3 write 200 {"path":"src/a.txt","content":"new"}`; got != want {
		t.Errorf("a write in 40 cells:\ngot  %q\nwant %q", got, want)
	}
	commit := row("/v1/tx/tx-18ef0802c243ae43344b01d3/commit", `{}`)
	if got, want := commit.SummaryIn(30), `tx…4b01d3 commit 200 {}`; got != want {
		t.Errorf("a commit in 30 cells:\ngot  %q\nwant %q", got, want)
	}
	if got := write.SummaryIn(200); got != write.Summary {
		t.Errorf("a row that fits: %q, want its summary %q", got, write.Summary)
	}
	turn := row("/v1/turn", `{"agent":"planner","text":"a long message that does not fit"}`)
	if got := turn.SummaryIn(20); got != turn.Summary {
		t.Errorf("another control path: %q, want its summary %q", got, turn.Summary)
	}
}
