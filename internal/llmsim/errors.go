package llmsim

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// openAIError is the body of every OpenAI API error.
type openAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// anthropicError is the body of every Anthropic API error.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id,omitempty"`
}

// anthropicErrorTypes maps HTTP statuses to Anthropic error types.
var anthropicErrorTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
	500: "api_error", 529: "overloaded_error",
}

func anthropicErrorType(status int) string {
	if t, ok := anthropicErrorTypes[status]; ok {
		return t
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func openAIErrorType(status int) (typ, code string) {
	switch {
	case status == 429:
		return "requests", "rate_limit_exceeded"
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status >= 500:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// errorBody renders an error in the provider's shape.
func errorBody(g ids, anthropic bool, status int, typ, msg, param, code string) []byte {
	if anthropic {
		var e anthropicError
		e.Type = "error"
		e.Error.Type, e.Error.Message = typ, msg
		if e.Error.Type == "" {
			e.Error.Type = anthropicErrorType(status)
		}
		if g != (ids{}) {
			e.RequestID = g.requestID()
		}
		return marshal(e)
	}
	var e openAIError
	defType, defCode := openAIErrorType(status)
	if typ == "" {
		typ = defType
	}
	if code == "" {
		code = defCode
	}
	e.Error.Message, e.Error.Type = msg, typ
	e.Error.Param, e.Error.Code = optional(param), optional(code)
	return marshal(e)
}

// writeError answers a request the server refuses.
func (s *Server) writeError(w http.ResponseWriter, g ids, anthropic bool, status int, e *reqError) {
	s.setHeaders(w, g, anthropic, "")
	w.WriteHeader(status)
	w.Write(errorBody(g, anthropic, status, "", e.msg, e.param, e.code)) //nolint:errcheck // the client may be gone
}

// defaultFailMessages are the messages of scripted failures without one.
var defaultFailMessages = map[int]string{
	429: "Rate limit reached. Please try again later.",
	500: "The server had an error while processing your request.",
	503: "The service is temporarily unavailable.",
	529: "Overloaded",
}

// writeFailure answers with a scripted HTTP error.
func (s *Server) writeFailure(w http.ResponseWriter, g ids, anthropic bool, f *failure) {
	body := []byte(f.body)
	if len(body) == 0 {
		msg := f.message
		if msg == "" {
			msg = defaultFailMessages[f.status]
		}
		if msg == "" {
			msg = http.StatusText(f.status)
		}
		body = errorBody(g, anthropic, f.status, f.errType, msg, "", "")
	} else {
		body = compactJSON(body)
	}
	w.WriteHeader(f.status)
	w.Write(body) //nolint:errcheck // the client may be gone
}

// compactJSON compacts raw (already validated), keeping its key order.
func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
