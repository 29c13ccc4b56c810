package probe

import (
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"
)

// embedProto speaks the embeddings APIs: OpenAI's POST /v1/embeddings
// ({"data":[{"embedding":...}],"usage":{"prompt_tokens"}}) and Ollama's
// POST /api/embed ({"embeddings":[[...]],"prompt_eval_count"}). Never
// streamed: a request is a batch of inputs (BodyOptions.Batch) and its
// answer the batch's vectors, so what is measured is E2E, the inputs and
// the input tokens, and an answer with another number of vectors than
// inputs is malformed.
type embedProto struct {
	native bool
	opts   BodyOptions
}

// batch is the number of inputs a request sends.
func (e *embedProto) batch() int { return max(e.opts.Batch, 1) }

// inputs are the batch's texts: the prompt, numbered from the second on
// so that no two are the same (a server may answer a repeat from a cache).
func (e *embedProto) inputs(req Request) []string {
	text := req.text()
	in := make([]string, e.batch())
	for i := range in {
		if i == 0 {
			in[i] = text
		} else {
			in[i] = strconv.Itoa(i) + " " + text
		}
	}
	return in
}

func (e *embedProto) body(model string, req Request) ([]byte, error) {
	in := e.inputs(req)
	m := map[string]any{"model": model}
	if len(in) == 1 {
		m["input"] = in[0]
	} else {
		m["input"] = in
	}
	if !e.native {
		m["encoding_format"] = "float"
	}
	return marshal(m, e.opts.Extra)
}

func (e *embedProto) framing() framing { return frameWhole }

func (e *embedProto) endsOnEOF() bool { return true }

func (e *embedProto) parse(ps *parser, data []byte) (chunkInfo, error) {
	var info chunkInfo
	if err := checkValues(data, e.limits().values); err != nil {
		return chunkInfo{}, err
	}
	v, err := parseObject(&ps.json, data)
	if err != nil {
		return info, err
	}
	if info.errMsg = errorField(v); info.errMsg != nil {
		return info, nil
	}
	key := "data"
	if e.native {
		key = "embeddings"
	}
	vecs := v.Get(key)
	if vecs == nil || vecs.Type() != fastjson.TypeArray {
		return info, fmt.Errorf("malformed message: no %q list of embeddings", key)
	}
	for _, x := range vecs.GetArray() {
		vec := x
		if !e.native {
			vec = x.Get("embedding")
		}
		// A vector is a list of numbers, or (encoding_format base64) a
		// string of them.
		if vec == nil || (vec.Type() != fastjson.TypeArray && vec.Type() != fastjson.TypeString) ||
			(vec.Type() == fastjson.TypeArray && len(vec.GetArray()) == 0) || (vec.Type() == fastjson.TypeString && len(vec.GetStringBytes()) == 0) {
			return info, fmt.Errorf("malformed message: embedding %d is empty or no vector", info.vectors)
		}
		info.vectors++
	}
	info.finished = true
	if e.native {
		info.usage = readUsage(v)
	} else if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		info.usage = readUsage(u)
	}
	return info, nil
}
