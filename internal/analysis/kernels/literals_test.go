package kernels

import (
	"strings"
	"testing"
)

// holding agrees with containsAny, pattern by pattern, on every example
// name (lowercased) and on names built around each literal: at the start,
// at the end, overlapping another, and cut one byte short.
func TestLiteralsHoldingIsContainsAny(t *testing.T) {
	prepareRules()
	needs := make([][]string, len(Rules))
	for i := range Rules {
		needs[i] = Rules[i].match.needs
	}
	needs = append(needs, []string{"a"}, []string{"ab", "b"}, nil)
	l := newLiterals(needs)
	var names []string
	for _, r := range Rules {
		for _, ex := range r.Examples {
			names = append(names, strings.ToLower(ex))
		}
	}
	for _, lits := range needs {
		for _, s := range lits {
			names = append(names, s, "x"+s, s+"y", s[:len(s)-1], "ab"+s+"ba")
		}
	}
	names = append(names, "")
	checked := 0
	for _, name := range names {
		held := l.holding(name)
		for i, lits := range needs {
			if want := containsAny(name, lits); held[i] != want {
				t.Errorf("%.80q, pattern %d (%q): held %v, containsAny %v", name, i, lits, held[i], want)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Errorf("only %d checks", checked)
	}
}
