package trace

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
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
)

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

// Format renders the value as JSON text.
func (t *Trace) Format(v Value) string {
	switch v.Kind {
	case ValInt:
		return strconv.FormatInt(int64(v.Bits), 10)
	case ValFloat:
		return strconv.FormatFloat(math.Float64frombits(v.Bits), 'g', -1, 64)
	case ValString:
		return strconv.Quote(t.Strings[v.Bits])
	case ValBool:
		if v.Bits != 0 {
			return "true"
		}
		return "false"
	case ValRaw, ValBigInt:
		return t.Strings[v.Bits]
	}
	return "null"
}

// ArgSets stores each distinct argument set once.
type ArgSets struct {
	off  []uint32 // set i is args[off[i]:off[i+1]]
	args []Arg
}

// Get returns the arguments of set id.
func (a *ArgSets) Get(id ArgSetID) []Arg {
	if int(id)+1 >= len(a.off) {
		return nil
	}
	return a.args[a.off[id]:a.off[id+1]]
}

// Len is the number of distinct sets.
func (a *ArgSets) Len() int { return max(len(a.off)-1, 0) }

// Args returns event i's arguments other than the lifted ids.
func (t *Trace) Args(i int) []Arg { return t.ArgSets.Get(t.Events.Args[i]) }

// Arg returns event i's argument key.
func (t *Trace) Arg(i int, key StrID) (Value, bool) {
	for _, a := range t.ArgSets.Get(t.Events.Args[i]) {
		if a.Key == key {
			return a.Val, true
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
	return t.Strings[id], true
}

// InternArgs stores args as a set and returns its id; equal sets share one
// id. The slice is copied.
func (t *Trace) InternArgs(args []Arg) ArgSetID {
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
	if ok && slices.Equal(t.ArgSets.Get(id), args) {
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
