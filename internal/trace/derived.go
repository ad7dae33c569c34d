package trace

import (
	"runtime"
	"sync"
	"weak"
)

// Derived returns the value that build computes from the trace, building
// it once per trace and key: analyses run concurrently on one trace, and a
// table several of them need (the classification of every event name) is
// then built by the first and shared with the others. Keys are values of
// a type private to the package that owns the derived value, as with
// context keys. build must not change the trace, and its value must not
// refer to the trace (the entry lives until the trace is collected).
//
// The entries are kept outside the Trace, keyed by a weak pointer, so that
// a copy of a Trace (a test's trace with changed times) never shares them.
func (t *Trace) Derived(key any, build func() any) any {
	k := derivedKey{weak.Make(t), key}
	d, loaded := derived.LoadOrStore(k, new(derivedValue))
	if !loaded {
		runtime.AddCleanup(t, func(k derivedKey) { derived.Delete(k) }, k)
	}
	dv := d.(*derivedValue)
	dv.once.Do(func() { dv.v = build() })
	return dv.v
}

var derived sync.Map // derivedKey -> *derivedValue

type derivedKey struct {
	t   weak.Pointer[Trace]
	key any
}

type derivedValue struct {
	once sync.Once
	v    any
}
