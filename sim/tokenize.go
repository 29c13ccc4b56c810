package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// maxTokenizeBody bounds a /tokenize request's body.
const maxTokenizeBody = 16 << 20

// handleTokenize serves POST /tokenize as vLLM and SGLang do ({"prompt"}
// or {"messages"}, answered {"count","max_model_len","tokens"}) and as
// llama-server does ({"content"}, answered {"tokens"}): the sim's own
// count of the text (CountTokens), the tokens as their positions. A
// conversation is counted as the chat kind counts it, its template's
// overhead included.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   *string           `json:"prompt"`
		Content  *string           `json:"content"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxTokenizeBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	n := 0
	switch {
	case req.Prompt != nil:
		n = CountTokens(*req.Prompt)
	case req.Content != nil:
		n = CountTokens(*req.Content)
	case len(req.Messages) > 0:
		for _, m := range req.Messages {
			k, err := messageTokens(m)
			if err != nil {
				writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
				return
			}
			n += k
		}
		n += s.p.ChatOverhead
	default:
		writeError(w, http.StatusBadRequest, "BadRequestError", "give prompt, content or messages")
		return
	}
	b := make([]byte, 0, 64+7*n)
	b = append(b, `{"count":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"max_model_len":`...)
	b = strconv.AppendInt(b, int64(s.p.MaxModelLen), 10)
	b = append(b, `,"tokens":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	b = append(b, "]}"...)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
