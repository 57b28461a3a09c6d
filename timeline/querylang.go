package timeline

import (
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Query is what a search looks for: the words of text a frame must hold
// (case-insensitive, as one phrase) and field:value terms it must meet,
// all of them. The fields:
//
//	kind:llm        a class (llm, tools, files, output, errors, tx) or a
//	                kind (llm.request, tool.call, file.change, ...)
//	model:gpt-4o    an LLM request's or response's model holds the value
//	tool:write      a tool call's name holds the value
//	path:src/       a file change's path holds the value
//	status:500      an LLM response's HTTP status
//
// A word with a colon whose name is none of these is text (a URL, say).
type Query struct {
	Text   string // lower case
	Class  Class
	Kinds  []tapefmt.Kind
	Model  string
	Tool   string
	Path   string
	Status int
	// Bad are the field terms whose value means nothing (kind:foo,
	// status:abc), as typed.
	Bad []string
}

// QueryFields are the field names a query knows.
var QueryFields = []string{"kind", "model", "tool", "path", "status"}

var classNames = map[string]Class{"llm": ClassLLM, "tools": ClassTools, "tool": ClassTools, "files": ClassFiles,
	"file": ClassFiles, "output": ClassOutput, "errors": ClassErrors, "error": ClassErrors, "tx": ClassTx,
	"transactions": ClassTx}

// ClassNames are the names of the classes, as kind: takes them.
var ClassNames = []string{"llm", "tools", "files", "output", "errors", "tx"}

// ClassNamed is the class a name (kind:NAME) names.
func ClassNamed(name string) (Class, bool) {
	c, ok := classNames[strings.ToLower(name)]
	return c, ok
}

// ParseQuery reads a query as typed.
func ParseQuery(s string) Query {
	var q Query
	var text []string
	for _, w := range strings.Fields(s) {
		name, value, ok := strings.Cut(w, ":")
		if !ok || value == "" {
			text = append(text, w)
			continue
		}
		switch strings.ToLower(name) {
		case "kind":
			v := strings.ToLower(value)
			if c, ok := classNames[v]; ok {
				q.Class |= c
			} else if k, err := tapefmt.ParseKind(v); err == nil {
				q.Kinds = append(q.Kinds, k)
			} else {
				q.Bad = append(q.Bad, w)
			}
		case "model":
			q.Model = strings.ToLower(value)
		case "tool":
			q.Tool = strings.ToLower(value)
		case "path":
			q.Path = value
		case "status":
			n, err := strconv.Atoi(value)
			if err != nil {
				q.Bad = append(q.Bad, w)
			}
			q.Status = n
		default:
			text = append(text, w)
		}
	}
	q.Text = strings.ToLower(strings.Join(text, " "))
	return q
}

// Empty reports whether q asks for nothing at all.
func (q Query) Empty() bool {
	return q.Text == "" && q.Class == 0 && len(q.Kinds) == 0 && q.Model == "" && q.Tool == "" && q.Path == "" && q.Status == 0
}

// fields reports whether a frame's payload meets q's field terms.
func (q Query) fields(p tapefmt.Payload) bool {
	var model, tool, path string
	status := 0
	switch p := p.(type) {
	case *tapefmt.LLMRequest:
		model = p.Model
	case *tapefmt.LLMResponse:
		model, status = p.Model, p.Status
	case *tapefmt.ToolCall:
		tool = p.Name
	case *tapefmt.FileChange:
		path = p.Path
	}
	return (q.Model == "" || model != "" && strings.Contains(strings.ToLower(model), q.Model)) &&
		(q.Tool == "" || tool != "" && strings.Contains(strings.ToLower(tool), q.Tool)) &&
		(q.Path == "" || path != "" && strings.Contains(path, q.Path)) &&
		(q.Status == 0 || status == q.Status)
}
