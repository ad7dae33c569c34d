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

var strSeed = maphash.MakeSeed()

type strRef struct{ chunk, off, len uint32 }

// strTable is the trace's interned strings; StrID i is refs[i].
type strTable struct {
	chunks [][]byte
	cur    int // the chunk small strings go to; -1 for none yet
	refs   []strRef
	slots  []uint32 // StrID+1 at its hash's slot or after; 0 is empty; a power of two long
}

func newStrTable() strTable {
	return strTable{cur: -1, slots: make([]uint32, 2048)}
}

func (s *strTable) str(id StrID) string {
	r := s.refs[id]
	if r.len == 0 {
		return ""
	}
	return unsafe.String(&s.chunks[r.chunk][r.off], r.len)
}

// find returns the id of str, or the empty slot where it belongs.
func (s *strTable) find(str string) (id StrID, slot int, ok bool) {
	mask := uint64(len(s.slots) - 1)
	for i := maphash.String(strSeed, str) & mask; ; i = (i + 1) & mask {
		v := s.slots[i]
		if v == 0 {
			return 0, int(i), false
		}
		if s.str(StrID(v-1)) == str {
			return StrID(v - 1), int(i), true
		}
	}
}

// intern returns the id of str, copying it into the table if new; str
// may point into memory the caller reuses.
func (s *strTable) intern(str string) StrID {
	id, slot, ok := s.find(str)
	if ok {
		return id
	}
	id = StrID(len(s.refs))
	s.refs = append(s.refs, s.store(str))
	s.slots[slot] = uint32(id) + 1
	if 2*len(s.refs) > len(s.slots) {
		s.rehash(2 * len(s.slots))
	}
	return id
}

// store copies str's bytes into a chunk.
func (s *strTable) store(str string) strRef {
	n := len(str)
	if n == 0 {
		return strRef{}
	}
	if n > strChunk/4 {
		s.chunks = append(s.chunks, []byte(str))
		return strRef{chunk: uint32(len(s.chunks) - 1), len: uint32(n)}
	}
	if s.cur < 0 || cap(s.chunks[s.cur])-len(s.chunks[s.cur]) < n {
		s.chunks = append(s.chunks, make([]byte, 0, strChunk))
		s.cur = len(s.chunks) - 1
	}
	c := &s.chunks[s.cur]
	off := len(*c)
	*c = append(*c, str...)
	return strRef{chunk: uint32(s.cur), off: uint32(off), len: uint32(n)}
}

// reserve rebuilds the index for n strings, if it is smaller.
func (s *strTable) reserve(n int) {
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
		i := maphash.String(strSeed, s.str(StrID(id))) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = uint32(id) + 1
	}
}
