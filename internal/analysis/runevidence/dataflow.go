package runevidence

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// Does a value computed without gradients feed the step's backward? A
// frozen teacher (distillation), a frozen encoder (a diffusion model's VAE
// and text encoder) or a target network runs its forward under no_grad in
// every step, and the loss needs its output: it is part of the step, not
// an evaluation pass. The program's source answers: the names the
// statement assigns are followed through the statements after it in the
// same function (an assignment from them carries them on, one from
// anything else ends them, a method call on an object stores them in it)
// until one reaches a `backward(` call. A `return` of them goes on in the
// caller's statement when the caller is the program's, and counts as
// feeding the step when a library called (a trainer's training_step or
// compute_loss returns the loss that the library backpropagates).
//
// This reads lines, not a syntax tree: strings and comments are blanked,
// statements are joined across brackets and backslashes, and names are
// matched as words. It errs towards "feeds" (more names followed than
// strictly flow), which silences the off-step rule rather than tell a
// user to move their loss out of the step.

// maxFlowStatements bounds the statements followed per function.
const maxFlowStatements = 2000

// A statement is one logical line of a function: first and last physical
// line (1-based), indentation, and its code with strings and comments
// blanked.
type statement struct {
	first, last, indent int
	code                string
}

var (
	backwardCall  = regexp.MustCompile(`\b(backward|autograd\.grad)\s*\(`) // loss.backward(), accelerator.backward(loss), torch.autograd.grad(loss, ...)
	returnStmt    = regexp.MustCompile(`^(return|yield)\b`)
	compoundStart = regexp.MustCompile(`^(async\s+)?(with|for|while|if|elif|else|try|except|finally)\b`)
	identifier    = regexp.MustCompile(`^[A-Za-z_][\w.]*$`)
)

// statements splits lines[from-1:] into logical statements, stopping at
// the first one indented at most stop (after the first statement), or
// after maxFlowStatements.
func statements(lines []string, from, stop int) []statement {
	var out []statement
	var cur strings.Builder
	depth, first := 0, 0
	quote := "" // the open triple-quoted string's delimiter
	for i := from - 1; i < len(lines) && len(out) < maxFlowStatements; i++ {
		l := lines[i]
		if cur.Len() == 0 && quote == "" {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			if len(out) > 0 && indentOf(l) <= stop {
				break
			}
			first = i + 1
		}
		code, cont := blankLine(l, &quote, &depth)
		cur.WriteString(code)
		cur.WriteByte(' ')
		if cont || depth > 0 || quote != "" {
			continue
		}
		out = append(out, statement{first, i + 1, indentOf(lines[first-1]), strings.TrimSpace(cur.String())})
		cur.Reset()
	}
	return out
}

// blankLine returns a physical line's code with its strings' contents
// and its comment removed, whether it continues with a backslash, and
// updates the open triple quote and bracket depth.
func blankLine(l string, quote *string, depth *int) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		if *quote != "" {
			if strings.HasPrefix(l[i:], *quote) {
				i += len(*quote) - 1
				*quote = ""
				b.WriteString(`""`)
			} else if l[i] == '\\' {
				i++
			}
			continue
		}
		switch c := l[i]; c {
		case '#':
			return b.String(), false
		case '"', '\'':
			if q := strings.Repeat(string(c), 3); strings.HasPrefix(l[i:], q) {
				*quote = q
				i += 2
				continue
			}
			*quote = string(c)
		case '(', '[', '{':
			*depth++
			b.WriteByte(c)
		case ')', ']', '}':
			*depth = max(0, *depth-1)
			b.WriteByte(c)
		case '\\':
			if i == len(l)-1 {
				return b.String(), true
			}
		default:
			b.WriteByte(c)
		}
	}
	if len(*quote) == 1 { // an unterminated one-quote string ends with the line
		*quote = ""
	}
	return b.String(), false
}

// body is the code a statement runs: a compound statement's inline body
// (`with torch.no_grad(): t = teacher(x)`), else the statement.
func (s statement) body() string {
	if !compoundStart.MatchString(s.code) {
		return s.code
	}
	if i := topLevel(s.code, ":"); i >= 0 {
		return strings.TrimSpace(s.code[i+1:])
	}
	return ""
}

// topLevel is the index of the first sep outside brackets, -1 if none.
func topLevel(code, sep string) int {
	depth := 0
	for i := 0; i < len(code); i++ {
		switch code[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		default:
			if depth == 0 && strings.HasPrefix(code[i:], sep) {
				return i
			}
		}
	}
	return -1
}

// assignment splits an assignment into the names it binds and its value;
// augmented reports `x += v` and the like (the target keeps what it
// held). ok is false for anything else.
func assignment(code string) (targets []string, value string, augmented, ok bool) {
	depth := 0
	for i := 0; i < len(code); i++ {
		switch c := code[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '=':
			if depth != 0 {
				continue
			}
			prev, next := byte(0), byte(0)
			if i > 0 {
				prev = code[i-1]
			}
			if i+1 < len(code) {
				next = code[i+1]
			}
			if next == '=' || prev == '=' || prev == '!' || prev == ':' {
				i++ // ==, !=, :=
				continue
			}
			if prev == '<' || prev == '>' { // <= >= unless <<= >>=
				if i < 2 || code[i-2] != prev {
					continue
				}
			}
			lhs := code[:i]
			if strings.ContainsRune("+-*/%&|^@<>", rune(prev)) {
				augmented = true
				lhs = strings.TrimRight(lhs, "+-*/%&|^@<>")
			}
			// chained `a = b = v`: every part but the value is a target
			value = code[i+1:]
			for {
				j := topLevel(value, "=")
				if j < 0 || augmented || j+1 < len(value) && value[j+1] == '=' || j > 0 && strings.ContainsRune("!<>", rune(value[j-1])) {
					break
				}
				lhs += "," + value[:j]
				value = value[j+1:]
			}
			return targetNames(lhs), value, augmented, true
		}
	}
	return nil, "", false, false
}

// targetNames are the names (dotted: self.out) an assignment's left side
// binds: `a, (b, c)`, `x[i]` (x), `y: Tensor` (y), `*rest`.
func targetNames(lhs string) []string {
	if i := topLevel(lhs, ":"); i >= 0 { // an annotation
		lhs = lhs[:i]
	}
	var out []string
	for _, part := range strings.FieldsFunc(lhs, func(r rune) bool { return r == ',' || r == '(' || r == ')' || r == '*' || r == ' ' }) {
		if i := strings.IndexByte(part, '['); i >= 0 {
			part = part[:i]
		}
		if identifier.MatchString(part) {
			out = append(out, part)
		}
	}
	return out
}

// mentions reports whether code uses any of the names as a word (a
// dotted name as a whole: self.out in self.out.logits).
func mentions(code string, names map[string]bool) bool {
	for n := range names {
		for i := 0; ; {
			j := strings.Index(code[i:], n)
			if j < 0 {
				break
			}
			j += i
			end := j + len(n)
			if (j == 0 || !isWordByte(code[j-1]) && code[j-1] != '.') && (end == len(code) || !isWordByte(code[end])) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// A flowFrame is a program frame of a sampled stack: its file and line.
type flowFrame struct {
	file string
	line int
	lib  bool // a library's (torch, site-packages): its code is not read
}

// feedsStep is feedsBackward for a sampled stack's frames (outermost
// first, ending at the program's line), once per distinct chain.
func (c sourceCache) feedsStep(p *pyprofile.Profile, frames []int) bool {
	var key strings.Builder
	chain := make([]flowFrame, len(frames))
	for i, fi := range frames {
		fr := p.Frames[fi]
		chain[i] = flowFrame{fr.File, fr.Line, pyprofile.IsLibraryFile(fr.File)}
		fmt.Fprintf(&key, "%s:%d\n", fr.File, fr.Line)
	}
	feeds, ok := c.flows[key.String()]
	if !ok {
		feeds = c.feedsBackward(chain)
		c.flows[key.String()] = feeds
	}
	return feeds
}

// feedsBackward reports whether what the statement at frames' innermost
// line computes (inside a `with torch.no_grad():` block there, every
// name the block assigns) reaches a backward call; frames run outermost
// first, and the outer ones are the callers a `return` goes back to.
func (c sourceCache) feedsBackward(frames []flowFrame) bool {
	for ; len(frames) > 0; frames = frames[:len(frames)-1] {
		fr := frames[len(frames)-1]
		if fr.lib {
			return true // a library called: it may backpropagate what it gets
		}
		stmts, at := c.function(fr.file, fr.line)
		if at < 0 {
			return false
		}
		tainted := map[string]bool{}
		seed := stmts[at : at+1]
		if with := c.enclosing(fr.file, fr.line, &noGradBlock); with.Line > 0 && !strings.HasPrefix(strings.TrimSpace(with.Text), "@") {
			// the whole block: `out = teacher(x)` then `t = out.logits`
			for at > 0 && stmts[at].first > with.Line {
				at--
			}
			seed = stmts[at:]
			for i, s := range seed[1:] {
				if s.indent <= seed[0].indent {
					seed = seed[:i+1]
					break
				}
			}
		}
		for _, s := range seed {
			addAll(tainted, binds(s.body()))
		}
		switch c.follow(fr.file, stmts[at+len(seed):], tainted) {
		case reachesBackward:
			return true
		case unused:
			return false
		}
	}
	return false
}

// mutators are the methods that store their argument in the object they
// are called on.
var mutators = regexp.MustCompile(`^([A-Za-z_][\w.]*)\.(append|extend|insert|update|copy_|add_|put|put_nowait|set_)\s*\(`)

// What becomes of the tainted names in a function.
type flow int

const (
	unused          flow = iota
	reachesBackward      // a backward call uses them
	returned             // the function returns them to its caller
)

// binds are the names a statement stores its values in: an
// assignment's targets, or the object a mutator is called on
// (feats.append(t), buf.copy_(t)).
func binds(code string) []string {
	if t, _, _, ok := assignment(code); ok {
		return t
	}
	if m := mutators.FindStringSubmatch(code); m != nil {
		return m[1:2]
	}
	return nil
}

// follow follows the tainted names through stmts of file.
func (c sourceCache) follow(file string, stmts []statement, tainted map[string]bool) flow {
	for _, s := range stmts {
		if len(tainted) == 0 {
			return unused
		}
		code := s.body()
		t, value, aug, ok := assignment(code)
		if !ok {
			value = code
		}
		if !mentions(value, tainted) {
			if ok && !aug {
				for _, n := range t { // reassigned from other values
					delete(tainted, n)
				}
			}
			continue
		}
		switch {
		case backwardCall.MatchString(code) || c.callsBackward(file, code):
			return reachesBackward
		case returnStmt.MatchString(code):
			return returned
		default:
			addAll(tainted, binds(code))
		}
	}
	return unused
}

// callName finds the functions and methods a statement calls.
var callName = regexp.MustCompile(`([A-Za-z_]\w*)\s*\(`)

// callsBackward reports whether code calls a function of file whose body
// runs a backward call: train_step(x, t) that backpropagates inside.
func (c sourceCache) callsBackward(file string, code string) bool {
	for _, m := range callName.FindAllStringSubmatch(code, -1) {
		k := [2]string{file, m[1]}
		has, ok := c.defs[k]
		if !ok {
			has = c.defRunsBackward(file, m[1])
			c.defs[k] = has
		}
		if has {
			return true
		}
	}
	return false
}

// defRunsBackward reports whether a function named name defined in file
// has a backward call in its body.
func (c sourceCache) defRunsBackward(file, name string) bool {
	ls := c.lines(file)
	for i, l := range ls {
		t := strings.TrimPrefix(strings.TrimSpace(l), "async ")
		if !strings.HasPrefix(t, "def "+name) || !strings.HasPrefix(strings.TrimSpace(t[len("def "+name):]), "(") {
			continue
		}
		for _, s := range statements(ls, i+1, indentOf(l)) {
			if backwardCall.MatchString(s.code) {
				return true
			}
		}
	}
	return false
}

// function returns the statements of the function whose body holds line
// (1-based) of file (the module's at module level), and the index of
// the one holding the line, -1 if none.
func (c sourceCache) function(file string, line int) ([]statement, int) {
	ls := c.lines(file)
	if line < 1 || line > len(ls) {
		return nil, -1
	}
	from, stop := 1, -1
	if fn := enclosingDef(ls, line); fn >= 0 {
		from, stop = fn+1, indentOf(ls[fn])
	}
	stmts := statements(ls, from, stop)
	for i, s := range stmts {
		if s.first <= line && line <= s.last {
			return stmts, i
		}
	}
	return nil, -1
}

// enclosingDef is the 0-based index of the `def` line whose body holds
// line (1-based), -1 at module level.
func enclosingDef(ls []string, line int) int {
	indent := indentOf(ls[line-1])
	for i := line - 2; i >= 0 && indent > 0; i-- {
		l := ls[i]
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") || indentOf(l) >= indent {
			continue
		}
		indent = indentOf(l)
		if defLine.MatchString(l) {
			return i
		}
	}
	return -1
}

func addAll(m map[string]bool, names []string) {
	for _, n := range names {
		m[n] = true
	}
}
