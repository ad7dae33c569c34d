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
//
// What a unit passes over without keeping (a skipped value, the part of a
// string past maxString, whitespace) must not have to stay in the window
// while the unit is re-parsed, or one long value would need its size in
// memory. As the scanner passes such a stretch it marks it removable
// (window.removable) when re-parsing without it gives the same result;
// before a refill the window drops the marked stretches (window.cut) and
// remembers where, so offsets stay those of the input. Problems found in a
// dropped stretch are already recorded: the re-parse skips as many
// problems as the previous attempt recorded, less those (scanner.problem).

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
	errNeedMore      = errors.New("need more input")
	errNeedMoreSpace = errors.New("need more input after whitespace")
	errTruncated     = errors.New("input ends mid-value")
)

type syntaxError struct {
	off int64
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// maxDepth bounds the recursion of skip so hostile input cannot exhaust
// the stack; deeper levels are passed over by skipDeep, which does not
// recurse, so valid JSON of any depth is read.
const maxDepth = 512

// maxDeepDepth bounds skipDeep's stack (24 bytes a level): deeper input is
// damage. encoding/json stops at 10,000.
const maxDeepDepth = 100_000

// maxString is the most of a string kept in the model (decoded bytes; a
// longer one is truncated at a character boundary and reported), and the
// longest array or object argument value kept (a longer one reads as
// null), number or bare word read (a longer one is damage). Variable so
// tests can shrink it.
var maxString = 64 << 10

// maxMetadata is the largest top-level member other than traceEvents that
// is kept (a longer one is reported and left out): distributedInfo lists
// process groups, which grow with the job, and the window must hold it
// under small memory limits (an eighth of --max-memory).
var maxMetadata = 4 << 20

// sizeText writes n bytes in whole KiB or MiB where it can.
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// fastPaths enables the scanner's shortcuts for the common case (keys,
// simple arrays); tests turn them off to check that they read what the
// general paths read.
var fastPaths = true

// minCut is the shortest stretch worth dropping from the window; tests
// lower it.
var minCut = 256

// window is the refillable input buffer.
type window struct {
	src     io.Reader
	buf     []byte
	pos     int
	end     int
	base    int64 // stream offset of buf[0], less the gaps
	keep    int   // bytes from here on must survive a refill
	eof     bool
	readErr error
	onFill  func(consumed int64)
	cuts    []cut // removable stretches found by the current attempt, by position
	gaps    []gap // where dropped bytes were, by position
	lock    int   // no stretch starting before this may be dropped (a value being kept)
}

// cut is a removable stretch buf[from:to] and the number of problems the
// scanner reported inside it.
type cut struct{ from, to, calls int }

// gap records n bytes of input dropped just before buf[at].
type gap struct {
	at int
	n  int64
}

// fill makes room and reads more input. It returns false at end of input.
func (w *window) fill() bool {
	if w.eof {
		return false
	}
	if w.keep > 0 {
		n := copy(w.buf, w.buf[w.keep:w.end])
		w.base += int64(w.keep)
		i := 0
		for ; i < len(w.gaps) && w.gaps[i].at <= w.keep; i++ {
			w.base += w.gaps[i].n
		}
		w.gaps = append(w.gaps[:0], w.gaps[i:]...)
		for j := range w.gaps {
			w.gaps[j].at -= w.keep
		}
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
		w.onFill(w.offsetAt(w.end))
	}
	return got > 0
}

// offset is the stream offset of the current position.
func (w *window) offset() int64 { return w.offsetAt(w.pos) }

// offsetAt is the stream offset of buf[p].
func (w *window) offsetAt(p int) int64 {
	off := w.base + int64(p)
	for _, g := range w.gaps {
		if g.at > p {
			break
		}
		off += g.n
	}
	return off
}

// removable marks buf[from:to] as droppable should the attempt run out of
// input (calls: the problems reported inside it). A stretch that encloses
// stretches marked before (a value that contains them) replaces them.
func (w *window) removable(from, to, calls int) {
	if to-from < minCut || from < w.lock {
		return
	}
	n := len(w.cuts)
	for n > 0 && w.cuts[n-1].from >= from {
		n--
	}
	w.cuts = append(w.cuts[:n], cut{from, to, calls})
}

// cut drops the removable stretches of an attempt that ran out of input
// (they all lie after keep) and returns how many problems they held.
func (w *window) cut() (calls int) {
	if len(w.cuts) == 0 {
		return 0
	}
	old, gaps := w.gaps, []gap(nil)
	dst, src, removed, gi := w.cuts[0].from, w.cuts[0].from, 0, 0
	for _, c := range w.cuts {
		if c.from < src {
			continue // overlaps the previous stretch: kept, which is always safe
		}
		for ; gi < len(old) && old[gi].at < c.from; gi++ {
			gaps = append(gaps, gap{old[gi].at - removed, old[gi].n})
		}
		n := int64(c.to - c.from)
		for ; gi < len(old) && old[gi].at <= c.to; gi++ {
			n += old[gi].n // a gap inside or at the edge of the stretch joins it
		}
		dst += copy(w.buf[dst:], w.buf[src:c.from])
		gaps = append(gaps, gap{dst, n})
		removed += c.to - c.from
		src = c.to
		calls += c.calls
	}
	for ; gi < len(old); gi++ {
		gaps = append(gaps, gap{old[gi].at - removed, old[gi].n})
	}
	dst += copy(w.buf[dst:], w.buf[src:w.end])
	w.end, w.gaps, w.cuts = dst, gaps, w.cuts[:0]
	return calls
}

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
		panic(errNeedMoreSpace)
	}
}

// cutSpace marks the whitespace at the end of the window removable but
// for its first byte, which keeps the tokens around it apart, after an
// attempt ran out of input inside it (errNeedMoreSpace: ws and quoteEnds,
// which must stay small enough to inline, cannot do it).
func (w *window) cutSpace() {
	k := w.end
	for k > w.keep && isSpace[w.buf[k-1]] {
		k--
	}
	w.removable(max(k+1, w.lock), w.end, 0)
}

// isSpace, strStop and wordStop are lookup tables for the innermost
// loops.
var isSpace, strStop, wordStop [256]bool

func init() {
	for _, c := range " \n\r\t" {
		isSpace[c] = true
	}
	for c := range 256 {
		strStop[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80
		wordStop[c] = isDelim(byte(c)) || c == '"' || c == '{' || c == '['
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
	calls   int // problems reported by this attempt at the unit
	replay  int // of which the first replay were recorded by earlier attempts
	cache   internCache
	// wentDeep says skip passed over a value nested beyond maxDepth
	// (skipDeep) since it was last cleared.
	wentDeep bool
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
	s.cache.strs[h], s.cache.ids[h] = s.t.Str(id), id
	return id
}

// pendingProblem is the first of count problems of one kind in a unit
// (one entry per kind, so a unit's damage cannot grow the list).
type pendingProblem struct {
	off          int64
	what, detail string
	count        int
}

func (s *scanner) problem(what, detail string) {
	if s.calls++; s.calls <= s.replay {
		return // an earlier attempt at this unit recorded it
	}
	for i := range s.pending {
		if s.pending[i].what == what {
			s.pending[i].count++
			return
		}
	}
	s.pending = append(s.pending, pendingProblem{s.offset(), what, detail, 1})
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
// bytes, at most maxString of them, valid until the next call. It repairs
// what real traces break: invalid escapes are kept literally, control
// characters and invalid UTF-8 are kept (invalid UTF-8 replaced by U+FFFD,
// as encoding/json does), and a quote not followed by a delimiter is taken
// as part of the string.
func (s *scanner) str() []byte { return s.readStr(true) }

// skipStr passes over a string, reporting the same problems as str.
func (s *scanner) skipStr() { s.readStr(false) }

// readStr is the fast path of str and skipStr: a string without escapes
// or damage that the window holds. Anything else is read by strLong.
func (s *scanner) readStr(keep bool) []byte {
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
			return s.strLong(start, keep)
		}
		c := buf[pos]
		switch {
		case c == '"':
			b := buf[start:pos]
			if !s.quoteEnds(!keep) || keep && len(b) > maxString || !ascii && !utf8.Valid(b) {
				return s.strLong(start, keep)
			}
			if !keep && pos-start >= minCut {
				s.removable(start, pos, 0)
			}
			s.pos++
			return b
		case c == '\\' || c < 0x20:
			return s.strLong(start, keep)
		}
		ascii = false
		s.pos++
	}
}

// quoteEnds reports whether the quote at pos closes the string: the next
// non-space byte must be a delimiter. discard says the string is not
// kept from here, so the whitespace after the quote may be dropped.
func (s *scanner) quoteEnds(discard bool) bool {
	for i := s.pos + 1; ; i++ {
		if i >= s.end {
			if s.eof {
				return true
			}
			if discard {
				panic(errNeedMoreSpace) // what follows the quote is whitespace
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

// strLong reads the string whose body starts at start from there: with
// escapes, damage, more than maxString bytes or more than the window
// holds. When keep, it returns the decoded text, truncated (and reported)
// at a character boundary before maxString bytes; otherwise nothing. What
// is not kept is only checked for problems, and marked removable as it is
// passed, so that neither a long skipped string nor the tail of a long
// kept one has to stay in the window.
func (s *scanner) strLong(start int, keep bool) []byte {
	s.pos = start
	out := s.strBuf[:0]
	full := !keep        // nothing more is kept
	invalid := false     // invalid UTF-8 seen
	from, calls := -1, 0 // the removable stretch starts at from, after calls problems
	hold := start        // and not before this (what decided an earlier step)
	var esc [8]byte
	add := func(b []byte) {
		if full {
			return
		}
		if len(out)+len(b) > maxString {
			// The character that does not fit is read before the
			// removable stretch, so a re-read truncates at the same place.
			full = true
			s.problem("string too long", "truncated to its first "+strconv.Itoa(len(out))+" bytes")
			return
		}
		out = append(out, b...)
	}
	for {
		if full && from < 0 && s.pos >= max(s.lock, hold) {
			from, calls = s.pos, s.calls
		}
		if from >= 0 {
			s.removable(from, s.pos, s.calls-calls)
		}
		if s.pos >= s.end {
			panic(errNeedMore)
		}
		switch c := s.buf[s.pos]; {
		case !strStop[c]:
			p := s.pos + 1
			for p < s.end && !strStop[s.buf[p]] {
				p++
			}
			if full && from < 0 && p > max(s.lock, hold) {
				from, calls = max(s.pos, s.lock, hold), s.calls // any byte of the run will do
			}
			if room := maxString - len(out); !full && p-s.pos > room {
				// Keep what fits; the next byte reports the truncation
				// and the rest of the run is passed over.
				out = append(out, s.buf[s.pos:s.pos+room]...)
				s.pos += room
				p = s.pos + 1
			}
			add(s.buf[s.pos:p])
			s.pos = p
		case c == '"':
			if s.quoteEnds(full) {
				s.pos++
				if invalid {
					s.problem("invalid UTF-8", "replaced by U+FFFD")
				}
				s.strBuf = out
				return out
			}
			s.problem("unescaped quote in string", "")
			// The first byte after the quote and its spaces decided that
			// it does not end the string: no stretch may start before it.
			for hold = s.pos + 1; isSpace[s.buf[hold]]; hold++ {
			}
			hold++
			s.pos++
			add(s.buf[s.pos-1 : s.pos])
		case c == '\\':
			s.pos++
			b, looked := s.escape(esc[:0], !full)
			hold = max(hold, looked) // what decided the escape stays
			add(b)
		case c < 0x20:
			s.pos++
			s.problem("control character in string", "byte 0x"+strconv.FormatUint(uint64(c), 16))
			add(s.buf[s.pos-1 : s.pos])
		default: // c >= 0x80
			if !utf8.FullRune(s.buf[s.pos:s.end]) && !s.eof {
				panic(errNeedMore)
			}
			r, size := utf8.DecodeRune(s.buf[s.pos:s.end])
			if r == utf8.RuneError && size == 1 {
				if !full || !invalid {
					// Deciding looked at up to 4 bytes, and this one
					// matters (for what is kept, or as the first): a
					// stretch starts after them.
					hold = max(hold, min(s.pos+4, s.end))
				}
				if !invalid {
					invalid, from = true, -1
				}
				add([]byte("\uFFFD"))
			} else {
				add(s.buf[s.pos : s.pos+size])
			}
			s.pos += size
		}
	}
}

// escape decodes the escape after a backslash onto out. It also returns
// the end of the bytes it looked at, which can lie past what it consumed
// (an invalid escape, a lone surrogate). Without pairs a surrogate reads
// as U+FFFD without looking for its other half: for text that is not
// kept, where that changes nothing but would look ahead.
func (s *scanner) escape(out []byte, pairs bool) ([]byte, int) {
	c := s.next()
	switch c {
	case '"', '\\', '/':
		return append(out, c), s.pos
	case 'b':
		return append(out, '\b'), s.pos
	case 'f':
		return append(out, '\f'), s.pos
	case 'n':
		return append(out, '\n'), s.pos
	case 'r':
		return append(out, '\r'), s.pos
	case 't':
		return append(out, '\t'), s.pos
	case 'u':
		r, ok := s.hex4()
		if !ok {
			s.problem("invalid \\u escape", "kept as text")
			return append(out, '\\', 'u'), min(s.pos+4, s.end)
		}
		looked := s.pos
		if utf16.IsSurrogate(r) && !pairs {
			r = utf8.RuneError
		} else if utf16.IsSurrogate(r) {
			// A valid pair is \uD8xx\uDCxx; anything else is U+FFFD.
			looked = min(s.pos+6, s.end)
			if s.pos+1 < s.end && s.buf[s.pos] == '\\' && s.buf[s.pos+1] == 'u' {
				save := s.pos
				s.pos += 2
				if r2, ok := s.hex4(); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						return utf8.AppendRune(out, dec), s.pos
					}
				}
				s.pos = save
			} else if s.pos+1 >= s.end && !s.eof {
				panic(errNeedMore)
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(out, r), looked
	}
	// Invalid escape, typically a Windows path: keep the backslash.
	s.pos--
	s.problem("invalid escape in string", "\\"+string(c)+" kept literally")
	return append(out, '\\'), s.pos + 1
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

// word reads a bare token (number, literal, or damage such as N/A) up to
// the next delimiter. One longer than maxString is damage.
func (s *scanner) word() []byte {
	start := s.pos
	buf, pos := s.buf[:s.end], s.pos
	for pos < len(buf) && !wordStop[buf[pos]] {
		pos++
	}
	s.pos = pos
	if pos >= len(buf) && !(s.eof && pos > start) {
		if pos-start > maxString {
			s.wordTooLong(start)
		}
		panic(errNeedMore)
	}
	if s.pos == start {
		s.fail("expected a value, found " + describe(s.buf[s.pos]))
	}
	if s.pos-start > maxString {
		s.wordTooLong(start)
	}
	return s.buf[start:s.pos]
}

func (s *scanner) wordTooLong(start int) {
	s.pos = start
	s.fail("number or bare word longer than " + sizeText(maxString))
}

// value reads any value into a trace.Value, interning text.
func (s *scanner) value() trace.Value {
	switch c := s.peek(); c {
	case '"':
		return trace.StrValue(s.intern(s.str()))
	case '{', '[':
		start, lock := s.pos, s.lock
		s.lock = max(lock, start+maxString) // what is kept must stay
		s.skip(0)
		s.lock = lock
		if end := s.pos; s.offsetAt(end)-s.offsetAt(start) > int64(maxString) {
			s.pos = start // the problem names where the value starts
			s.problem("array or object value too long", "longer than "+sizeText(maxString)+"; read as null")
			s.pos = end
			return trace.Value{}
		}
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
	// Fast path: a key of printable ASCII with the colon right after it,
	// as every writer of traces puts it.
	if buf, start := s.buf[:s.end], s.pos+1; fastPaths && start < len(buf) && buf[start-1] == '"' {
		end := start
		for end < len(buf) && !strStop[buf[end]] {
			end++
		}
		if end+1 < len(buf) && buf[end] == '"' && buf[end+1] == ':' && end-start <= maxString {
			s.pos = end + 2
			s.ws()
			return buf[start:end]
		}
	}
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

// skipSimpleArray passes over an array at pos, if the window holds it
// whole, it is shorter than minCut (so skip would mark nothing removable)
// and it holds only arrays, integers and strings of printable ASCII
// without escapes, well formed: the shapes, strides and type names of
// PyTorch's op args. It reports whether it did; otherwise it has changed
// nothing, and skip reads the value with all its checks.
func (s *scanner) skipSimpleArray() bool {
	const (
		valueOrClose = iota // after '['
		value               // after ','
		commaOrClose        // after a value
	)
	buf := s.buf[:min(s.end, s.pos+minCut)]
	depth, state := 0, valueOrClose
	for i := s.pos; i < len(buf); i++ {
		switch c := buf[i]; {
		case isSpace[c]:
		case c == '[' && state != commaOrClose:
			if depth++; depth > 8 {
				return false
			}
			state = valueOrClose
		case c == ']' && state != value:
			if depth--; depth == 0 {
				s.pos = i + 1
				return true
			}
			state = commaOrClose
		case c == ',' && state == commaOrClose:
			state = value
		case state == commaOrClose:
			return false
		case c == '"':
			j := i + 1
			for j < len(buf) && !strStop[buf[j]] {
				j++
			}
			if j == len(buf) || buf[j] != '"' {
				return false
			}
			i, state = j, commaOrClose
		case c == '-' || c >= '0' && c <= '9':
			j := i
			if c == '-' {
				j++
			}
			k := j
			for k < len(buf) && buf[k] >= '0' && buf[k] <= '9' {
				k++
			}
			if k == j || k == len(buf) || !wordStop[buf[k]] {
				return false // no digits, a fraction or exponent, or more
			}
			i, state = k-1, commaOrClose
		default:
			return false
		}
	}
	return false
}

// skip passes over any value, leniently. Members and elements after the
// first are marked removable as they are passed: after each comma the
// scanner is where it was after the first.
func (s *scanner) skip(depth int) {
	if depth > maxDepth {
		if c := s.peek(); c == '{' || c == '[' {
			s.wentDeep = true
			s.skipDeep()
			return
		}
	}
	switch s.peek() {
	case '"':
		s.skipStr()
	case '{', '[':
		if fastPaths && s.skipSimpleArray() {
			return
		}
		closer, what := byte('}'), "object"
		if s.peek() == '[' {
			closer, what = ']', "array"
		}
		s.pos++
		s.ws()
		if s.peek() == closer {
			s.pos++
			return
		}
		from, calls := -1, 0
		for {
			s.ws()
			if closer == '}' { // the key, as key() reads it
				s.skipStr()
				s.ws()
				s.expect(':')
				s.ws()
			}
			s.skip(depth + 1)
			if !s.more(closer, what) {
				return
			}
			if from < 0 && s.pos >= s.lock {
				from, calls = s.pos, s.calls
			} else if from >= 0 {
				s.removable(from, s.pos, s.calls-calls)
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

// skipDeep passes over the array or object at pos, nested to any depth,
// without recursion: one byte of closer per level, as skip marking what
// follows each level's first comma removable. Keys and values are not
// checked beyond their brackets, strings and words: the value is left out.
func (s *scanner) skipDeep() {
	type level struct {
		closer      byte
		from, calls int
	}
	var stack []level
	for {
		s.ws()
		switch c := s.peek(); c {
		case '{', '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if len(stack)+maxDepth >= maxDeepDepth {
				s.fail("values nested too deeply")
			}
			stack = append(stack, level{closer, -1, 0})
			s.pos++
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1].closer != c {
				s.fail("unbalanced " + describe(c) + " in a deeply nested value")
			}
			stack = stack[:len(stack)-1]
			s.pos++
			if len(stack) == 0 {
				return
			}
		case ',':
			s.pos++
			l := &stack[len(stack)-1]
			if l.from < 0 && s.pos >= s.lock {
				l.from, l.calls = s.pos, s.calls
			} else if l.from >= 0 {
				s.removable(l.from, s.pos, s.calls-l.calls)
			}
		case ':':
			s.pos++
		case '"':
			s.skipStr()
		default:
			s.word()
		}
	}
}
