// Package stats holds small statistics shared by the analyses.
package stats

import "slices"

// Median returns the median of xs (the mean of the two middle values for
// an even count; 0 for none), leaving xs unchanged.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
