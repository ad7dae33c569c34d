package kernels

import "strings"

// literals finds which of several patterns' literals (requiredLiterals)
// a lowercased name holds, in one pass over the name: looking for each
// rule's literals in turn (strings.Contains, ~200 literals) was most of
// classifying a name once the patterns were filtered (22 µs a name on
// testdata's kernel names).
type literals struct {
	byFirst [256][]literal // by their first byte
	// pairs has bit a<<8|b set when a literal starts with bytes a, b, or
	// is the one byte a: most of a name's positions start none
	pairs [1 << 16 / 64]uint64
	n     int // patterns
}

type literal struct {
	s       string
	pattern int
}

// newLiterals indexes needs[i], pattern i's literals (nil: none known).
func newLiterals(needs [][]string) *literals {
	l := &literals{n: len(needs)}
	for i, lits := range needs {
		for _, s := range lits {
			if s == "" {
				continue
			}
			l.byFirst[s[0]] = append(l.byFirst[s[0]], literal{s, i})
			if len(s) == 1 {
				for b := range 256 {
					l.setPair(s[0], byte(b))
				}
			} else {
				l.setPair(s[0], s[1])
			}
		}
	}
	return l
}

// holding reports, for each pattern, whether lower holds one of its
// literals: holding(lower)[i] is containsAny(lower, needs[i]).
func (l *literals) holding(lower string) []bool {
	held := make([]bool, l.n)
	for i := 0; i+1 < len(lower); i++ {
		if !l.hasPair(lower[i], lower[i+1]) {
			continue
		}
		for _, lit := range l.byFirst[lower[i]] {
			if !held[lit.pattern] && strings.HasPrefix(lower[i:], lit.s) {
				held[lit.pattern] = true
			}
		}
	}
	if n := len(lower); n > 0 { // the last byte: one-byte literals only
		for _, lit := range l.byFirst[lower[n-1]] {
			if len(lit.s) == 1 {
				held[lit.pattern] = true
			}
		}
	}
	return held
}

func (l *literals) setPair(a, b byte) {
	k := uint(a)<<8 | uint(b)
	l.pairs[k/64] |= 1 << (k % 64)
}

func (l *literals) hasPair(a, b byte) bool {
	k := uint(a)<<8 | uint(b)
	return l.pairs[k/64]&(1<<(k%64)) != 0
}
