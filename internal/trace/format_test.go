package trace

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Format writes valid JSON for anything the lenient reader keeps: strings
// with control characters and invalid UTF-8, raw values that are not
// JSON, non-finite numbers; valid raw JSON is kept as it was.
func TestFormatIsValidJSON(t *testing.T) {
	tr := New("t.json")
	for _, c := range []struct {
		v    Value
		want string // "" : only valid; else exact
	}{
		{StrValue(tr.Intern([]byte("a\x1b[31m\a\x00\"\\\u009b\u2028 é"))), `"a\u001b[31m\u0007\u0000\"\\\u009b\u2028 é"`},
		{StrValue(tr.Intern([]byte("bad\xff\xc3("))), `"bad\ufffd\ufffd("`},
		{RawValue(tr.Intern([]byte(`{"k":"\x"}`))), ""},
		{RawValue(tr.Intern([]byte("[\"\x01\"]"))), ""},
		{RawValue(tr.Intern([]byte("[01, 1, 1]"))), `"[01, 1, 1]"`},
		{RawValue(tr.Intern([]byte(`[1, {"a": [2]}]`))), `[1, {"a": [2]}]`},
		{FloatValue(math.NaN()), `"NaN"`},
		{FloatValue(math.Inf(-1)), `"-Inf"`},
		{FloatValue(1.5), `1.5`},
	} {
		got := tr.Format(c.v)
		if !json.Valid([]byte(got)) || strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 }) {
			t.Errorf("%q: not valid JSON without control bytes", got)
		}
		if c.want != "" && got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}
