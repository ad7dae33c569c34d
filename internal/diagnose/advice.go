package diagnose

import "strings"

// Alternative is a change beside a finding's first one.
type Alternative struct {
	// Kind is "then" for a change to make once the first is done (it
	// takes what is left), "or" for one to try instead of the change
	// before it.
	Kind string `json:"kind"`
	// Change is what to change and why it might help.
	Change string `json:"change"`
}

// altMark separates a change text's parts: the rules compose a change
// with thenDo and orTry, and Compute splits the text into the finding's
// Change and Alternatives (splitAlternatives), so that every rule, and
// every text a rule adds to another's, keeps one change first.
const altMark = "\x1e"

// thenDo adds to change what to do once it is done.
func thenDo(change, next string) string { return joinAlt(change, "then", next) }

// orTry adds to change what to try instead of it.
func orTry(change, other string) string { return joinAlt(change, "or", other) }

func joinAlt(change, kind, next string) string {
	if next == "" {
		return change
	}
	if change == "" {
		return next
	}
	return change + altMark + kind + altMark + next
}

// splitAlternatives moves the further changes of f.Change into
// f.Alternatives.
func splitAlternatives(f *Finding) {
	parts := strings.Split(f.Change, altMark)
	f.Change = parts[0]
	for i := 1; i+1 < len(parts); i += 2 {
		f.Alternatives = append(f.Alternatives, Alternative{Kind: parts[i], Change: parts[i+1]})
	}
}

// AllChanges is the finding's first change and its alternatives, in
// order, as one text ("; then ..." and "; or ..."): for a line where one
// sentence must do.
func (f Finding) AllChanges() string {
	var b strings.Builder
	b.WriteString(f.Change)
	for _, a := range f.Alternatives {
		b.WriteString("; " + a.Kind + " " + a.Change)
	}
	return b.String()
}
