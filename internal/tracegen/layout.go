package tracegen

// Layout is how the JSON is laid out: the same events, other whitespace.
type Layout string

const (
	// LayoutDefault is Kineto's own: a line or two per event.
	LayoutDefault Layout = ""
	// LayoutCompact has no whitespace at all: the whole trace on one
	// line, as json.dump(obj) or a minifier writes it.
	LayoutCompact Layout = "compact"
	// LayoutIndent has one member per line, indented by two spaces per
	// level, as json.dump(obj, indent=2) writes it.
	LayoutIndent Layout = "indent"
)

// relayout rewrites the generator's output in another layout as it is
// flushed; it keeps its state between buffers, so a buffer may end
// anywhere, inside a string too.
type relayout struct {
	indent      bool
	inStr, esc  bool
	depth       int
	pendingOpen bool // a '{' or '[' whose line break waits for the next token
}

func newRelayout(l Layout) *relayout {
	if l == LayoutDefault {
		return nil
	}
	return &relayout{indent: l == LayoutIndent}
}

// append appends src, relaid, to dst.
func (r *relayout) append(dst, src []byte) []byte {
	for _, c := range src {
		if r.inStr {
			dst = append(dst, c)
			switch {
			case r.esc:
				r.esc = false
			case c == '\\':
				r.esc = true
			case c == '"':
				r.inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		if !r.indent {
			dst = append(dst, c)
			r.inStr = c == '"'
			continue
		}
		if r.pendingOpen {
			r.pendingOpen = false
			if c == '}' || c == ']' { // empty: "{}" as json.dump writes it
				r.depth--
				dst = append(dst, c)
				continue
			}
			dst = r.newline(dst)
		}
		switch c {
		case '{', '[':
			dst = append(dst, c)
			r.depth++
			r.pendingOpen = true
		case '}', ']':
			r.depth--
			dst = append(r.newline(dst), c)
		case ',':
			dst = r.newline(append(dst, c))
		case ':':
			dst = append(dst, ": "...)
		default:
			dst = append(dst, c)
			r.inStr = c == '"'
		}
	}
	return dst
}

func (r *relayout) newline(dst []byte) []byte {
	dst = append(dst, '\n')
	for range r.depth {
		dst = append(dst, "  "...)
	}
	return dst
}
