package trace

import (
	"sync"
	"testing"
)

func TestDerivedOncePerTrace(t *testing.T) {
	type key struct{}
	tr := New("a.json")
	var builds int
	var mu sync.Mutex
	build := func() any {
		mu.Lock()
		defer mu.Unlock()
		builds++
		return new(int)
	}
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Go(func() { got[i] = tr.Derived(key{}, build) })
	}
	wg.Wait()
	for _, v := range got[1:] {
		if v != got[0] {
			t.Fatal("concurrent callers got different values")
		}
	}
	if builds != 1 {
		t.Fatalf("built %d times, want 1", builds)
	}
	type other struct{}
	if tr.Derived(other{}, build) == got[0] {
		t.Error("another key shares the value")
	}
	cp := New("b.json")
	if cp.Derived(key{}, build) == got[0] {
		t.Error("another trace shares the value")
	}
}
