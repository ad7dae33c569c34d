package stats

import (
	"cmp"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	xs := []float64{5, 1, 3}
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {xs, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Error("Median sorted its input")
	}
}

// Top gives the first n of a full sort, for n below, at and above the
// length.
func TestTop(t *testing.T) {
	s := []int{5, 3, 9, 1, 7, 3, 8, 0, 2}
	sorted := slices.Sorted(slices.Values(s))
	for n := range len(s) + 2 {
		got := Top(slices.Values(s), n, cmp.Compare[int])
		if want := sorted[:min(n, len(s))]; !slices.Equal(got, want) {
			t.Errorf("Top(%d) = %v, want %v", n, got, want)
		}
	}
	if s[0] != 5 {
		t.Error("Top changed its input")
	}
}
