package trace

// cats keeps the events' categories. The reader derives an event's kind
// from its category, so in a trace nearly every kind comes from one
// category: an event's category is its kind's unless kept apart, 4 bytes
// an event less than a column of them.
type cats struct {
	byKind [numKinds]StrID // the category of the kind's first event
	seen   [numKinds]bool
	apart  Sparse[StrID] // events whose category is not their kind's
}

// of returns the category of event i, of kind k.
func (c *cats) of(k Kind, i int) StrID {
	if id, ok := c.apart.At(i); ok {
		return id
	}
	return c.byKind[k]
}

// add gives event i, of kind k and after every event so far, category cat.
func (c *cats) add(i int, k Kind, cat StrID) {
	switch {
	case !c.seen[k]:
		c.seen[k], c.byKind[k] = true, cat
	case cat != c.byKind[k]:
		c.apart.add(i, cat)
	}
}

// appendFrom adds the categories of src's events, their strings mapped by
// strs, for events numbered from base on.
func (c *cats) appendFrom(src *Events, strs []StrID, base int) {
	same := true // src's kinds have the categories of c's
	for k := range numKinds {
		if !src.cats.seen[k] {
			continue
		}
		id := strs[src.cats.byKind[k]]
		if !c.seen[k] {
			c.seen[k], c.byKind[k] = true, id
		}
		same = same && id == c.byKind[k]
	}
	if same {
		for e, cat := range src.cats.apart.All() {
			if id := strs[cat]; id != c.byKind[src.Kind[e]] {
				c.apart.add(base+int(e), id)
			}
		}
		return
	}
	for i, k := range src.Kind {
		if id := strs[src.cats.of(k, i)]; id != c.byKind[k] {
			c.apart.add(base+i, id)
		}
	}
}

func (c *cats) clear() {
	apart := c.apart
	apart.clear()
	*c = cats{apart: apart}
}

// Cat returns event i's category.
func (e *Events) Cat(i int) StrID { return e.cats.of(e.Kind[i], i) }
