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
