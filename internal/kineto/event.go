package kineto

import (
	"bytes"
	"hash/fnv"
	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// fields collects one event's members before it is committed.
type fields struct {
	off                int64
	ph                 byte
	name, cat          trace.StrID
	hasName, hasCat    bool
	pid, tid           int64
	pidLabel, tidLabel trace.StrID
	hasPid, hasTid     bool
	ts, dur            int64
	hasTs, hasDur      bool
	id                 int64
	ext, corr, seq     int64
	pyID, pyParent     int64
	mem                trace.MemoryRecord
	memKeys            uint8 // which of Addr/Bytes/Total Allocated/Total Reserved were seen
	device, stream     int64
	hasDevice, hasStrm bool
	metaName           trace.StrID // args.name of metadata events
	hasMetaName        bool
}

// event parses one event object into r.ev and r.args; the caller commits
// it once the whole unit, separator included, has been read.
func (r *reader) event() {
	f := &r.ev
	*f = fields{off: r.offset(), seq: -1}
	r.args = r.args[:0]
	r.expect('{')
	r.ws()
	if r.peek() == '}' {
		r.pos++
		r.ev.ph = '0' // nothing to commit
		r.problem("empty event object", "")
		return
	}
	for {
		switch string(r.key()) {
		case "ph":
			f.ph = phUnreadable
			if r.peek() == '"' {
				if p := r.str(); len(p) > 0 {
					f.ph = p[0]
				}
			} else {
				r.skip(0)
			}
		case "name":
			f.name, f.hasName = r.text(), true
		case "cat":
			f.cat, f.hasCat = r.text(), true
		case "pid":
			f.pid, f.pidLabel = r.idValue()
			f.hasPid = true
		case "tid":
			f.tid, f.tidLabel = r.idValue()
			f.hasTid = true
		case "ts":
			f.ts, f.hasTs = r.timeValue("ts")
		case "dur":
			f.dur, f.hasDur = r.timeValue("dur")
		case "id":
			f.id, _ = r.idValue()
		case "args":
			r.eventArgs(f)
		default:
			r.skip(0)
		}
		if !r.more('}', "event") {
			return
		}
	}
}

// text reads a string (or, leniently, any value) and interns it.
func (r *reader) text() trace.StrID {
	if r.peek() == '"' {
		return r.intern(r.str())
	}
	v := r.value()
	if id, ok := v.StrID(); ok {
		return id
	}
	return r.t.InternString(r.t.Format(v))
}

// idValue reads a pid, tid or id: a number, or a string such as
// "stream 7" or "CPU functions" whose trailing digits give the number.
func (r *reader) idValue() (int64, trace.StrID) {
	if r.compound("unreadable id") {
		return 0, 0
	}
	if r.peek() == '"' {
		b := r.str()
		n, _ := trailingInt(b)
		if n == 0 && len(b) > 0 && (b[len(b)-1] < '0' || b[len(b)-1] > '9') {
			// No digits: derive a stable number so distinct labels differ.
			h := fnv.New32a()
			h.Write(b)
			n = -int64(h.Sum32()) - 1
		}
		return n, r.intern(b)
	}
	w := r.word()
	v, ok := number(w)
	if !ok || v.Kind == trace.ValBigInt {
		r.problem("unreadable id", string(truncate(w, 40)))
		return 0, r.intern(w)
	}
	n, _ := v.Int()
	return n, 0
}

// compound passes over an array or object where a number or string is
// expected, reported as what.
func (r *reader) compound(what string) bool {
	if c := r.peek(); c != '{' && c != '[' {
		return false
	}
	r.problem(what, "an array or object")
	r.skip(0)
	return true
}

func trailingInt(b []byte) (int64, bool) {
	i := len(b)
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	if i == len(b) || len(b)-i > 18 {
		return 0, false
	}
	n, _ := strconv.ParseInt(string(b[i:]), 10, 64)
	return n, true
}

// timeValue reads a time in µs (possibly with ns decimals) as integer ns.
func (r *reader) timeValue(what string) (int64, bool) {
	if c := r.peek(); c == '{' || c == '[' {
		r.compound("unreadable " + what) // the message built only here: it cost an allocation per value
		return 0, false
	}
	var w []byte
	if r.peek() == '"' {
		w = r.str()
		r.problem("quoted number", what)
	} else {
		w = r.word()
	}
	ns, ok := microsToNanos(w)
	if !ok {
		r.problem("unreadable "+what, string(truncate(w, 40)))
	}
	return ns, ok
}

// microsToNanos converts decimal µs text to ns exactly (rounding past the
// third decimal) without going through float64, which would lose ns
// precision on epoch-based timestamps.
func microsToNanos(w []byte) (int64, bool) {
	i, neg := 0, false
	if len(w) > 0 && w[0] == '-' {
		i, neg = 1, true
	}
	var whole int64
	digits := 0
	for ; i < len(w) && w[i] >= '0' && w[i] <= '9'; i++ {
		whole = whole*10 + int64(w[i]-'0')
		digits++
	}
	// Up to 16 integer digits fit int64 ns exactly (epoch µs timestamps
	// have 16); only larger values need the float path.
	if digits == 0 || digits > 16 || whole > (1<<63-1)/1000-1 {
		return slowMicros(w)
	}
	var frac int64
	fd := 0
	roundUp := false
	if i < len(w) && w[i] == '.' {
		i++
		start := i
		for ; i < len(w) && w[i] >= '0' && w[i] <= '9'; i++ {
			if fd < 3 {
				frac = frac*10 + int64(w[i]-'0')
				fd++
			} else if i == start+3 && w[i] >= '5' {
				roundUp = true
			}
		}
		if i == start {
			return 0, false
		}
	}
	if i != len(w) {
		return slowMicros(w)
	}
	for ; fd < 3; fd++ {
		frac *= 10
	}
	ns := whole*1000 + frac
	if roundUp {
		ns++
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

func slowMicros(w []byte) (int64, bool) {
	if !validNumber(w) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(w), 64)
	if err != nil || f*1000 > 9.2e18 || f*1000 < -9.2e18 {
		return 0, false
	}
	ns := f * 1000
	if ns < 0 {
		return int64(ns - 0.5), true
	}
	return int64(ns + 0.5), true
}

// eventArgs reads the args object. Ids that make each event unique are
// lifted into fields; the rest become the event's argument set.
func (r *reader) eventArgs(f *fields) {
	if r.peek() != '{' {
		r.problem("args is not an object", "")
		r.skip(0)
		return
	}
	r.pos++
	r.ws()
	if r.peek() == '}' {
		r.pos++
		return
	}
	for {
		key := r.key()
		switch string(key) {
		case "External id", "external id":
			f.ext = r.intArg()
		case "correlation":
			f.corr = r.intArg()
		case "Sequence number":
			f.seq = r.intArg()
		case "Python id":
			f.pyID = r.intArg()
		case "Python parent id":
			f.pyParent = r.intArg()
		case "Ev Idx", "Record function id", "Profiler Event Index":
			// Exporter bookkeeping, unique per event: not kept.
			r.skip(0)
		case "Addr":
			f.mem.Addr, f.memKeys = r.intArg(), f.memKeys|1
		case "Bytes":
			f.mem.Bytes, f.memKeys = r.intArg(), f.memKeys|2
		case "Total Allocated":
			f.mem.TotalAllocated, f.memKeys = r.intArg(), f.memKeys|4
		case "Total Reserved":
			f.mem.TotalReserved, f.memKeys = r.intArg(), f.memKeys|8
		default:
			k := r.intern(key)
			if r.analysesOnly && unread(k) {
				r.skip(0)
				break
			}
			isName := string(key) == "name" // key may not survive reading the value
			var v trace.Value
			if (k == trace.KeyGrid || k == trace.KeyBlock) && r.peek() == '[' {
				v = r.dim3()
			} else {
				v = r.value()
			}
			switch k {
			case trace.KeyDevice:
				f.device, f.hasDevice = v.Int()
			case trace.KeyStream:
				f.stream, f.hasStrm = v.Int()
			}
			if isName {
				f.metaName, f.hasMetaName = v.StrID()
			}
			r.args = append(r.args, trace.Arg{Key: k, Val: v})
		}
		if !r.more('}', "args") {
			return
		}
	}
}

// unread reports whether no analysis reads key: per-launch values that
// only the exports and the HTML report write back (kept, 8 bytes each,
// they were a third of the live model of 100 MB of per-launch args).
func unread(key trace.StrID) bool {
	return key == trace.KeyGrid || key == trace.KeyWarpsPerSM || key == trace.KeyBandwidth
}

// dim3 reads a grid or block array: as a ValDim3 when it is written the
// way Kineto writes it, "[x, y, z]", so that its text is kept exactly
// (and per-launch grids fill no string table), else as raw JSON.
func (r *reader) dim3() trace.Value {
	start := r.pos
	r.skip(0)
	raw := r.buf[start:r.pos]
	var d [3]int64
	rest := raw[1:]
	for i := range d {
		j := 0
		for j < len(rest) && j < 10 && rest[j] >= '0' && rest[j] <= '9' {
			d[i] = d[i]*10 + int64(rest[j]-'0')
			j++
		}
		sep := ", "
		if i == 2 {
			sep = "]"
		}
		if j == 0 || (j > 1 && rest[0] == '0') || !bytes.HasPrefix(rest[j:], []byte(sep)) {
			return trace.RawValue(r.intern(raw))
		}
		rest = rest[j+len(sep):]
	}
	if v, ok := trace.Dim3Value(d[0], d[1], d[2]); ok && len(rest) == 0 {
		return v
	}
	return trace.RawValue(r.intern(raw))
}

// intArg reads an integer id; strings of digits are accepted.
func (r *reader) intArg() int64 {
	if r.compound("unreadable id") {
		return 0
	}
	if r.peek() == '"' {
		b := r.str()
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return n
		}
		r.problem("non-numeric id", string(truncate(b, 40)))
		return 0
	}
	w := r.word()
	if string(w) == "null" {
		return 0
	}
	v, ok := number(w)
	if !ok || v.Kind == trace.ValBigInt {
		r.problem("unreadable id", string(truncate(w, 40)))
		return 0
	}
	n, _ := v.Int()
	return n
}
