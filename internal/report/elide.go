package report

// ElideMiddle keeps the start and the end of s, n runes in all (long
// names in fixed-width tables).
func ElideMiddle(s string, n int) string { return elideMiddle(s, n) }
