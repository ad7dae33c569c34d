package trace

import (
	"hash/maphash"
	"unsafe"
)

// Design note: a trace with generated names (one per op) interns hundreds
// of thousands of strings. Kept as Go strings in a slice and a map, each
// is an object of its own plus a map entry, which the collector visits at
// every cycle. Here their bytes are packed into large chunks and found
// through an open-addressing index of ids: nothing per string holds a
// pointer, so the table costs ~20 bytes a string above its bytes and no
// collector work. Str returns strings that point into the chunks, which
// are only ever appended to.

// strChunk is the size of the chunks strings are packed into; a string
// longer than a quarter of it gets a chunk of its own.
const strChunk = 64 << 10

// firstChunk is the size of a table's first chunk.
const firstChunk = 4 << 10

var strSeed = maphash.MakeSeed()

// strRef locates a string: 8 bytes (12 with a 32-bit offset and length
// cost 0.5 MB over 100 MB of distinct op names). A small string lies in
// a shared chunk, below 64 KiB and at most a quarter of that long; a long
// one fills a chunk of its own (longString).
type strRef struct {
	chunk    uint32
	off, len uint16
}

// longString is the length of a string that fills its chunk.
const longString = 1<<16 - 1

// strTable is the trace's interned strings; StrID i is refs[i].
type strTable struct {
	chunks [][]byte
	cur    int // the chunk small strings go to; -1 for none yet
	refs   []strRef
	// slots holds StrID+1 at its hash's slot or after (0 is empty; a
	// power of two long), with the hash's top byte in the slot's top byte
	// while the ids fit below it: a probe then compares the byte before
	// it loads a string (most probes of a missing string compared other
	// strings, each a cache miss in a large table).
	slots []uint32
}

// tagShift places a slot's hash byte; ids up to 1<<tagShift-2 leave room
// for it. Variable so tests can shrink it.
var tagShift = 24

// slotValue is the slot of id for a string whose hash is h.
func (s *strTable) slotValue(id StrID, h uint64) uint32 {
	if len(s.refs) >= 1<<tagShift-1 {
		return uint32(id) + 1
	}
	return uint32(h>>56)<<tagShift | (uint32(id) + 1)
}

// slotID returns the id a slot holds, and whether it may hold a string
// with hash h (its hash byte matches, or the table keeps none).
func (s *strTable) slotID(v uint32, h uint64) (StrID, bool) {
	if len(s.refs) >= 1<<tagShift-1 {
		return StrID(v - 1), true
	}
	return StrID(v&(1<<tagShift-1) - 1), v>>tagShift == uint32(h>>56)
}

func newStrTable() strTable {
	return strTable{cur: -1, slots: make([]uint32, 2048)}
}

// recycle empties the table, keeping its storage: the index and the
// chunks of small strings, emptied for new ones (see Trace.Recycle).
func (s *strTable) recycle() {
	clear(s.slots)
	kept := s.chunks[:0]
	for _, c := range s.chunks {
		if cap(c) <= strChunk { // not a long string's own
			kept = append(kept, c[:0])
		}
	}
	clear(s.chunks[len(kept):])
	s.chunks, s.cur, s.refs = kept, -1, s.refs[:0]
}

func (s *strTable) str(id StrID) string {
	r := s.refs[id]
	switch r.len {
	case 0:
		return ""
	case longString:
		c := s.chunks[r.chunk]
		return unsafe.String(&c[0], len(c))
	}
	return unsafe.String(&s.chunks[r.chunk][r.off], r.len)
}

// find returns the id of str, or the empty slot where it belongs.
func (s *strTable) find(str string) (id StrID, slot int, h uint64, ok bool) {
	mask := uint64(len(s.slots) - 1)
	h = maphash.String(strSeed, str)
	for i := h & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == 0 {
			return 0, int(i), h, false
		}
		if id, maybe := s.slotID(v, h); maybe && s.str(id) == str {
			return id, int(i), h, true
		}
	}
}

// intern returns the id of str, copying it into the table if new; str
// may point into memory the caller reuses.
func (s *strTable) intern(str string) StrID {
	id, slot, h, ok := s.find(str)
	if ok {
		return id
	}
	id = StrID(len(s.refs))
	s.slots[slot] = s.slotValue(id, h)
	s.refs = append(s.refs, s.store(str))
	if 2*len(s.refs) > len(s.slots) {
		s.rehash(2 * len(s.slots))
	} else if len(s.refs) == 1<<tagShift-1 {
		s.rehash(len(s.slots)) // the ids no longer leave room for hash bytes
	}
	return id
}

// nextChunk returns the chunk small strings go to once the current one
// has no room for n bytes: the next one, when a recycled table emptied it
// and it has the room, else a new one. (A recycled table keeps its
// emptied chunks first, in their order; long strings' chunks, full, come
// after them.)
func (s *strTable) nextChunk(n int) int {
	if i := s.cur + 1; i < len(s.chunks) && len(s.chunks[i]) == 0 && cap(s.chunks[i]) >= n {
		return i
	}
	// Chunks double from 4 KB: a parallel reader's segment tables hold a
	// few KB of strings each, and 64 KB chunks for them made a tenth of
	// the garbage of reading.
	size := firstChunk
	if s.cur >= 0 {
		size = min(2*cap(s.chunks[s.cur]), strChunk)
	}
	s.chunks = append(s.chunks, make([]byte, 0, max(size, n)))
	return len(s.chunks) - 1
}

// store copies str's bytes into a chunk.
func (s *strTable) store(str string) strRef {
	n := len(str)
	if n == 0 {
		return strRef{}
	}
	if n > strChunk/4 {
		s.chunks = append(s.chunks, []byte(str))
		return strRef{chunk: uint32(len(s.chunks) - 1), len: longString}
	}
	if s.cur < 0 || cap(s.chunks[s.cur])-len(s.chunks[s.cur]) < n {
		s.cur = s.nextChunk(n)
	}
	c := &s.chunks[s.cur]
	off := len(*c)
	*c = append(*c, str...)
	return strRef{chunk: uint32(s.cur), off: uint16(off), len: uint16(n)}
}

// reserve rebuilds the index for n strings, if it is smaller, and sizes
// their references (grown by append, 1.25x at a time, they allocated five
// times their size: 6 MB of garbage over 100 MB of distinct op names).
func (s *strTable) reserve(n int) {
	if n > cap(s.refs) {
		s.refs = reserve(s.refs, n)
	}
	size := len(s.slots)
	for 2*n > size {
		size *= 2
	}
	if size > len(s.slots) {
		s.rehash(size)
	}
}

func (s *strTable) rehash(size int) {
	s.slots = make([]uint32, size)
	mask := uint64(size - 1)
	for id := range s.refs {
		h := maphash.String(strSeed, s.str(StrID(id)))
		i := h & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = s.slotValue(StrID(id), h)
	}
}
