package kineto

// Design note: the event list is most of every trace, and one core parses
// it at about 250 MB/s. To use every core, the reader cuts the list into
// segments of a few MB at event boundaries and worker goroutines parse them
// concurrently, each into its own small trace (its own string, argument-set
// and track tables); the reader merges the results in file order
// (trace.AppendTables remaps the ids), so the model is the one a single
// pass would build. Only the tables are merged in order: each segment's
// event columns are copied into place on a goroutine of their own.
//
// A cut is made without parsing, after the comma of a "}," followed, across
// whitespace, by '{'. Inside a string or a nested value that pattern can
// lie, so every cut is verified: segment 0 starts where the list starts,
// and a worker accepts its segment only if it parses as whole events
// ending in a list-level ',' exactly at the cut. By induction every
// accepted segment starts at a real event. Anything a worker does not accept - damage, a cut
// inside an event, B/E pairs (which span segments), the list's end - stops
// it there: the reader merges what the worker accepted and parses on from
// that point in one pass, replaying the bytes it already holds, with all
// the repairs and messages of the sequential reader. After the damaged
// segment it goes parallel again (a few times at most).

import (
	"bytes"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// segmentSize is the size of the blocks handed to workers; tests shrink
// it. Up to workers+2 blocks are held at once, with the small traces
// parsed from them: 4 MB blocks were no faster than 2 MB ones and held
// 24 MB on two cores, a quarter of the model of a 200 MB trace; blocks
// of 512 KB-1 MB for inputs under 256 MB held 3-8 MB less on a 100 MB
// trace but took 10-15% more time.
var segmentSize = 2 << 20

// maxCarry bounds the bytes held while looking for a cut: an event longer
// than that is left to the one-pass reader, which need not hold it.
const maxCarry = 16 << 20

// maxFallbacks bounds how often the reader returns to parallel reading
// after a segment it had to read in one pass.
const maxFallbacks = 8

type parallel struct {
	name      string
	workers   int
	jobs      chan *segment
	started   bool
	resumeAt  int64 // read sequentially up to this offset
	fallbacks int
	free      [][]byte       // segment buffers to reuse
	spare     chan *reader   // merged segments' readers, which workers reuse
	copies    sync.WaitGroup // merged segments' events being copied (trace.Merge)
	// analysesOnly is the segments' readers' (Options.AnalysesOnly).
	analysesOnly bool
	// mapped: the segments are slices of the input, mapped (readMapped),
	// not buffers to reuse.
	mapped bool
	// densest is the most events, flows and memory records a byte that
	// the segments parsed so far held (segmentSizes).
	densest struct {
		sync.Mutex
		known                 bool
		events, flows, memory float64
	}
}

func newParallel(name string, workers int, analysesOnly, mapped bool) *parallel {
	return &parallel{name: name, workers: workers, analysesOnly: analysesOnly, mapped: mapped, spare: make(chan *reader, 2*workers)}
}

func (p *parallel) start() {
	if p.started {
		return
	}
	p.started = true
	p.jobs = make(chan *segment, p.workers+1)
	for range p.workers {
		go func() {
			if p.mapped {
				debug.SetPanicOnFault(true)
			}
			for s := range p.jobs {
				p.parse(s)
				close(s.done)
			}
		}()
	}
}

// stop ends the workers once they have drained the queue (segments
// still queued are parsed and dropped).
func (p *parallel) stop() {
	if p.started {
		close(p.jobs)
	}
}

// dropSpares drops the merged segments' readers kept for reuse (the
// segment buffers went when the one-pass reader resumed).
func (p *parallel) dropSpares() {
	for {
		select {
		case <-p.spare:
		default:
			return
		}
	}
}

// segment is one block of the event list and, once parsed, its events.
type segment struct {
	off  int64 // stream offset of data[0]
	data []byte
	buf  []byte // data's buffer, reused once merged
	done chan struct{}
	r    *reader
	end  segmentEnd
	stop int64 // offset where the worker stopped
}

type segmentEnd uint8

const (
	segmentWhole   segmentEnd = iota // every event up to the cut
	segmentListEnd                   // the list's ']' at stop
	segmentStopped                   // something to read in one pass at stop
)

// parse reads the events of s into a fresh reader, or a merged
// segment's, emptied. A mapped segment whose pages fault is left to the
// one-pass reader, which reports it (readMapped).
func (p *parallel) parse(s *segment) {
	if p.mapped {
		defer func() {
			if v := recover(); v != nil {
				if !isFault(v) {
					panic(v)
				}
				s.r = newReader(p.name)
				s.end, s.stop = segmentStopped, s.off
			}
		}()
	}
	var r *reader
	select {
	case r = <-p.spare:
		r.recycle()
	default:
		r = newReader(p.name)
		r.analysesOnly = p.analysesOnly
		r.t.Reserve(p.segmentSizes(len(s.data)))
	}
	r.buf, r.end, r.base, r.eof = s.data, len(s.data), s.off, true
	s.end, s.stop = r.segmentEvents()
	s.r = r
	p.parsed(r.t, s.stop-s.off)
}

// segmentSizes is how many events, flows and memory records a new
// segment reader reserves for a segment of size bytes: a quarter more a
// byte than the densest segment parsed so far held, else, before any
// is, len/150 events and no flows or memory records (Trace.AddFlow and
// AddMemory grow those as dense as they come). The densest shape
// docs/performance.md measures, one-line Python frames, holds 4,640
// events a MB, and the real traces of testdata an event or flow per
// 200-260 bytes: len/100 reserved twice what a 15 MB DDP trace's
// densest segment held. A reader is reused for later segments, its
// tables grown where one holds more.
func (p *parallel) segmentSizes(size int) (events, flows, memory int) {
	d := &p.densest
	d.Lock()
	defer d.Unlock()
	if !d.known {
		return size / 150, 0, 0
	}
	room := func(perByte float64) int { return int(1.25 * perByte * float64(size)) }
	return room(d.events), room(d.flows), room(d.memory)
}

// parsed notes what a segment's reader read from its first n bytes.
func (p *parallel) parsed(t *trace.Trace, n int64) {
	if n <= 0 {
		return
	}
	d := &p.densest
	d.Lock()
	defer d.Unlock()
	d.known = true
	d.events = max(d.events, float64(t.Events.Len())/float64(n))
	d.flows = max(d.flows, float64(len(t.Flows))/float64(n))
	d.memory = max(d.memory, float64(len(t.Memory))/float64(n))
}

// segmentEvents reads whole events up to the end of the buffer.
func (r *reader) segmentEvents() (segmentEnd, int64) {
	for {
		start := r.offset() // where a one-pass reader's unit would start
		for r.pos < r.end && isSpace[r.buf[r.pos]] {
			r.pos++
		}
		if r.pos == r.end {
			return segmentWhole, start
		}
		if r.buf[r.pos] != '{' {
			return segmentStopped, start
		}
		var closed bool
		err := r.unit(func() {
			r.event()
			if r.ev.ph == 'B' || r.ev.ph == 'E' {
				r.fail("begin/end events are paired in one pass")
			}
			r.ws()
			switch r.next() {
			case ',':
			case ']':
				closed = true
			default:
				r.fail("no separator after the event")
			}
		})
		if err != nil {
			return segmentStopped, start
		}
		r.commit()
		r.flushPending()
		if closed {
			return segmentListEnd, r.offset()
		}
	}
}

// parallelEvents reads events from the current position, which is between
// two events, with the workers. It returns true when it has read the
// list's closing bracket, and false when the one-pass reader must go on
// from the current position (up to par.resumeAt).
func (r *reader) parallelEvents() bool {
	p := r.par
	// What reads on (the one-pass reader, Link) needs the copied events.
	defer p.copies.Wait()
	carry := r.buf[r.pos:r.end] // read but not parsed
	off := r.offset()
	var queue []*segment
	srcDone, dispatched, want := false, 0, segmentSize
	var last *segment // the last segment merged whole
	for len(carry) > 0 || !srcDone {
		// Read the next block and cut it at an event boundary.
		var data []byte
		var n int
		if p.mapped { // every byte is in the window already
			data, n, srcDone = carry, len(carry), true
		} else {
			data = p.buffer(max(want, len(carry)))
			n = copy(data, carry)
		}
		if !srcDone && n < len(data) {
			m, err := fillBuf(r.src, data[n:])
			n += m
			if err != nil {
				srcDone = true
				if err != io.EOF {
					r.readErr = err
				}
			}
			if m > 0 && r.onFill != nil {
				r.onFill(off + int64(n))
			}
		}
		cut, long := cutPoint(data[:n], segmentSize), false
		if cut == 0 {
			switch {
			case !srcDone && n < maxCarry: // one event larger than the block: read more
				carry, want = data[:n], 2*n
				continue
			case !srcDone:
				long = true
			default:
				cut = n
			}
		}
		want = segmentSize
		if dispatched == 0 && srcDone && cut == n {
			// The rest fits one segment: not worth the workers.
			p.resumeAt = math.MaxInt64
			return r.resume(off, [][]byte{data[:n]})
		}
		if long {
			carry = data[:n]
		} else {
			p.start()
			s := &segment{off: off, data: data[:cut], buf: data, done: make(chan struct{})}
			queue = append(queue, s)
			p.jobs <- s
			dispatched++
			carry, off = data[cut:n], off+int64(cut)
		}

		// Merge finished segments in order. One queued segment beyond one
		// a worker keeps them busy; more only held memory (2*workers gave
		// the same speed with 20 MB more live heap on a 100 MB trace).
		for len(queue) > 0 && (long || len(queue) > p.workers || (srcDone && len(carry) == 0)) {
			s := queue[0]
			<-s.done
			// No copy may be writing while the columns grow.
			if !r.t.Events.HasRoom(s.r.t.Events.Len()) {
				p.copies.Wait()
			}
			r.reserveProjected(s.r, s.off+int64(len(s.data)), p.copies.Wait)
			m, sr := r.merge(s.r), s.r
			s.r = nil
			p.copies.Go(func() {
				m.CopyEvents()
				select {
				case p.spare <- sr:
				default:
				}
			})
			if testHookMerged != nil {
				testHookMerged()
			}
			if s.end == segmentWhole {
				queue = queue[1:]
				if !p.mapped {
					p.free = append(p.free, s.buf)
				}
				last = s
				continue
			}
			// Go on in one pass from where the worker stopped.
			held := [][]byte{s.data[s.stop-s.off:]}
			for _, q := range queue[1:] {
				held = append(held, q.data)
			}
			held = append(held, carry)
			if s.end == segmentListEnd {
				r.resume(s.stop, held)
				return true
			}
			p.fallbacks++
			p.resumeAt = s.off + int64(len(s.data))
			if p.fallbacks >= maxFallbacks {
				p.resumeAt = math.MaxInt64
			}
			return r.resume(s.stop, held)
		}
		if long {
			// No cut in maxCarry bytes: the one-pass reader reads on from
			// here, then the workers again after what is held.
			p.fallbacks++
			p.resumeAt = off + int64(len(carry))
			if p.fallbacks >= maxFallbacks {
				p.resumeAt = math.MaxInt64
			}
			return r.resume(off, [][]byte{carry})
		}
	}
	// Every event up to the end of the input was whole: the one-pass
	// reader reports the missing end of the list, from after the last
	// event (last's buffer is free, but nothing was read into it since).
	p.resumeAt = math.MaxInt64
	return r.resume(last.stop, [][]byte{last.data[last.stop-last.off:]})
}

// cutPoint returns where to end a segment of about size bytes: at the last
// event boundary before size, else the first after it, else 0.
func cutPoint(b []byte, size int) int {
	for i := min(size, len(b)); ; {
		i = bytes.LastIndexByte(b[:i], '{')
		if i <= 0 {
			break
		}
		if cut := boundary(b, i); cut > 0 {
			return cut
		}
	}
	for i := size; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '{')
		if j < 0 {
			break
		}
		i += j
		if cut := boundary(b, i); cut > 0 {
			return cut
		}
	}
	return 0
}

// boundary reports whether the '{' at b[i] may start an event: preceded,
// across whitespace, by "},". It returns the offset after the comma, where
// a one-pass reader would start the event's unit, or 0.
func boundary(b []byte, i int) int {
	j := lastNonSpace(b, i)
	if j <= 0 || b[j] != ',' {
		return 0
	}
	if k := lastNonSpace(b, j); k < 0 || b[k] != '}' {
		return 0
	}
	return j + 1
}

// buffer returns a segment buffer of at least n bytes.
func (p *parallel) buffer(n int) []byte {
	for len(p.free) > 0 {
		b := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		if len(b) >= n {
			return b
		}
	}
	return make([]byte, n)
}

// resume points the window at offset off, replaying the held bytes that
// follow it before the rest of the input. It returns false, for the
// callers' convenience.
func (r *reader) resume(off int64, held [][]byte) bool {
	if r.mapped { // the window holds every byte, the held ones included
		r.pos = int(off)
		return false
	}
	var rest []io.Reader
	for _, b := range held {
		if len(b) > 0 {
			rest = append(rest, bytes.NewReader(b))
		}
	}
	if r.readErr != nil {
		rest = append(rest, errReader{r.readErr})
	} else {
		rest = append(rest, r.src) // at its end already, or the rest
	}
	r.src = io.MultiReader(rest...)
	// The held bytes may lie in the window's buffer or in segment buffers:
	// neither may be written again.
	r.buf, r.par.free = make([]byte, len(r.buf)), nil
	r.base, r.pos, r.end, r.keep, r.gaps = off, 0, 0, 0, nil
	r.eof, r.readErr = false, nil
	return false
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// merge appends what a segment's worker read, but for its events, which
// the returned Merge copies (see trace.Merge). What it keeps of s's
// strings it copies: s is recycled for another segment (Trace.Recycle).
func (r *reader) merge(s *reader) *trace.Merge {
	m := r.t.AppendTables(s.t, r.tracks)
	strs := m.Strs
	for k, name := range s.procName {
		k.PidLabel = strs[k.PidLabel]
		r.procName[k] = strings.Clone(name)
	}
	for k, name := range s.thrName {
		k.PidLabel, k.TidLabel = strs[k.PidLabel], strs[k.TidLabel]
		r.thrName[k] = strings.Clone(name)
	}
	r.events += s.events
	return m
}

// reserveProjected sizes r's tables for the whole input before s is
// merged, when they would overflow: the segments merged so far tell how
// many events, flows and memory records a byte holds. It calls before
// first when it does (the event columns may move).
//
// Until an eighth of the input is read the tables grow as appends grow
// them: a projection from the first segment alone was 17% above the
// events of a trace of tiny events (5 MB of columns), from an eighth of
// it 10%; reserved room is never given back.
func (r *reader) reserveProjected(s *reader, consumed int64, before func()) {
	t := r.t
	n, f, m := t.Events.Len()+s.t.Events.Len(), len(t.Flows)+len(s.t.Flows), len(t.Memory)+len(s.t.Memory)
	if consumed < r.size/8 || r.size <= consumed || (n <= cap(t.Events.Kind) && f <= cap(t.Flows) && m <= cap(t.Memory)) {
		return // append's own growth does for the rest
	}
	scale := float64(r.size) / float64(consumed) * 1.05
	project := func(k int) int { return int(min(float64(k)*scale, 1<<31)) }
	before()
	t.Reserve(project(n), project(f), project(m))
	// Per-launch values too: grown by append, 1.25x at a time, they
	// allocated four times their size (3.8 MB for 0.9 on a 100 MB trace).
	t.ReserveArgVals(project(t.NumArgVals() + s.t.NumArgVals()))
	// The string index too, which otherwise doubles and is rebuilt ten
	// times over a million distinct names (the merge's strings are
	// interned on one core while the workers parse).
	t.ReserveStrings(project(t.NumStrings() + s.t.NumStrings()))
}

// lastNonSpace returns the index of the last non-space byte before i, or -1.
func lastNonSpace(b []byte, i int) int {
	for i--; i >= 0 && isSpace[b[i]]; i-- {
	}
	return i
}

// testHookMerged, when set, is called for every merged segment.
var testHookMerged func()
