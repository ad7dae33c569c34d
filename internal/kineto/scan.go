package kineto

// Design note: this is the hot path of every command. It is a hand-written,
// single-pass scanner over a refillable window of the input (encoding/json
// with reflection runs at a quarter of the speed, see ../shared/GUIDE.md §4).
// Parsing proceeds in units (one event, one metadata value); a unit that
// runs off the end of the window panics with errNeedMore, the window is
// refilled (keeping the unit's bytes) and the unit is parsed again from its
// start. Units therefore keep their side effects in pending state until they
// complete. Damage inside a unit panics with a *syntaxError; the reader
// records it and resynchronises at the next event.

import (
	"errors"
	"io"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

var (
	errNeedMore  = errors.New("need more input")
	errTruncated = errors.New("input ends mid-value")
)

type syntaxError struct {
	off int64
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// maxDepth bounds nesting inside values so hostile input cannot exhaust the
// stack.
const maxDepth = 512

// window is the refillable input buffer.
type window struct {
	src     io.Reader
	buf     []byte
	pos     int
	end     int
	base    int64 // stream offset of buf[0]
	keep    int   // bytes from here on must survive a refill
	eof     bool
	readErr error
	onFill  func(consumed int64)
}

// fill makes room and reads more input. It returns false at end of input.
func (w *window) fill() bool {
	if w.eof {
		return false
	}
	if w.keep > 0 {
		n := copy(w.buf, w.buf[w.keep:w.end])
		w.base += int64(w.keep)
		w.pos -= w.keep
		w.end = n
		w.keep = 0
	}
	if w.end == len(w.buf) {
		if m := memlimit.Max(); m > 0 && int64(len(w.buf)) > m/8 {
			// One value larger than a quarter of the limit (the window
			// doubles once more to hold it).
			w.eof, w.readErr = true, memlimit.Error()
			return false
		}
		nb := make([]byte, 2*len(w.buf))
		copy(nb, w.buf[:w.end])
		w.buf = nb
	}
	// Read at least 64 KiB, and at least as much as is kept (or to EOF):
	// a unit is re-parsed from its start after each refill, so the reads
	// must grow with it for a long unit to cost linear time.
	got := 0
	want := min(len(w.buf)-w.end, max(64<<10, w.end))
	for got < want {
		n, err := w.src.Read(w.buf[w.end:])
		w.end += n
		got += n
		if err != nil {
			w.eof = true
			if err != io.EOF {
				w.readErr = err
			}
			break
		}
	}
	if got > 0 && w.onFill != nil {
		w.onFill(w.base + int64(w.end))
	}
	return got > 0
}

// offset is the stream offset of the current position.
func (w *window) offset() int64 { return w.base + int64(w.pos) }

func (w *window) peek() byte {
	if w.pos >= w.end {
		panic(errNeedMore)
	}
	return w.buf[w.pos]
}

func (w *window) next() byte {
	c := w.peek()
	w.pos++
	return c
}

func (w *window) ws() {
	buf, pos := w.buf[:w.end], w.pos
	for pos < len(buf) && isSpace[buf[pos]] {
		pos++
	}
	w.pos = pos
	if pos >= len(buf) {
		panic(errNeedMore)
	}
}

// isSpace and strStop are lookup tables for the two innermost loops.
var isSpace, strStop [256]bool

func init() {
	for _, c := range " \n\r\t" {
		isSpace[c] = true
	}
	for c := range 256 {
		strStop[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80
	}
}

func (w *window) fail(msg string) {
	panic(&syntaxError{off: w.offset(), msg: msg})
}

func (w *window) expect(c byte) {
	if w.next() != c {
		w.pos--
		w.fail("expected " + strconv.QuoteRune(rune(c)) + ", found " + describe(w.peek()))
	}
}

func describe(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + strconv.FormatUint(uint64(c), 16)
}

// scanner adds JSON values on top of the window. Problems found inside a
// unit wait in pending until the unit completes.
type scanner struct {
	window
	t       *trace.Trace
	strBuf  []byte
	pending []pendingProblem
	cache   internCache
}

// internCache is a direct-mapped cache in front of the trace's string
// table: names and arg keys repeat event after event, and one string
// comparison is cheaper than a map lookup.
type internCache struct {
	strs [1024]string
	ids  [1024]trace.StrID
}

// intern returns the StrID of b.
func (s *scanner) intern(b []byte) trace.StrID {
	n := len(b)
	if n == 0 {
		return 0
	}
	h := (uint(n)*0x9E37 ^ uint(b[0])<<5 ^ uint(b[n-1])<<9 ^ uint(b[n/2])<<2) & 1023
	if s.cache.strs[h] == string(b) {
		return s.cache.ids[h]
	}
	id := s.t.Intern(b)
	s.cache.strs[h], s.cache.ids[h] = s.t.Strings[id], id
	return id
}

type pendingProblem struct {
	off          int64
	what, detail string
}

func (s *scanner) problem(what, detail string) {
	s.pending = append(s.pending, pendingProblem{s.offset(), what, detail})
}

// isDelim reports whether c may follow a complete value.
func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\n', '\r', '\t':
		return true
	}
	return false
}

// str reads a string (the opening quote is next) and returns its decoded
// bytes, valid until the next call. It repairs what real traces break:
// invalid escapes are kept literally, control characters and invalid UTF-8
// are kept (invalid UTF-8 replaced by U+FFFD, as encoding/json does), and a
// quote not followed by a delimiter is taken as part of the string.
func (s *scanner) str() []byte {
	s.expect('"')
	start := s.pos
	ascii := true
	buf := s.buf[:s.end]
	for {
		pos := s.pos
		for pos < len(buf) && !strStop[buf[pos]] {
			pos++
		}
		s.pos = pos
		if pos >= len(buf) {
			panic(errNeedMore)
		}
		c := buf[pos]
		switch {
		case c == '"':
			if !s.quoteEnds() {
				s.problem("unescaped quote in string", "")
				return s.strSlow(start)
			}
			b := s.buf[start:s.pos]
			s.pos++
			if !ascii && !utf8.Valid(b) {
				s.problem("invalid UTF-8", "replaced by U+FFFD")
				s.strBuf = appendValidUTF8(s.strBuf[:0], b)
				return s.strBuf
			}
			return b
		case c == '\\' || c < 0x20:
			return s.strSlow(start)
		case c >= 0x80:
			ascii = false
		}
		s.pos++
	}
}

// quoteEnds reports whether the quote at pos closes the string: the next
// non-space byte must be a delimiter.
func (s *scanner) quoteEnds() bool {
	for i := s.pos + 1; ; i++ {
		if i >= s.end {
			if s.eof {
				return true
			}
			panic(errNeedMore)
		}
		switch c := s.buf[i]; c {
		case ' ', '\n', '\r', '\t':
			continue
		default:
			return isDelim(c)
		}
	}
}

// strSlow decodes a string with escapes or damage from start.
func (s *scanner) strSlow(start int) []byte {
	out := append(s.strBuf[:0], s.buf[start:s.pos]...)
	for {
		c := s.next()
		switch {
		case c == '"':
			if s.pos--; !s.quoteEnds() {
				s.problem("unescaped quote in string", "")
				s.pos++
				out = append(out, c)
				continue
			}
			s.pos++
			if !utf8.Valid(out) {
				s.problem("invalid UTF-8", "replaced by U+FFFD")
				out = appendValidUTF8(nil, out)
			}
			s.strBuf = out
			return out
		case c == '\\':
			out = s.escape(out)
		case c < 0x20:
			s.problem("control character in string", "byte 0x"+strconv.FormatUint(uint64(c), 16))
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
}

func (s *scanner) escape(out []byte) []byte {
	c := s.next()
	switch c {
	case '"', '\\', '/':
		return append(out, c)
	case 'b':
		return append(out, '\b')
	case 'f':
		return append(out, '\f')
	case 'n':
		return append(out, '\n')
	case 'r':
		return append(out, '\r')
	case 't':
		return append(out, '\t')
	case 'u':
		r, ok := s.hex4()
		if !ok {
			s.problem("invalid \\u escape", "kept as text")
			return append(out, '\\', 'u')
		}
		if utf16.IsSurrogate(r) {
			// A valid pair is \uD8xx\uDCxx; anything else is U+FFFD.
			if s.pos+1 < s.end && s.buf[s.pos] == '\\' && s.buf[s.pos+1] == 'u' {
				save := s.pos
				s.pos += 2
				if r2, ok := s.hex4(); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						return utf8.AppendRune(out, dec)
					}
				}
				s.pos = save
			} else if s.pos+1 >= s.end && !s.eof {
				panic(errNeedMore)
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(out, r)
	}
	// Invalid escape, typically a Windows path: keep the backslash.
	s.pos--
	s.problem("invalid escape in string", "\\"+string(c)+" kept literally")
	return append(out, '\\')
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > s.end {
		if !s.eof {
			panic(errNeedMore)
		}
		return 0, false
	}
	var r rune
	for _, c := range s.buf[s.pos : s.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

func appendValidUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\uFFFD"...)
		} else {
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}

// word reads a bare token (number, literal, or damage such as N/A) up to
// the next delimiter.
func (s *scanner) word() []byte {
	start := s.pos
	for {
		if s.pos >= s.end {
			if s.eof && s.pos > start {
				return s.buf[start:s.pos]
			}
			panic(errNeedMore)
		}
		c := s.buf[s.pos]
		if isDelim(c) || c == '"' || c == '{' || c == '[' {
			break
		}
		s.pos++
	}
	if s.pos == start {
		s.fail("expected a value, found " + describe(s.buf[s.pos]))
	}
	return s.buf[start:s.pos]
}

// value reads any value into a trace.Value, interning text.
func (s *scanner) value() trace.Value {
	switch c := s.peek(); c {
	case '"':
		return trace.StrValue(s.intern(s.str()))
	case '{', '[':
		start := s.pos
		s.skip(0)
		return trace.RawValue(s.intern(s.buf[start:s.pos]))
	}
	w := s.word()
	switch string(w) {
	case "true":
		return trace.BoolValue(true)
	case "false":
		return trace.BoolValue(false)
	case "null":
		return trace.Value{}
	}
	if v, ok := number(w); ok {
		if v.Kind == trace.ValBigInt {
			return trace.BigIntValue(s.intern(w))
		}
		return v
	}
	s.problem("bare word value", string(truncate(w, 40))+" read as a string")
	return trace.StrValue(s.intern(w))
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// number parses JSON number text. Integers beyond int64 come back as
// ValBigInt (the caller keeps the digits).
func number(w []byte) (trace.Value, bool) {
	if len(w) == 0 {
		return trace.Value{}, false
	}
	i, neg := 0, false
	if w[0] == '-' {
		i, neg = 1, true
	}
	if i == len(w) {
		return trace.Value{}, false
	}
	var n uint64
	j := i
	for ; j < len(w) && w[j] >= '0' && w[j] <= '9'; j++ {
		n = n*10 + uint64(w[j]-'0')
	}
	if j == len(w) && j > i {
		digits := j - i
		if digits <= 18 {
			if neg {
				return trace.IntValue(-int64(n)), true
			}
			return trace.IntValue(int64(n)), true
		}
		if v, err := strconv.ParseInt(string(w), 10, 64); err == nil {
			return trace.IntValue(v), true
		}
		return trace.Value{Kind: trace.ValBigInt}, true
	}
	if !validNumber(w) {
		return trace.Value{}, false
	}
	f, err := strconv.ParseFloat(string(w), 64)
	if err != nil && !math.IsInf(f, 0) {
		return trace.Value{}, false
	}
	return trace.FloatValue(f), true
}

// validNumber checks JSON number grammar (strconv accepts more: hex,
// underscores, "inf").
func validNumber(w []byte) bool {
	i := 0
	if i < len(w) && w[i] == '-' {
		i++
	}
	d := i
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	if i == d || (w[d] == '0' && i-d > 1) {
		return false
	}
	if i < len(w) && w[i] == '.' {
		i++
		d = i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(w) && (w[i] == 'e' || w[i] == 'E') {
		i++
		if i < len(w) && (w[i] == '+' || w[i] == '-') {
			i++
		}
		d = i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(w)
}

// key reads an object member's key and the colon after it. The key is
// valid until the next string is read.
func (s *scanner) key() []byte {
	s.ws()
	k := s.str()
	s.ws()
	s.expect(':')
	s.ws()
	return k
}

// more reads the separator after a member or element of what: true after
// a comma, false at the closing bracket.
func (s *scanner) more(closer byte, what string) bool {
	s.ws()
	switch s.next() {
	case ',':
		return true
	case closer:
		return false
	}
	s.pos--
	s.fail("expected ',' or '" + string(closer) + "' in " + what + ", found " + describe(s.peek()))
	return false
}

// skip passes over any value, leniently.
func (s *scanner) skip(depth int) {
	if depth > maxDepth {
		s.fail("values nested too deeply")
	}
	switch s.peek() {
	case '"':
		s.str()
	case '{':
		s.pos++
		s.ws()
		if s.peek() == '}' {
			s.pos++
			return
		}
		for {
			s.key()
			s.skip(depth + 1)
			if !s.more('}', "object") {
				return
			}
		}
	case '[':
		s.pos++
		s.ws()
		if s.peek() == ']' {
			s.pos++
			return
		}
		for {
			s.ws()
			s.skip(depth + 1)
			if !s.more(']', "array") {
				return
			}
		}
	default:
		w := s.word()
		switch string(w) {
		case "true", "false", "null":
			return
		}
		if _, ok := number(w); !ok {
			s.problem("bare word value", string(truncate(w, 40)))
		}
	}
}
