package repro

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Inputs is what the profiler wrote about one call's inputs
// (record_shapes=True): "Input Dims", "Input type", "Input Strides"
// (newer torch) and "Concrete Inputs", each a JSON list with one entry
// per argument in schema order.
type Inputs struct {
	Dims, Types, Strides, Concrete string
}

// tensorTypes are the "Input type" names of tensors the scripts can build
// (runtime.py's DTYPES).
var tensorTypes = map[string]string{
	"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
	"long int": "", "int": "", "short int": "", "signed char": "", "unsigned char": "", "bool": "",
	"c10::complex<float>": "", "c10::complex<double>": "",
}

// pyArgs turns the recorded inputs into Python expressions, one per
// argument (trailing unrecorded ones left out: they keep their defaults),
// and says what it could not rebuild. The expressions hold only numbers,
// True/False/None, and string literals from pyStr: nothing from the trace
// reaches the script unquoted.
func pyArgs(r Inputs) (args []string, notes []string, err error) {
	var dims []json.RawMessage
	var types, concrete []string
	var strides []json.RawMessage
	if err := json.Unmarshal([]byte(r.Dims), &dims); err != nil {
		return nil, nil, fmt.Errorf("Input Dims %s: %v", clip(r.Dims), err)
	}
	if err := json.Unmarshal([]byte(r.Types), &types); err != nil {
		return nil, nil, fmt.Errorf("Input type %s: %v", clip(r.Types), err)
	}
	if r.Concrete != "" {
		if err := json.Unmarshal([]byte(r.Concrete), &concrete); err != nil {
			return nil, nil, fmt.Errorf("Concrete Inputs %s: %v", clip(r.Concrete), err)
		}
	}
	if r.Strides != "" {
		if err := json.Unmarshal([]byte(r.Strides), &strides); err != nil {
			return nil, nil, fmt.Errorf("Input Strides %s: %v", clip(r.Strides), err)
		}
	} else {
		notes = append(notes, "the trace has no Input Strides: tensors are contiguous")
	}
	if len(types) != len(dims) {
		return nil, nil, fmt.Errorf("Input Dims has %d entries and Input type %d", len(dims), len(types))
	}
	for i, typ := range types {
		conc := ""
		if i < len(concrete) {
			conc = strings.TrimSpace(concrete[i])
		}
		switch _, isTensor := tensorTypes[typ]; {
		case isTensor:
			var shape []int64
			if err := json.Unmarshal(dims[i], &shape); err != nil {
				return nil, nil, fmt.Errorf("input %d: Input Dims entry %s is not one shape", i, clip(string(dims[i])))
			}
			st := "None"
			if i < len(strides) {
				var s []int64
				if json.Unmarshal(strides[i], &s) == nil && len(s) == len(shape) {
					st = intList(s)
				}
			}
			args = append(args, fmt.Sprintf("tensor(%s, %s, %s, device)", intList(shape), st, pyStr(typ)))
		case (typ == "Scalar" || typ == "ScalarList") && conc == "":
			return nil, nil, fmt.Errorf("input %d: the trace did not record the %s's value (no Concrete Inputs: torch before 2.1 or a value it leaves out)", i, typ)
		case typ == "Scalar":
			v, ok := pyScalar(conc)
			if !ok {
				return nil, nil, fmt.Errorf("input %d: Scalar with value %s, not a number or bool", i, pyStr(conc))
			}
			args = append(args, v)
		case typ == "ScalarList":
			v, ok := pyScalarList(conc)
			if !ok {
				return nil, nil, fmt.Errorf("input %d: ScalarList with value %s, not a list of numbers", i, pyStr(conc))
			}
			args = append(args, v)
		case typ == "" && conc == "":
			// None, an optional tensor left out, or a string or other
			// argument the profiler does not record.
			args = append(args, "None")
		default:
			return nil, nil, fmt.Errorf("input %d: type %s is not one a script can rebuild", i, pyStr(typ))
		}
	}
	// Unrecorded arguments at the end keep their defaults: some are strings
	// (gelu's approximate), which None would not fit.
	for len(args) > 0 && args[len(args)-1] == "None" && types[len(args)-1] == "" {
		args = args[:len(args)-1]
	}
	for i, a := range args {
		if a == "None" {
			notes = append(notes, fmt.Sprintf("argument %d was not recorded (None, or a string the profiler leaves out): passed as None", i))
		}
	}
	return args, notes, nil
}

func intList(v []int64) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

var intRE = regexp.MustCompile(`^-?[0-9]+$`)

// pyScalar is a Concrete Inputs scalar ("1", "0.", "-1e-05", "True") as
// Python source.
func pyScalar(s string) (string, bool) {
	switch s {
	case "True", "true":
		return "True", true
	case "False", "false":
		return "False", true
	}
	if intRE.MatchString(s) {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return s, true
		}
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", false
	}
	switch {
	case math.IsInf(f, 1):
		return "float('inf')", true
	case math.IsInf(f, -1):
		return "float('-inf')", true
	case math.IsNaN(f):
		return "float('nan')", true
	}
	v := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(v, ".e") {
		v += ".0"
	}
	return v, true
}

// pyScalarList is a Concrete Inputs list ("[1, 1]") as Python source.
func pyScalarList(s string) (string, bool) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return "", false
	}
	inner := strings.TrimSpace(s[1 : len(s)-1])
	if inner == "" {
		return "[]", true
	}
	var parts []string
	for _, p := range strings.Split(inner, ",") {
		v, ok := pyScalar(strings.TrimSpace(p))
		if !ok {
			return "", false
		}
		parts = append(parts, v)
	}
	return "[" + strings.Join(parts, ", ") + "]", true
}

// clip shortens trace text quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return pyStr(s)
}
