package trace

// SetLaunch lets the external tests corrupt a launch link.
func (e *Events) SetLaunch(i int, l int32) { e.setLaunch(i, l) }

// SparseOf builds a sparse column of the given events (ascending) and
// values, for the external tests to corrupt a trace with.
func SparseOf[V any](events []int32, values []V) Sparse[V] {
	var s Sparse[V]
	for j, e := range events {
		s.add(int(e), values[j])
	}
	return s
}
