package interval

import (
	"slices"
	"testing"
)

func TestSetAlgebra(t *testing.T) {
	a := Of([]Span{{5, 10}, {0, 3}, {2, 4}, {12, 12}})
	if want := (Set{{0, 4}, {5, 10}}); !slices.Equal(a, want) {
		t.Fatalf("Of = %v, want %v", a, want)
	}
	b := Set{{3, 6}, {8, 20}}
	if got, want := a.Intersect(b), (Set{{3, 4}, {5, 6}, {8, 10}}); !slices.Equal(got, want) {
		t.Errorf("Intersect = %v, want %v", got, want)
	}
	if got := a.OverlapLen(Span{2, 9}); got != 2+4 {
		t.Errorf("OverlapLen = %d, want 6", got)
	}
	if a.Total() != 9 {
		t.Errorf("Total = %d, want 9", a.Total())
	}
}
