package runevidence

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// The program's source, read to tell what a sampled line runs under: a
// `with` block or a decorator around it (torch.no_grad, torch.autocast).
// The file is the program's source as it is now: a file changed since the
// run can only make a lookup miss.

// A block is a kind of `with` statement or decorator to look for.
type block struct {
	with, deco *regexp.Regexp
}

var (
	noGradBlock = block{
		with: regexp.MustCompile(`^\s*(async\s+)?with\b.*\b(no_grad|inference_mode)\s*\(`),
		deco: regexp.MustCompile(`^\s*@.*\b(no_grad|inference_mode)\b`),
	}
	// autocast on the CPU: torch.autocast("cpu"...) / device_type="cpu",
	// or torch.cpu.amp.autocast
	cpuAutocastBlock = block{
		with: regexp.MustCompile(`^\s*(async\s+)?with\b.*\b(autocast\s*\(\s*(device_type\s*=\s*)?["']cpu["']|cpu\.amp\.autocast\s*\()`),
		deco: regexp.MustCompile(`^\s*@.*\b(autocast\s*\(\s*(device_type\s*=\s*)?["']cpu["']|cpu\.amp\.autocast\b)`),
	}
	defLine  = regexp.MustCompile(`^\s*(async\s+)?(def|class)\s`)
	funcLine = regexp.MustCompile(`^\s*(async\s+)?def\s`)
)

// maxSourceBytes bounds the source read per file.
const maxSourceBytes = 4 << 20

// sourceCache holds the user's source files read so far (nil: unreadable)
// and the lines already looked up.
type sourceCache struct {
	root  string // the run directory, whose copy of a file is read first ("": none)
	files map[string][]string
	found map[blockAt]blockLine
	flows map[string]bool    // feedsStep's answers by frame chain
	defs  map[[2]string]bool // defRunsBackward's by file and name
}

// blockLine is a `with` or decorator line found (Line 0: none).
type blockLine struct {
	Line int
	Text string
}

type blockAt struct {
	file  string
	line  int
	block *block
}

func newSourceCache(root string) sourceCache {
	return sourceCache{root: root, files: map[string][]string{}, found: map[blockAt]blockLine{}, flows: map[string]bool{}, defs: map[[2]string]bool{}}
}

func (c sourceCache) lines(file string) []string {
	if ls, ok := c.files[file]; ok {
		return ls
	}
	var ls []string
	// the run directory's copy first: the code as it ran
	var f *os.File
	err := os.ErrNotExist
	if c.root != "" {
		f, err = os.Open(rundir.SourcePath(c.root, file))
	}
	if err != nil {
		f, err = os.Open(file)
	}
	if err == nil {
		sc := bufio.NewScanner(io.LimitReader(f, maxSourceBytes))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			ls = append(ls, sc.Text())
		}
		f.Close()
	}
	c.files[file] = ls
	return ls
}

// inNoGradBlock reports whether line (1-based) of file sits in a `with
// torch.no_grad():` / `inference_mode()` block, or in a function decorated
// with either, by indentation.
func (c sourceCache) inNoGradBlock(file string, line int) bool {
	return c.enclosing(file, line, &noGradBlock).Line > 0
}

// enclosing returns the `with` or decorator line of kind b that line
// (1-based) of file sits in, by indentation.
func (c sourceCache) enclosing(file string, line int, b *block) blockLine {
	k := blockAt{file, line, b}
	at, ok := c.found[k]
	if !ok {
		at = c.scan(file, line, b)
		c.found[k] = at
	}
	return at
}

func (c sourceCache) scan(file string, line int, b *block) blockLine {
	ls := c.lines(file)
	if line < 1 || line > len(ls) {
		return blockLine{}
	}
	indent := indentOf(ls[line-1])
	for i := line - 2; i >= 0 && indent > 0; i-- {
		l := ls[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") || indentOf(l) >= indent {
			continue
		}
		indent = indentOf(l)
		if b.with.MatchString(l) {
			return blockLine{i + 1, l}
		}
		if defLine.MatchString(l) {
			for j := i - 1; j >= 0 && strings.HasPrefix(strings.TrimSpace(ls[j]), "@"); j-- {
				if b.deco.MatchString(ls[j]) {
					return blockLine{j + 1, ls[j]}
				}
			}
		}
	}
	return blockLine{}
}

// dataFrameRows matches a DataFrame read row by row: positional or label
// indexing, or iteration over rows.
var dataFrameRows = regexp.MustCompile(`\.(iloc|loc|iat)\[|\.(iterrows|itertuples)\(`)

// readsDataFrameRows reports whether the function that line (1-based) of
// file sits in reads a DataFrame row by row (dataFrameRows on any line of
// its body). The sampler rarely sees pandas itself: its Python holds the
// GIL, so the samples land on the next call that releases it, a
// torch.tensor a line later.
func (c sourceCache) readsDataFrameRows(file string, line int) bool {
	ls := c.lines(file)
	if line < 1 || line > len(ls) {
		return false
	}
	def := -1
	for i, indent := line-2, indentOf(ls[line-1]); i >= 0 && indent > 0 && def < 0; i-- {
		if l := ls[i]; strings.TrimSpace(l) != "" && indentOf(l) < indent {
			indent = indentOf(l)
			if funcLine.MatchString(l) {
				def = i
			}
		}
	}
	if def < 0 {
		return false
	}
	for i := def + 1; i < len(ls); i++ {
		l := ls[i]
		if strings.TrimSpace(l) != "" && indentOf(l) <= indentOf(ls[def]) {
			break
		}
		if dataFrameRows.MatchString(l) {
			return true
		}
	}
	return false
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
