package trace

import "fmt"

// Problem is something wrong with the input, found while reading it. Offset
// is the byte offset in the uncompressed stream where it was first seen;
// Count says how many times the same problem occurred (only the first is
// located, so a damaged file cannot flood the report).
type Problem struct {
	Offset int64
	What   string // short stable description, e.g. "invalid escape"
	Detail string // first occurrence's specifics
	Count  int
	// Fatal problems stopped the reading (the rest of the file was lost).
	Fatal bool
}

func (p Problem) String() string {
	s := fmt.Sprintf("byte %d: %s", p.Offset, p.What)
	if p.Detail != "" {
		s += " (" + p.Detail + ")"
	}
	if p.Count > 1 {
		s += fmt.Sprintf(", %d times", p.Count)
	}
	return s
}

// Problems collects problems, merging repeats of the same What.
type Problems struct {
	List  []Problem
	index map[string]int
}

// Add records a problem at offset.
func (ps *Problems) Add(offset int64, what, detail string) {
	ps.add(Problem{Offset: offset, What: what, Detail: detail, Count: 1})
}

// AddFatal records a problem that ended the reading.
func (ps *Problems) AddFatal(offset int64, what, detail string) {
	ps.add(Problem{Offset: offset, What: what, Detail: detail, Count: 1, Fatal: true})
}

func (ps *Problems) add(p Problem) {
	if ps.index == nil {
		ps.index = map[string]int{}
	}
	if i, ok := ps.index[p.What]; ok && !p.Fatal {
		ps.List[i].Count++
		return
	}
	ps.index[p.What] = len(ps.List)
	ps.List = append(ps.List, p)
}

// AddAll records the problems of o, found later in the same input.
func (ps *Problems) AddAll(o *Problems) {
	for _, p := range o.List {
		if i, ok := ps.index[p.What]; ok && !p.Fatal {
			ps.List[i].Count += p.Count
			continue
		}
		ps.add(p)
	}
}

// Any reports whether there are problems.
func (ps *Problems) Any() bool { return len(ps.List) > 0 }

// Fatal reports whether reading stopped early.
func (ps *Problems) Fatal() bool {
	for _, p := range ps.List {
		if p.Fatal {
			return true
		}
	}
	return false
}
