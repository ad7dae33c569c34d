package trace

// links holds the Launch and Op links of the events that can have them,
// runtime and driver calls and device events (linkable). Dense, the two
// columns cost 8 bytes an event and held None on every other event: 97%
// of a trace of Python frames, 80% of the generator's default shape. Here
// they are kept for the linkable events only, numbered by a Subset: 8
// bytes a linkable event and 0.19 an event.
type links struct {
	kept   Subset
	launch []int32 // per kept event, in event order
	op     []int32
}

// linkable reports whether events of kind k keep Launch and Op links.
func linkable(k Kind) bool { return k.IsLaunch() || k.OnDevice() }

// newLinks keeps links, all None, for the linkable events among kinds.
func newLinks(kinds []Kind) links {
	l := links{kept: NewSubset(kinds, linkable)}
	l.launch, l.op = fill(l.kept.Len()), fill(l.kept.Len())
	return l
}

// valid reports whether l keeps one pair of links for each linkable event
// of kinds, and only for them.
func (l *links) valid(kinds []Kind) bool {
	return l.kept.of(kinds, linkable) && len(l.launch) == l.kept.Len() && len(l.op) == l.kept.Len()
}

// Launch returns the runtime or driver call that launched device event i
// (the one with its correlation id); None for other events, or when there
// is none.
func (e *Events) Launch(i int) int32 {
	if s := e.links.kept.Index(i); s >= 0 {
		return e.links.launch[s]
	}
	return None
}

// Op returns the operator that issued runtime call or device event i;
// None for other events, or when there is none.
func (e *Events) Op(i int) int32 {
	if s := e.links.kept.Index(i); s >= 0 {
		return e.links.op[s]
	}
	return None
}

func (e *Events) setLaunch(i int, l int32) { e.links.launch[e.links.kept.Index(i)] = l }

func (e *Events) setOp(i int, op int32) { e.links.op[e.links.kept.Index(i)] = op }
