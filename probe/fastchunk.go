package probe

// A fast path for the message that arrives once per token: an OpenAI-style
// chunk with an id, choices carrying a delta, and null usage and error.
// It validates the whole message as strict JSON in one pass, building
// nothing, and notes what parse would. Anything it does not expect (a
// usage or error object, vLLM's error object, an escaped key, deep
// nesting, anything invalid) makes it give up, and the full parser
// decides: so it can only ever agree with parse (FuzzFastChunk holds it to
// that), and costs a fraction of it.

// fastChunk reads data as an OpenAI-style chunk; ok is false when the full
// parser must decide. memo (nil for none) carries what the stream's last
// chunk taught.
func fastChunk(data []byte, memo *chunkMemo) (info chunkInfo, ok bool) {
	s := scanner{b: data}
	cut, idAt := -1, -1
	read := func(key []byte) bool {
		switch string(key) {
		case "object":
			v, escaped, ok := s.stringOrNull()
			return ok && !escaped && string(v) != "error"
		case "id":
			v, escaped, ok := s.stringOrNull()
			if len(info.id) == 0 && len(v) > 0 {
				info.id, idAt = capID(v), s.i-1-len(v)
			}
			return ok && !escaped
		case "usage", "error":
			return s.null() // anything else is rare: the full parser reads it
		case "choices":
			if cut < 0 {
				s.ws()
				cut = s.i
			}
			return s.choices(&info)
		}
		return s.value(1)
	}
	if memo != nil && memo.valid && len(data) > len(memo.prefix) && string(data[:len(memo.prefix)]) == string(memo.prefix) {
		// The same bytes up to the choices: the same state there.
		s.i, cut = len(memo.prefix), len(memo.prefix)
		var id []byte
		if memo.idLen > 0 {
			id = data[memo.idAt : memo.idAt+memo.idLen]
		}
		if q, ok := memo.quick(data, cut); ok {
			q.id = id
			return q, true
		}
		info.id = id
		if !s.choices(&info) {
			return info, false
		}
		done, ok := s.afterMember()
		if !ok || (!done && !s.moreMembers(false, read)) || !s.end() {
			return info, false
		}
		memo.learn(data, cut, &s, info)
		return info, true
	}
	s.ws()
	if !s.eat('{') || !s.members(false, read) || !s.end() {
		return info, false
	}
	if memo != nil && cut > 0 {
		memo.prefix = append(memo.prefix[:0], data[:cut]...)
		memo.idAt, memo.idLen, memo.valid = idAt, len(info.id), true
		memo.learn(data, cut, &s, info)
	}
	return info, true
}

// quick reads a chunk whose bytes from cut (its choices) are the last
// chunk's but for the text of its one output string: the same bytes
// before the string, a string (valid, not empty), the same bytes after
// it. The scanner's state at the string is then the last chunk's, and so
// is everything it would note after it: the last chunk's answer, but for
// the id (the caller's). Per token that is two comparisons and one
// string scan instead of a walk through the choice's members.
func (m *chunkMemo) quick(data []byte, cut int) (chunkInfo, bool) {
	if !m.quickOK || len(data)-cut < len(m.mid)+len(m.tail)+1 || string(data[cut:cut+len(m.mid)]) != string(m.mid) {
		return chunkInfo{}, false
	}
	s := scanner{b: data, i: cut + len(m.mid)}
	v, _, ok := s.str()
	if !ok || len(v) == 0 || string(data[s.i:]) != string(m.tail) {
		return chunkInfo{}, false
	}
	return m.info, true
}

// learn remembers, for quick, the chunk around its one output string, if
// it had exactly one (s.textAt: the string's quote, s.textEnd: past its
// end); any other chunk forgets it.
func (m *chunkMemo) learn(data []byte, cut int, s *scanner, info chunkInfo) {
	m.quickOK = s.texts == 1 && s.textAt > cut && info.output
	if !m.quickOK {
		return
	}
	m.mid = append(m.mid[:0], data[cut:s.textAt]...)
	m.tail = append(m.tail[:0], data[s.textEnd:]...)
	info.id = nil
	m.info = info
}

// chunkMemo remembers the bytes of a stream's last chunk up to its choices.
// A stream's chunks repeat them (the id, object, created time and model:
// about 150 of vLLM's 230 bytes), and a scanner reading the same bytes
// ends in the same state, so a chunk that starts with them is scanned
// from its choices on (FuzzFastChunkMemo holds it to the same answers).
type chunkMemo struct {
	prefix      []byte
	idAt, idLen int // where the id is in prefix (idLen 0: none)
	valid       bool
	// The last chunk around its one output string, from the choices on
	// (see quick): the bytes before the string and after it, and what it
	// noted. Valid with valid and quickOK.
	mid, tail []byte
	info      chunkInfo
	quickOK   bool
}

type scanner struct {
	b []byte
	i int
	// The output strings read (texts), and where the last began (its
	// quote) and ended (past its closing quote), for chunkMemo.learn.
	texts, textAt, textEnd int
}

// text notes an output string read from at to the cursor.
func (s *scanner) text(at int) {
	s.texts++
	s.textAt, s.textEnd = at, s.i
}

func (s *scanner) ws() {
	b, i := s.b, s.i
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// members reads an object's members, the cursor after its brace: read is
// called on each name to read its value, and false from it gives up.
// Names with escapes give up too, unless anyName (an object only skipped,
// whose names are not looked at).
func (s *scanner) members(anyName bool, read func(key []byte) bool) bool {
	s.ws()
	if s.eat('}') {
		return true
	}
	return s.moreMembers(anyName, read)
}

// moreMembers reads members from the next name to the closing brace.
func (s *scanner) moreMembers(anyName bool, read func(key []byte) bool) bool {
	for {
		key, ok := s.key(anyName)
		if !ok || !read(key) {
			return false
		}
		done, ok := s.afterMember()
		if !ok {
			return false
		}
		if done {
			return true
		}
	}
}

// afterMember reads what follows a member's value: the closing brace
// (done) or a comma.
func (s *scanner) afterMember() (done, ok bool) {
	s.ws()
	if s.eat('}') {
		return true, true
	}
	return false, s.eat(',')
}

// end: nothing but white space may follow the message.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// key reads a member's name and its colon; names with escapes give up
// unless anyName.
func (s *scanner) key(anyName bool) ([]byte, bool) {
	s.ws()
	v, escaped, ok := s.str()
	if !ok || (escaped && !anyName) {
		return nil, false
	}
	s.ws()
	return v, s.eat(':')
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash or a control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string (the cursor on its quote) and returns its raw bytes.
// (Locals, not the fields, in the loop: they stay in registers.)
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	b, i := s.b, s.i
	if i >= len(b) || b[i] != '"' {
		return nil, false, false
	}
	i++
	start := i
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) || b[i] < 0x20 {
			return nil, false, false
		}
		if b[i] == '"' {
			s.i = i + 1
			return b[start:i], escaped, true
		}
		// a backslash
		escaped = true
		if i+1 >= len(b) {
			return nil, false, false
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || !hex4(b[i+2:i+6]) {
				return nil, false, false
			}
			i += 6
		default:
			return nil, false, false
		}
	}
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// literal reads one of true, false, null.
func (s *scanner) literal(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

func (s *scanner) null() bool {
	s.ws()
	return s.literal("null")
}

// stringOrNull reads a string (raw, escapes and all) or null (v nil).
func (s *scanner) stringOrNull() (v []byte, escaped, ok bool) {
	s.ws()
	if s.literal("null") {
		return nil, false, true
	}
	return s.str()
}

// number reads a JSON number, strictly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.eat('-')
	if s.eat('0') {
	} else if s.digits() == 0 {
		return false
	}
	if s.eat('.') && s.digits() == 0 {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// maxDepth bounds value's recursion; deeper messages go to the full parser.
const maxDepth = 16

// value skips any JSON value, validating it.
func (s *scanner) value(depth int) bool {
	s.ws()
	if s.i >= len(s.b) || depth > maxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{':
		s.i++
		return s.members(true, func([]byte) bool { return s.value(depth + 1) })
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// choices reads the choices array, noting output and finish reasons.
func (s *scanner) choices(info *chunkInfo) bool {
	s.ws()
	if s.literal("null") {
		return true
	}
	if !s.eat('[') {
		return false
	}
	s.ws()
	if s.eat(']') {
		return true
	}
	for {
		s.ws()
		if !s.eat('{') {
			return false // a choice that is not an object: the full parser
		}
		info.choices = true
		if !s.choice(info) {
			return false
		}
		s.ws()
		if s.eat(']') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// choice reads one choice's members after its brace.
func (s *scanner) choice(info *chunkInfo) bool {
	return s.members(false, func(key []byte) bool {
		switch string(key) {
		case "delta", "message":
			return s.delta(info)
		case "text":
			s.ws()
			at := s.i
			v, _, ok := s.stringOrNull()
			if len(v) > 0 {
				info.output, info.answer = true, true
				s.text(at)
			}
			return ok
		case "finish_reason":
			v, _, ok := s.stringOrNull()
			info.finished = info.finished || len(v) > 0
			return ok
		}
		return s.value(2)
	})
}

// delta reads a delta or message object, noting output text.
func (s *scanner) delta(info *chunkInfo) bool {
	s.ws()
	if !s.eat('{') {
		return s.value(2) // not an object: no text in it
	}
	return s.members(false, func(key []byte) bool {
		s.ws()
		if string(key) == "tool_calls" {
			return s.literal("null") // a tool call: the full parser reads it (readChoice)
		}
		if openaiTextKey(key) && s.i < len(s.b) && s.b[s.i] == '"' {
			at := s.i
			v, _, ok := s.str()
			if len(v) > 0 {
				info.output = true
				noteTextKey(key, info)
				s.text(at)
			}
			return ok
		}
		return s.value(3)
	})
}
