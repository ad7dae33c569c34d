package whatif

// Segments is the number of host segments m replays.
func Segments(m *Model) int {
	n := 0
	for _, r := range m.runs {
		n += len(r.segs)
	}
	return n
}
