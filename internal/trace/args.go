package trace

import (
	"encoding/binary"
	"encoding/json"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ArgSetID names a deduplicated set of arguments; 0 is the empty set.
type ArgSetID uint32

// ValueKind is the JSON type of an argument value.
type ValueKind uint8

const (
	ValNull   ValueKind = iota
	ValInt              // fits int64
	ValFloat            // any other number
	ValString           // Str is the interned text
	ValBool
	ValRaw // an array or object, interned as compact JSON text
	// ValBigInt is an integer beyond int64 (Comms Id), interned as its digits.
	ValBigInt
	// ValDim3 is a launch dimension as Kineto writes grid and block,
	// "[x, y, z]" with non-negative integers: x in the low 32 bits, y and
	// z in 16 bits each (CUDA's limits). Other arrays stay ValRaw.
	ValDim3
)

// valLifted marks, in a stored argument set, an argument whose value each
// event keeps itself (see InternArgs); Bits holds the value's kind.
const valLifted ValueKind = 0x80

// Value is one argument value. Bits holds the int64, the float64 bits, the
// bool (0/1) or the StrID, depending on Kind.
type Value struct {
	Kind ValueKind
	Bits uint64
}

// Arg is one key/value pair.
type Arg struct {
	Key StrID
	Val Value
}

// IntValue, FloatValue, StrValue, BoolValue and RawValue build Values.
func IntValue(n int64) Value     { return Value{ValInt, uint64(n)} }
func FloatValue(f float64) Value { return Value{ValFloat, math.Float64bits(f)} }
func StrValue(id StrID) Value    { return Value{ValString, uint64(id)} }
func RawValue(id StrID) Value    { return Value{ValRaw, uint64(id)} }
func BigIntValue(id StrID) Value { return Value{ValBigInt, uint64(id)} }

// Dim3Value builds a ValDim3; ok is false when a dimension is out of its
// range.
func Dim3Value(x, y, z int64) (v Value, ok bool) {
	if x < 0 || x > math.MaxUint32 || y < 0 || y > math.MaxUint16 || z < 0 || z > math.MaxUint16 {
		return Value{}, false
	}
	return Value{ValDim3, uint64(x) | uint64(y)<<32 | uint64(z)<<48}, true
}

func BoolValue(b bool) Value {
	if b {
		return Value{ValBool, 1}
	}
	return Value{ValBool, 0}
}

// Int returns the value as an integer (floats truncated) and whether it is
// a number.
func (v Value) Int() (int64, bool) {
	switch v.Kind {
	case ValInt:
		return int64(v.Bits), true
	case ValFloat:
		return int64(math.Float64frombits(v.Bits)), true
	case ValBool:
		return int64(v.Bits), true
	}
	return 0, false
}

// Float returns the value as a float64 and whether it is a number.
func (v Value) Float() (float64, bool) {
	switch v.Kind {
	case ValInt:
		return float64(int64(v.Bits)), true
	case ValFloat:
		return math.Float64frombits(v.Bits), true
	}
	return 0, false
}

// StrID returns the interned text of string, raw and big-int values.
func (v Value) StrID() (StrID, bool) {
	switch v.Kind {
	case ValString, ValRaw, ValBigInt:
		return StrID(v.Bits), true
	}
	return 0, false
}

// Format renders the value as valid JSON text, whatever the trace held:
// strings are JSON-quoted (control characters escaped, invalid UTF-8 as
// U+FFFD), and a raw array, object or big number that the lenient reader
// kept but that is not valid JSON (bad escapes, raw control bytes, NaN)
// becomes a JSON string of its text.
func (t *Trace) Format(v Value) string {
	switch v.Kind {
	case ValInt:
		return strconv.FormatInt(int64(v.Bits), 10)
	case ValFloat:
		f := math.Float64frombits(v.Bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return QuoteJSON(strconv.FormatFloat(f, 'g', -1, 64))
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case ValString:
		return QuoteJSON(t.Str(StrID(v.Bits)))
	case ValBool:
		if v.Bits != 0 {
			return "true"
		}
		return "false"
	case ValRaw, ValBigInt:
		raw := t.Str(StrID(v.Bits))
		if utf8.ValidString(raw) && json.Valid([]byte(raw)) {
			return raw
		}
		return QuoteJSON(raw)
	case ValDim3:
		b := make([]byte, 0, 24)
		b = append(strconv.AppendUint(append(b, '['), v.Bits&math.MaxUint32, 10), ", "...)
		b = append(strconv.AppendUint(b, v.Bits>>32&math.MaxUint16, 10), ", "...)
		return string(append(strconv.AppendUint(b, v.Bits>>48, 10), ']'))
	}
	return "null"
}

// ArgSets stores each distinct argument set once.
//
// Design note: a kernel's launch geometry and occupancy, and a copy's
// bytes and bandwidth, differ from launch to launch; interned with the
// rest of their set they would make almost every set distinct (issue 16:
// 113k sets for 150k launches, 24 bytes per argument). So the values of
// those keys (perLaunch) are lifted out: the stored set keeps the key and
// the value's kind, and each event keeps the values themselves, 8 bytes
// each, in Trace.argVals from Events.ArgVals.Get(i) on, in the set's order.
// What remains repeats, as elsewhere.
type ArgSets struct {
	off  []uint32 // set i is args[off[i]:off[i+1]]
	args []Arg
}

// get returns the stored arguments of set id, lifted values as markers.
func (a *ArgSets) get(id ArgSetID) []Arg {
	if int(id)+1 >= len(a.off) {
		return nil
	}
	return a.args[a.off[id]:a.off[id+1]]
}

// lifted is how many of set id's values each event keeps itself.
func (a *ArgSets) lifted(id ArgSetID) int {
	n := 0
	for _, arg := range a.get(id) {
		if arg.Val.Kind&valLifted != 0 {
			n++
		}
	}
	return n
}

// Len is the number of distinct sets.
func (a *ArgSets) Len() int { return max(len(a.off)-1, 0) }

// perLaunch reports whether the numeric (or Dim3) value of key is lifted
// out of the argument set.
func perLaunch(key StrID, v Value) bool {
	switch key {
	case KeyGrid, KeyBlocksPerSM, KeyWarpsPerSM, KeyOccupancy, KeyBytes, KeyBandwidth:
		return v.Kind == ValInt || v.Kind == ValFloat || v.Kind == ValDim3
	}
	return false
}

// Args returns event i's arguments other than the lifted ids. The slice
// is shared unless the event has per-launch values: do not modify it.
func (t *Trace) Args(i int) []Arg {
	set := t.ArgSets.get(t.Events.Args[i])
	var out []Arg
	slot := 0
	for j, a := range set {
		if a.Val.Kind&valLifted == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(set)
			slot = int(t.Events.ArgVals.Get(i))
		}
		out[j].Val = Value{ValueKind(a.Val.Bits), t.argVals[slot]}
		slot++
	}
	if out == nil {
		return set
	}
	return out
}

// Arg returns event i's argument key.
func (t *Trace) Arg(i int, key StrID) (Value, bool) {
	before := 0 // lifted values before key's
	for _, a := range t.ArgSets.get(t.Events.Args[i]) {
		lifted := a.Val.Kind&valLifted != 0
		if a.Key == key {
			if lifted {
				return Value{ValueKind(a.Val.Bits), t.argVals[int(t.Events.ArgVals.Get(i))+before]}, true
			}
			return a.Val, true
		}
		if lifted {
			before++
		}
	}
	return Value{}, false
}

// ArgInt returns event i's integer argument key (0, false when absent).
func (t *Trace) ArgInt(i int, key StrID) (int64, bool) {
	v, ok := t.Arg(i, key)
	if !ok {
		return 0, false
	}
	return v.Int()
}

// ArgFloat returns event i's numeric argument key.
func (t *Trace) ArgFloat(i int, key StrID) (float64, bool) {
	v, ok := t.Arg(i, key)
	if !ok {
		return 0, false
	}
	return v.Float()
}

// ArgStr returns the text of event i's string (or raw JSON) argument key.
func (t *Trace) ArgStr(i int, key StrID) (string, bool) {
	v, ok := t.Arg(i, key)
	if !ok {
		return "", false
	}
	id, ok := v.StrID()
	if !ok {
		return t.Format(v), true
	}
	return t.Str(id), true
}

// InternArgs stores the arguments of one event: the per-launch values go
// to the trace's value store, the rest is stored as a set, equal sets
// sharing one id. It returns the set's id and where the event's values
// start (the event's ArgVals), and modifies args.
func (t *Trace) InternArgs(args []Arg) (ArgSetID, uint32) {
	start := uint32(len(t.argVals))
	t.argVals = roomFor(t.argVals, len(args), t.Events.Len()+1, cap(t.Events.Kind))
	for j, a := range args {
		if perLaunch(a.Key, a.Val) {
			t.argVals = append(t.argVals, a.Val.Bits)
			args[j].Val = Value{valLifted, uint64(a.Val.Kind)}
		}
	}
	return t.internSet(args), start
}

// internSet stores args as a set and returns its id; equal sets share one
// id. The slice is copied.
func (t *Trace) internSet(args []Arg) ArgSetID {
	if len(args) == 0 {
		return 0
	}
	var buf [16 * 32]byte
	key := buf[:0]
	for _, a := range args {
		key = binary.LittleEndian.AppendUint32(key, uint32(a.Key))
		key = append(key, byte(a.Val.Kind))
		key = binary.LittleEndian.AppendUint64(key, a.Val.Bits)
	}
	h := maphash.Bytes(argSeed, key)
	id, ok := t.argIndex[h]
	if ok && slices.Equal(t.ArgSets.get(id), args) {
		return id
	}
	if len(t.ArgSets.off) == 0 {
		t.ArgSets.off = append(t.ArgSets.off, 0, 0) // set 0: empty
	}
	id = ArgSetID(len(t.ArgSets.off) - 1)
	t.ArgSets.args = append(t.ArgSets.args, args...)
	t.ArgSets.off = append(t.ArgSets.off, uint32(len(t.ArgSets.args)))
	if !ok { // on a hash collision the first set keeps the entry: the new one is stored, just not shared
		t.argIndex[h] = id
	}
	return id
}

var argSeed = maphash.MakeSeed()

// QuoteJSON is s as a JSON string: quotes, backslashes and control
// characters (C0, DEL, C1) escaped, invalid UTF-8 replaced by U+FFFD.
func QuoteJSON(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(append(b, '"'))
}
