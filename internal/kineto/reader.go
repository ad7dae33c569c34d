// Package kineto reads PyTorch profiler traces (Kineto's Chrome-trace JSON
// of every era, and the legacy autograd profiler's export) into the model of
// package trace. See scan.go for the design of the hot path.
package kineto

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Options tune reading.
type Options struct {
	// Progress, when set, is called with the uncompressed bytes consumed so
	// far each time the input window is refilled.
	Progress func(consumed int64)
	// SizeHint is the expected uncompressed size, used to size the event
	// columns once instead of growing them (0: unknown).
	SizeHint int64
	// Workers is how many goroutines parse the event list (0: GOMAXPROCS;
	// 1: one sequential pass). See parallel.go.
	Workers int
	// Parsed, when set, is called on a goroutine of its own once every
	// event and name is read, while the trace is linked (which uses about
	// one core and a half). It may read the events' names and kinds and
	// the strings, nothing that linking sets, and must not change the
	// trace.
	Parsed func(*trace.Trace)
	// AnalysesOnly keeps only what the analyses read: flow events are
	// counted (Trace.UnkeptFlows), sequence numbers and Python ids read,
	// but none is stored, as only exports write them back (on 100 MB of
	// tiny events 0.04x the input, on the corpus's other shapes 0.03x).
	AnalysesOnly bool
}

// bytesPerEvent is a high estimate of JSON bytes per event (with its share
// of flows and metadata; Kineto's traces have 250-450), so the reservation
// rarely exceeds what is used: reserved capacity costs no RSS until
// touched, but it counts against the collector's heap goal and the soft
// memory limit. Appending grows the columns past it.
const bytesPerEvent = 600

// windowSize is the input window's initial size; tests shrink it so refills
// fall inside tokens.
var windowSize = 1 << 20

// maxDur is the longest plausible event: longer ones come from counters
// that overflowed and are read with zero duration (and reported).
const maxDur = int64(24 * 3600 * 1e9)

// maxAbsTs bounds timestamps (ns, about 127 years either side of the epoch)
// so that spans between any two events, plus durations, fit in int64:
// events beyond it are skipped and reported.
const maxAbsTs = int64(4e18)

// ReadFile reads the trace at path (plain or gzipped JSON). It returns an
// error only when nothing could be read; damage that was read around is
// listed in the trace's Problems.
func ReadFile(path string, opts Options) (*trace.Trace, error) {
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer in.close()
	if opts.SizeHint == 0 {
		opts.SizeHint = in.size
	}
	var t *trace.Trace
	if in.mapped != nil {
		t, err = readMapped(in.mapped, path, opts)
	} else {
		t, err = Read(in.r, path, opts)
	}
	if t != nil {
		t.Compressed = in.compressed
	}
	return t, err
}

// Read reads a trace from src; name is used in messages and as Trace.Path.
func Read(src io.Reader, name string, opts Options) (*trace.Trace, error) {
	r := newReader(name)
	if memlimit.Max() > 0 {
		src = &memoryGuard{src: src}
	}
	r.src = src
	r.buf = make([]byte, windowSize)
	return r.read(opts)
}

// readMapped reads a trace from a file mapped into memory whole: the
// window is the file, and the workers parse slices of it. A file cut
// short while it is read (its pages past the new end fault) gives an
// error, not a crash.
func readMapped(data []byte, name string, opts Options) (t *trace.Trace, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			if !isFault(v) {
				panic(v)
			}
			t, err = nil, fmt.Errorf("%s: the file changed while it was read (%v)", name, v)
		}
	}()
	r := newReader(name)
	r.src = errReader{io.EOF} // every byte is in the window
	r.buf, r.end, r.eof, r.mapped = data, len(data), true, true
	if opts.Progress != nil {
		opts.Progress(int64(len(data)))
	}
	return r.read(opts)
}

// isFault reports whether v, a recovered panic, is a memory fault
// (debug.SetPanicOnFault).
func isFault(v any) bool {
	_, ok := v.(interface {
		runtime.Error
		Addr() uintptr
	})
	return ok
}

func (r *reader) read(opts Options) (*trace.Trace, error) {
	name := r.t.Path
	r.onFill = opts.Progress
	r.parsed, r.analysesOnly = opts.Parsed, opts.AnalysesOnly
	r.size = opts.SizeHint
	if workers := cmp.Or(opts.Workers, runtime.GOMAXPROCS(0)); workers > 1 {
		r.par = newParallel(name, workers, opts.AnalysesOnly, r.mapped) // it sizes the tables as it learns (reserveProjected)
		defer r.par.stop()
	} else if r.size > 0 {
		r.t.Reserve(int(min(r.size/bytesPerEvent, 1<<31)), 0, 0)
	}
	if err := r.top(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.trailing()
	r.release()
	r.finish()
	return r.t, nil
}

// collectAfter is the input size from which reading ends with a
// collection (release).
const collectAfter = 32 << 20

// release drops what only reading needed: the input window, with the
// segment buffers it may replay, and the parallel reader's spare segment
// readers (6-8 MB on two cores). From collectAfter bytes of input on it
// also collects and returns the free memory to the system. The collector's
// goal was set early in the read, when the reserved columns made the heap
// look twice its later live size, so reading ends with its garbage
// uncollected; collected only, the freed pages were too scattered for
// linking's and the analyses' large columns, which grew the heap anyway.
// On the 100 MB corpus (8 interleaved runs, median peak RSS) tiny events
// fell from 0.64x the input (0.58x collected only) to 0.51x, short steps
// from 0.53x to 0.46x, the others within noise, in the same time.
func (r *reader) release() {
	r.buf, r.src = nil, nil
	if r.par != nil {
		r.par.dropSpares()
	}
	if r.offset() >= collectAfter {
		debug.FreeOSMemory()
	}
}

// newReader returns a reader of the input called name.
func newReader(name string) *reader {
	r := &reader{
		t:        trace.New(name),
		tracks:   map[trace.TrackKey]trace.TrackID{},
		kinds:    map[trace.StrID]trace.Kind{},
		procName: map[trace.TrackKey]string{},
		thrName:  map[trace.TrackKey]string{},
		open:     map[trace.TrackID][]openSlice{},
	}
	r.scanner.t = r.t
	return r
}

// recycle empties r, a merged segment's reader, for another segment, as
// newReader would return it but keeping the storage of its trace and maps.
func (r *reader) recycle() {
	r.t.Recycle()
	clear(r.procName)
	clear(r.thrName)
	clear(r.tracks)
	clear(r.kinds)
	clear(r.open)
	*r = reader{scanner: scanner{t: r.t}, t: r.t, tracks: r.tracks, kinds: r.kinds,
		procName: r.procName, thrName: r.thrName, open: r.open, args: r.args[:0], analysesOnly: r.analysesOnly}
}

type reader struct {
	scanner
	t        *trace.Trace
	tracks   map[trace.TrackKey]trace.TrackID
	last     lastTrack // the track of the last event read, for the next
	kinds    map[trace.StrID]trace.Kind
	procName map[trace.TrackKey]string // by pid (Tid fields zero)
	thrName  map[trace.TrackKey]string
	open     map[trace.TrackID][]openSlice // "B" events waiting for their "E"
	args     []trace.Arg
	ev       fields
	events   int                // events read, for the not-a-trace check
	par      *parallel          // nil when reading in one pass
	size     int64              // expected input size (0: unknown)
	parsed   func(*trace.Trace) // Options.Parsed
	// analysesOnly is Options.AnalysesOnly.
	analysesOnly bool
	// mapped: buf is the whole input, mapped read-only (readMapped).
	mapped bool
}

// lastTrack remembers one track: events come in runs on one thread, and
// a map lookup per event was 2.5% of reading.
type lastTrack struct {
	key   trace.TrackKey
	id    trace.TrackID
	valid bool
}

// track returns the id of the track key names, adding it if new.
func (r *reader) track(key trace.TrackKey) trace.TrackID {
	if !r.last.valid || r.last.key != key {
		r.last = lastTrack{key, r.t.TrackFor(key, r.tracks), true}
	}
	return r.last.id
}

type openSlice struct {
	rec  trace.EventRecord
	off  int64
	args []trace.Arg // stored when the E comes
}

// unit runs parse as one restartable unit (see scan.go).
func (r *reader) unit(parse func()) error {
	r.skipSpace()
	r.pending, r.replay = r.pending[:0], 0
	for {
		r.keep = r.pos
		r.calls, r.lock, r.cuts = 0, 0, r.cuts[:0]
		err := r.try(parse)
		if err == errNeedMoreSpace {
			r.cutSpace()
			err = errNeedMore
		}
		if err != errNeedMore {
			if err == nil {
				r.flushPending()
			}
			return err
		}
		// At end of input the unit runs once more: some tokens (a final
		// quote, a short file's BOM check) decide differently at EOF.
		atEOF := r.eof
		r.pos = r.keep
		if !atEOF {
			// An attempt can stop short of the one before (a string's
			// fast path leaves its problems to the slow one).
			r.replay = max(r.replay, r.calls) - r.cut()
		}
		r.fill()
		if atEOF {
			return errTruncated
		}
	}
}

// skipSpace consumes whitespace before a unit without keeping it in the
// window, so a long run of it costs neither memory nor re-parsing.
func (r *reader) skipSpace() {
	for {
		for r.pos < r.end && isSpace[r.buf[r.pos]] {
			r.pos++
		}
		if r.pos < r.end {
			return
		}
		r.keep = r.pos
		if !r.fill() {
			return
		}
	}
}

// flushPending records the problems of a completed unit.
func (r *reader) flushPending() {
	for _, p := range r.pending {
		for range p.count {
			r.t.Problems.Add(p.off, p.what, p.detail)
		}
	}
	r.pending = r.pending[:0]
}

func (r *reader) try(parse func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok && (e == errNeedMore || e == errNeedMoreSpace || isSyntax(e)) {
				err = e
				return
			}
			panic(v)
		}
	}()
	parse()
	return nil
}

func isSyntax(err error) bool {
	var se *syntaxError
	return errors.As(err, &se)
}

// top reads the top-level value: an object with traceEvents and metadata,
// or a bare list of events (legacy export).
func (r *reader) top() error {
	var first byte
	err := r.unit(r.skipBOM)
	if err == nil {
		err = r.unit(func() { first = r.next() })
	}
	if err == errTruncated {
		if r.readErr != nil {
			return r.readErr
		}
		return errors.New("empty input")
	}
	if err != nil {
		return err
	}
	switch first {
	case '[':
		r.t.Meta.Legacy = true
		r.eventList()
	case '{':
		if !r.object() && !r.t.Problems.Fatal() {
			return errors.New("not a profiler trace: the JSON object has no traceEvents")
		}
	default:
		return fmt.Errorf("not a JSON trace: starts with %s", describe(first))
	}
	if r.events == 0 && r.t.Problems.Fatal() && len(r.t.Meta.Other) == 0 && r.t.Meta.Devices == nil {
		return fmt.Errorf("nothing readable: %s", r.t.Problems.List[0])
	}
	return nil
}

// trailing reads on after the trace and reports what does not belong: a
// second JSON document or garbage (not read further), or a read error that
// surfaces only at the end (a gzip checksum, bytes after the gzip stream).
// What was read stays.
func (r *reader) trailing() {
	if r.t.Problems.Fatal() {
		return // reading stopped early; the reason is reported
	}
	r.skipSpace()
	if r.pos < r.end {
		r.t.Problems.Add(r.offset(), "data after the end of the trace", "starts with "+describe(r.buf[r.pos])+"; ignored")
	} else if r.readErr != nil {
		r.t.Problems.Add(r.offset(), "read error after the end of the trace", r.readErr.Error())
	}
}

func (r *reader) skipBOM() {
	if r.end-r.pos >= 3 && r.buf[r.pos] == 0xEF && r.buf[r.pos+1] == 0xBB && r.buf[r.pos+2] == 0xBF {
		r.pos += 3
	} else if r.end-r.pos < 3 && !r.eof {
		panic(errNeedMore)
	}
}

// object reads the members of the top-level object and reports whether
// it had traceEvents.
func (r *reader) object() (sawEvents bool) {
	for {
		var key string
		var done bool
		err := r.unit(func() {
			r.ws()
			if r.peek() == '}' {
				r.pos++
				done = true
				return
			}
			key = string(r.str())
			r.ws()
			r.expect(':')
			r.ws()
		})
		if r.stop(err, "reading the top-level object") || done {
			return
		}
		if key == "traceEvents" {
			sawEvents = true
			err = r.unit(func() { r.expect('[') })
			if r.stop(err, "reading traceEvents") {
				return
			}
			if !r.eventList() {
				return
			}
		} else {
			err = r.unit(func() {
				start := r.pos
				r.lock = start + maxMetadata // what is kept must stay
				r.wentDeep = false
				r.skip(0)
				if r.wentDeep { // valid JSON, but no metadata nests this deep: left out, the events read
					end := r.pos
					r.pos = start // the problem names where the value starts
					r.problem("metadata nested too deeply", strconv.Quote(key)+" nests deeper than "+strconv.Itoa(maxDepth)+" levels; left out")
					r.pos = end
					return
				}
				if end := r.pos; r.offsetAt(end)-r.offsetAt(start) > int64(maxMetadata) {
					r.pos = start // the problem names where the value starts
					r.problem("metadata too large", strconv.Quote(key)+" is longer than "+sizeText(maxMetadata)+"; left out")
					r.pos = end
					return
				}
				r.metadata(key, r.buf[start:r.pos])
			})
			if r.stop(err, "reading metadata "+strconv.Quote(key)) {
				return
			}
		}
		err = r.unit(func() {
			r.ws()
			switch r.next() {
			case ',':
			case '}':
				done = true
			default:
				r.pos--
				r.fail("expected ',' or '}' after " + strconv.Quote(key) + ", found " + describe(r.peek()))
			}
		})
		if r.stop(err, "reading the top-level object") || done {
			return
		}
	}
}

// stop records err (if any) as fatal and reports whether reading must end.
func (r *reader) stop(err error, where string) bool {
	switch {
	case err == nil:
		return false
	case err == errTruncated:
		r.truncated(where)
	default:
		var se *syntaxError
		errors.As(err, &se)
		r.t.Problems.AddFatal(se.off, "syntax error "+where, se.msg+"; the rest of the file was not read")
	}
	return true
}

func (r *reader) truncated(where string) {
	what := "file ends early (cut off mid-write?)"
	if r.readErr != nil {
		what = "read error: " + r.readErr.Error()
	}
	r.t.Problems.AddFatal(r.offset(), what, "while "+where+"; everything before was read")
}

// eventList reads events up to the closing bracket. It returns false when
// the input ended inside the list.
func (r *reader) eventList() bool {
	for {
		if r.par != nil && r.offset() >= r.par.resumeAt {
			if r.parallelEvents() {
				return true
			}
			continue
		}
		var done bool
		err := r.unit(func() {
			r.ws()
			r.ev.off = -1
			if r.peek() == ']' {
				r.pos++
				done = true
				return
			}
			if r.peek() != '{' {
				r.problem("event is not an object", "skipped")
				r.skip(0)
			} else {
				r.event()
			}
			r.ws()
			switch r.next() {
			case ',':
			case ']':
				done = true
			default:
				r.pos--
				r.fail("expected ',' or ']' after an event, found " + describe(r.peek()))
			}
		})
		switch {
		case err == nil:
			if r.ev.off >= 0 {
				r.commit()
				r.flushPending()
			}
			if done {
				return true
			}
		case err == errTruncated:
			r.truncated(fmt.Sprintf("reading event %d", r.events+1))
			return false
		default:
			se := err.(*syntaxError)
			r.t.Problems.Add(se.off, "damaged event skipped", se.msg)
			if !r.resync() {
				r.t.Problems.AddFatal(r.offset(), "no further event found after damage", "the rest of the file was not read")
				return false
			}
		}
	}
}

// resync moves to the start of the next event after damage: a '{' that
// follows a ',' and opens an object whose first key is an event key.
func (r *reader) resync() bool {
	for {
		for ; r.pos < r.end; r.pos++ {
			if r.buf[r.pos] != ',' {
				continue
			}
			if r.end-r.pos < 64 && !r.eof {
				break
			}
			if looksLikeEventStart(r.buf[r.pos+1 : r.end]) {
				r.pos++
				return true
			}
		}
		r.keep = r.pos
		if !r.fill() && r.pos >= r.end { // else the input ended: look at what is left
			return false
		}
	}
}

func looksLikeEventStart(b []byte) bool {
	i := 0
	skipWS := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
			i++
		}
	}
	skipWS()
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	skipWS()
	if i >= len(b) || b[i] != '"' {
		return false
	}
	i++
	j := i
	for j < len(b) && b[j] != '"' {
		j++
	}
	switch string(b[i:j]) {
	case "ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "s", "bp":
		return true
	}
	return false
}

// metadata interprets one top-level member other than traceEvents.
func (r *reader) metadata(key string, raw []byte) {
	m := &r.t.Meta
	bad := func(err error) {
		r.problem("unreadable metadata "+strconv.Quote(key), err.Error())
	}
	switch key {
	case "deviceProperties":
		var devs []trace.Device
		if err := json.Unmarshal(raw, &devs); err != nil {
			bad(err)
		} else {
			m.Devices = devs
		}
		return
	case "distributedInfo":
		var d trace.DistributedInfo
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &d); err != nil {
			bad(err)
		} else {
			json.Unmarshal(raw, &probe)
			_, d.HasRank = probe["rank"]
			m.Distributed = &d
		}
		return
	case "baseTimeNanoseconds":
		if v, ok := number(raw); ok {
			if n, ok := v.Int(); ok && v.Kind == trace.ValInt {
				m.BaseTimeNs = n
				return
			}
		}
		r.problem("unreadable metadata \"baseTimeNanoseconds\"", string(truncate(raw, 40)))
		return
	case "schemaVersion":
		if v, ok := number(raw); ok {
			n, _ := v.Int()
			m.SchemaVersion = int(n)
		}
	case "displayTimeUnit":
		json.Unmarshal(raw, &m.DisplayTimeUnit)
	}
	m.Other = append(m.Other, trace.KeyValue{Key: key, Value: append(json.RawMessage(nil), raw...)})
}
