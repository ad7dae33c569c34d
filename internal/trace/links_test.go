package trace

import "testing"

// Links are kept for launches and device events only, each found at its
// place across words of 64 events; Validate catches links kept for the
// wrong events or counted wrong.
func TestLinksKeptForLaunchesAndDeviceEvents(t *testing.T) {
	kinds := make([]Kind, 200)
	for i := range kinds {
		switch {
		case i%7 == 0:
			kinds[i] = KindKernel
		case i%5 == 0:
			kinds[i] = KindRuntime
		default:
			kinds[i] = KindPythonFunction
		}
	}
	ev := Events{Kind: kinds, links: newLinks(kinds)}
	for i, k := range kinds {
		if linkable(k) {
			ev.setLaunch(i, int32(i))
			ev.setOp(i, int32(-i))
		}
	}
	for i, k := range kinds {
		l, op := ev.Launch(i), ev.Op(i)
		if linkable(k) && (l != int32(i) || op != int32(-i)) || !linkable(k) && (l != None || op != None) {
			t.Fatalf("event %d (%s): launch %d, op %d", i, k, l, op)
		}
	}
	if ev.Launch(len(kinds)) != None || (&Events{}).Op(3) != None {
		t.Error("an event past the last, or of an unlinked trace, has links")
	}
	if !ev.links.valid(kinds) {
		t.Fatal("valid links reported invalid")
	}
	for name, corrupt := range map[string]func(l *links){
		"kept for a host event": func(l *links) { l.kept.has[1] |= 1 << 2 }, // event 66
		"miscounted":            func(l *links) { l.kept.before[2]++ },
		"past the last event":   func(l *links) { l.kept.has[3] |= 1 << 63 },
		"one link short":        func(l *links) { l.op = l.op[1:] },
	} {
		l := newLinks(kinds)
		corrupt(&l)
		if l.valid(kinds) {
			t.Errorf("%s: reported valid", name)
		}
	}
}
