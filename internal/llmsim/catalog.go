package llmsim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// Embedding sizes: the default, and the most a request may ask for.
const (
	defaultDims = 1536
	maxDims     = 4096
	maxInputs   = 2048
)

// baseModels are listed by GET /v1/models besides the models a script names.
var baseModels = []string{"demo-large", "demo-small", "text-embedding-3-small"}

// models returns every model the server lists, sorted.
func (s *Server) models() []string {
	seen := map[string]bool{}
	for _, m := range baseModels {
		seen[m] = true
	}
	for _, r := range s.script.rules {
		if lit := r.match.modelLit; lit != "" {
			seen[lit] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

func modelCreated(id string) int64 {
	h := sha256.Sum256([]byte("llmsim-model\x00" + id))
	return epoch - 2*epochRange + int64(binary.BigEndian.Uint32(h[:4])%epochRange)
}

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// serveModels answers GET /v1/models and GET /v1/models/{id}, in the
// Anthropic shape when the request carries an anthropic-version header.
func (s *Server) serveModels(w http.ResponseWriter, g ids, anthropic bool, id string) {
	s.setHeaders(w, g, anthropic, "")
	var items []any
	models := s.models()
	for _, m := range models {
		if id != "" && m != id {
			continue
		}
		if anthropic {
			t := time.Unix(modelCreated(m), 0).UTC().Format(time.RFC3339)
			items = append(items, anthropicModel{Type: "model", ID: m, DisplayName: m, CreatedAt: t})
		} else {
			items = append(items, openAIModel{ID: m, Object: "model", Created: modelCreated(m), OwnedBy: "llmsim"})
		}
	}
	switch {
	case id != "" && len(items) == 0:
		s.writeError(w, g, anthropic, http.StatusNotFound, &reqError{msg: "The model '" + id + "' does not exist", param: "model", code: "model_not_found"})
	case id != "":
		w.Write(marshal(items[0])) //nolint:errcheck // the client may be gone
	case anthropic:
		w.Write(marshal(struct { //nolint:errcheck // the client may be gone
			Data    []any  `json:"data"`
			HasMore bool   `json:"has_more"`
			FirstID string `json:"first_id"`
			LastID  string `json:"last_id"`
		}{items, false, models[0], models[len(models)-1]}))
	default:
		w.Write(marshal(struct { //nolint:errcheck // the client may be gone
			Object string `json:"object"`
			Data   []any  `json:"data"`
		}{"list", items}))
	}
}

// embeddingRequest is an OpenAI embeddings request.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

// embedding is one vector of an embeddings response.
type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

// embeddingInputs flattens input (a string, strings, tokens, or token lists)
// into one canonical string per vector.
func embeddingInputs(raw json.RawMessage) ([]string, *reqError) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []json.RawMessage
	if err := json.Unmarshal(raw, &many); err != nil || len(many) == 0 || len(many) > maxInputs {
		return nil, &reqError{msg: "'input' must be a non-empty string or array of at most 2048 inputs", param: "input", code: "invalid_type"}
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil {
		return []string{string(raw)}, nil
	}
	out := make([]string, len(many))
	for i, m := range many {
		if json.Unmarshal(m, &out[i]) != nil && json.Unmarshal(m, &tokens) != nil {
			return nil, badType("input", "a string or an array of strings or tokens", raw)
		}
		if out[i] == "" {
			out[i] = string(m)
		}
	}
	return out, nil
}

// serveEmbeddings answers POST /v1/embeddings with unit vectors derived from
// a hash of (model, input): the same text always embeds the same way.
func (s *Server) serveEmbeddings(w http.ResponseWriter, g ids, body []byte) {
	var req embeddingRequest
	obj, rerr := decodeObject(body)
	if rerr == nil {
		if err := json.Unmarshal(body, &req); err != nil {
			rerr = &reqError{msg: "invalid embeddings request: " + err.Error()}
		}
	}
	switch {
	case rerr != nil:
	case req.Model == "":
		rerr = &reqError{msg: "you must provide a model parameter", param: "model"}
	case obj["input"] == nil:
		rerr = missing("input")
	case req.Dimensions < 0 || req.Dimensions > maxDims:
		rerr = &reqError{msg: "'dimensions' must be between 1 and 4096", param: "dimensions"}
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		rerr = &reqError{msg: "'encoding_format' must be 'float' or 'base64'", param: "encoding_format"}
	}
	var inputs []string
	if rerr == nil {
		inputs, rerr = embeddingInputs(req.Input)
	}
	if rerr != nil {
		s.writeError(w, g, false, http.StatusBadRequest, rerr)
		return
	}
	s.setHeaders(w, g, false, "")
	dims := cmpOr(req.Dimensions, defaultDims)
	data, total := make([]embedding, len(inputs)), 0
	for i, in := range inputs {
		vec := embed(req.Model, in, dims)
		var value any = vec
		if req.EncodingFormat == "base64" {
			value = encodeFloats(vec)
		}
		data[i] = embedding{Object: "embedding", Index: i, Embedding: value}
		total += tokens(len(in))
	}
	w.Write(marshal(struct { //nolint:errcheck // the client may be gone
		Object string         `json:"object"`
		Data   []embedding    `json:"data"`
		Model  string         `json:"model"`
		Usage  map[string]int `json:"usage"`
	}{"list", data, req.Model, map[string]int{"prompt_tokens": total, "total_tokens": total}}))
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// embed derives a unit vector of dims float32 values from (model, text).
func embed(model, text string, dims int) []float32 {
	vec := make([]float32, dims)
	var sum float64
	for i := 0; i < dims; i += 8 {
		h := sha256.Sum256([]byte(model + "\x00" + text + "\x00" + strconv.Itoa(i)))
		for j := 0; j < 8 && i+j < dims; j++ {
			v := float64(int32(binary.BigEndian.Uint32(h[4*j:]))) / math.MaxInt32
			vec[i+j] = float32(v)
			sum += v * v
		}
	}
	norm := float32(math.Sqrt(sum))
	for i := range vec {
		vec[i] /= norm
	}
	return vec
}

// encodeFloats is the base64 encoding_format: little-endian float32s.
func encodeFloats(vec []float32) string {
	b := make([]byte, 4*len(vec))
	for i, v := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// serveCountTokens answers Anthropic's POST /v1/messages/count_tokens.
func (s *Server) serveCountTokens(w http.ResponseWriter, g ids, body []byte) {
	c, rerr := parseMessagesCount(body)
	if rerr != nil {
		s.writeError(w, g, true, http.StatusBadRequest, rerr)
		return
	}
	s.setHeaders(w, g, true, "")
	w.Write(marshal(map[string]int{"input_tokens": inputTokens(c, len(body))})) //nolint:errcheck // the client may be gone
}
