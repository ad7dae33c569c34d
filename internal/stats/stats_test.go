package stats

import "testing"

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
