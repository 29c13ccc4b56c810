package probe

import (
	"bytes"
	"encoding/json"
	"errors"
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
	key := "data"
	if e.native {
		key = "embeddings"
	}
	// The vectors are counted as they are read, never built: the full
	// parser makes a value of every number, and keeps them for its next
	// message (a vector of 10^6 numbers held ~780 MB a request in flight).
	// The rest of the answer (its error, its usage) is small, and parsed.
	rest, vectors, found, err := scanVectors(data, key, e.native)
	if err != nil {
		return info, err
	}
	v, err := parseObject(&ps.json, rest)
	if err != nil {
		return info, err
	}
	if info.errMsg = errorField(v); info.errMsg != nil {
		return info, nil
	}
	if !found {
		return info, fmt.Errorf("malformed message: no %q list of embeddings", key)
	}
	info.vectors = vectors
	info.finished = true
	if e.native {
		info.usage = readUsage(v)
	} else if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		info.usage = readUsage(u)
	}
	return info, nil
}

// maxRestValues bounds the values of an embeddings answer beside its
// vectors (its error, its usage, its model): a handful in real answers.
const maxRestValues = 4096

// scanVectors reads an embeddings answer, an object, without building its
// vectors: rest is the object without the member key (parsed as a whole
// by the caller), vectors the count of vectors in key's list, each a
// non-empty list of numbers or (encoding_format base64) a non-empty
// string, itself (native: Ollama's) or as the "embedding" of an object.
// found says key was there as a list.
func scanVectors(data []byte, key string, native bool) (rest []byte, vectors int, found bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, 0, false, errors.New("malformed message: not an object")
	}
	rest = append(rest, '{')
	seen := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, 0, false, fmt.Errorf("malformed message: %w", err)
		}
		k, _ := t.(string)
		switch {
		case k == key && !seen: // the first, as the full parser takes it
			seen = true
			if vectors, found, err = countVectors(dec, native); err != nil {
				return nil, 0, false, err
			}
			continue
		case k == key:
			if err := skipValue(dec); err != nil {
				return nil, 0, false, err
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, 0, false, fmt.Errorf("malformed message: %w", err)
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		kb, _ := json.Marshal(k)
		rest = append(append(append(rest, kb...), ':'), raw...)
	}
	rest = append(rest, '}')
	if err := checkValues(rest, maxRestValues); err != nil {
		return nil, 0, false, err
	}
	return rest, vectors, found, nil
}

// countVectors reads a list of vectors (scanVectors) and counts them;
// found is false for a member that is no list.
func countVectors(dec *json.Decoder, native bool) (n int, found bool, err error) {
	t, err := dec.Token()
	if err != nil {
		return 0, false, fmt.Errorf("malformed message: %w", err)
	}
	if t != json.Delim('[') {
		if d, ok := t.(json.Delim); ok { // an object: skipped whole
			if err := skipRest(dec, d); err != nil {
				return 0, false, err
			}
		}
		return 0, false, nil
	}
	for dec.More() {
		ok := false
		if native {
			ok, err = vector(dec)
		} else {
			ok, err = embeddingOf(dec)
		}
		if err != nil {
			return 0, false, err
		}
		if !ok {
			return 0, false, fmt.Errorf("malformed message: embedding %d is empty or no vector", n)
		}
		n++
	}
	if _, err := dec.Token(); err != nil { // ]
		return 0, false, fmt.Errorf("malformed message: %w", err)
	}
	return n, true, nil
}

// embeddingOf reads an object holding a vector as "embedding".
func embeddingOf(dec *json.Decoder) (bool, error) {
	t, err := dec.Token()
	if err != nil {
		return false, fmt.Errorf("malformed message: %w", err)
	}
	if t != json.Delim('{') {
		if d, ok := t.(json.Delim); ok {
			return false, skipRest(dec, d)
		}
		return false, nil
	}
	ok, seen := false, false
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return false, fmt.Errorf("malformed message: %w", err)
		}
		if k, _ := kt.(string); k == "embedding" && !seen { // the first, as the full parser takes it
			seen = true
			if ok, err = vector(dec); err != nil {
				return false, err
			}
			continue
		}
		if err := skipValue(dec); err != nil {
			return false, err
		}
	}
	if _, err := dec.Token(); err != nil { // }
		return false, fmt.Errorf("malformed message: %w", err)
	}
	return ok, nil
}

// vector reads one vector: true for a non-empty list of numbers or a
// non-empty string. It is read as raw bytes (no value made of each
// number) and told apart by them: valid JSON, so a list that holds no
// quote, bracket, brace or letter of true, false and null holds numbers.
func vector(dec *json.Decoder) (bool, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return false, fmt.Errorf("malformed message: %w", err)
	}
	switch raw[0] {
	case '"':
		return len(raw) > 2, nil
	case '[':
		inner := bytes.TrimSpace(raw[1 : len(raw)-1])
		return len(inner) > 0 && !bytes.ContainsAny(inner, "[]{}\"tfn"), nil
	}
	return false, nil
}

// skipValue reads one value of any kind and drops it.
func skipValue(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("malformed message: %w", err)
	}
	if d, ok := t.(json.Delim); ok {
		return skipRest(dec, d)
	}
	return nil
}

// skipRest reads the rest of the list or object d opened, and drops it.
func skipRest(dec *json.Decoder, d json.Delim) error {
	if d != '[' && d != '{' {
		return errors.New("malformed message: a stray " + d.String())
	}
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("malformed message: %w", err)
		}
		switch t {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
	return nil
}
