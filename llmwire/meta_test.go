package llmwire

import (
	"slices"
	"testing"
)

func TestReadAnswerMeta(t *testing.T) {
	for _, c := range []struct {
		name, body, id string
		finish         []string
	}{
		{"chat whole", `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls"},{"index":1,"finish_reason":"stop"}]}`, "chatcmpl-1", []string{"tool_calls", "stop"}},
		{"chat streamed", "data: {\"id\":\"chatcmpl-2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"chatcmpl-2\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n", "chatcmpl-2", []string{"stop"}},
		{"anthropic whole", `{"id":"msg_1","type":"message","stop_reason":"end_turn","content":[]}`, "msg_1", []string{"end_turn"}},
		{"anthropic streamed", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"stop_reason\":null}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}}\n", "msg_2", []string{"tool_use"}},
		{"responses whole", `{"id":"resp_1","object":"response","status":"completed","output":[]}`, "resp_1", []string{"completed"}},
		{"responses incomplete", `{"id":"resp_2","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}`, "resp_2", []string{"max_output_tokens"}},
		{"responses streamed", "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_3\",\"status\":\"in_progress\"}}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_3\",\"status\":\"completed\"}}\n", "resp_3", []string{"completed"}},
		{"not json", "upstream timeout", "", nil},
	} {
		a := ReadAnswer([]byte(c.body))
		id, finish := a.ID, a.Finish
		if id != c.id || !slices.Equal(finish, c.finish) {
			t.Errorf("%s: %q %q, want %q %q", c.name, id, finish, c.id, c.finish)
		}
	}
}
