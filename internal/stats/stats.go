// Package stats holds small statistics shared by the analyses.
package stats

import (
	"iter"
	"slices"
)

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

// Top returns the first n elements of seq in the order cmp gives (a total
// order), in that order. It keeps only the best seen so far: most
// elements lose one comparison, and a table with a row per op name is
// neither held nor sorted whole.
func Top[T any](seq iter.Seq[T], n int, cmp func(a, b T) int) []T {
	if n <= 0 {
		return nil
	}
	best := make([]T, 0, n+1)
	for x := range seq {
		if len(best) == n && cmp(x, best[n-1]) >= 0 {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, x, cmp)
		best = slices.Insert(best, at, x)
		if len(best) > n {
			best = best[:n]
		}
	}
	return best
}

// Round1 rounds x to one decimal, halves away from zero: the precision
// the reports print shares and times in.
func Round1(x float64) float64 {
	if x < 0 {
		return -Round1(-x)
	}
	return float64(int64(x*10+0.5)) / 10
}
