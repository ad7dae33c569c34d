package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// csv: one table per file (WriteCSVTables) or one table to a writer
// (Generate with Options.Table). Columns are the JSON field names of the
// report's rows (docs/json.md), with "rank" and "trace" first when
// several traces were read. Lists inside a row (a sync cause's stack) are
// joined with " <- ".

// Tables lists the CSV tables.
var Tables = []string{"operators", "kernels", "steps", "idle_streams", "host_waits", "sync_causes", "sync_steps", "gpus"}

// tableRows returns the rows of table name for one trace (a slice of
// structs) or nil.
func tableRows(tr *report.TraceReport, name string) any {
	switch name {
	case "operators":
		if tr.Ops != nil {
			return tr.Ops.Rows
		}
	case "kernels":
		if tr.Kernels != nil {
			return tr.Kernels.Rows
		}
	case "steps":
		if tr.Breakdown != nil {
			return tr.Breakdown.Steps
		}
	case "idle_streams":
		if tr.Idle != nil {
			return tr.Idle.Streams
		}
	case "host_waits":
		if tr.Idle != nil {
			return tr.Idle.TopHostWaits
		}
	case "sync_causes":
		if tr.Syncs != nil {
			return tr.Syncs.Causes
		}
	case "sync_steps":
		if tr.Syncs != nil {
			return tr.Syncs.PerStep
		}
	case "gpus":
		if tr.GPU != nil {
			return tr.GPU.Devices
		}
	}
	return nil
}

// columns flattens a struct type's JSON fields (embedded structs inline).
func columns(t reflect.Type) (names []string, paths [][]int) {
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			p := append(slices.Clone(prefix), i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
				walk(f.Type, p)
				continue
			}
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names = append(names, name)
			paths = append(paths, p)
		}
	}
	walk(t, nil)
	return names, paths
}

func cell(v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64)
	case reflect.Slice, reflect.Array:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = cell(v.Index(i))
		}
		return strings.Join(parts, " <- ")
	case reflect.Struct:
		names, paths := columns(v.Type())
		parts := make([]string, len(names))
		for i := range names {
			parts[i] = names[i] + "=" + cell(v.FieldByIndex(paths[i]))
		}
		return strings.Join(parts, " ")
	case reflect.Map:
		keys := v.MapKeys()
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprint(k.Interface())+"="+cell(v.MapIndex(k)))
		}
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(v.Interface())
}

// WriteCSV writes table name of r to w.
func WriteCSV(w io.Writer, r *report.Report, name string) error {
	if !slices.Contains(Tables, name) {
		return fmt.Errorf("%w: unknown table %q (want one of %s)", ErrUsage, name, strings.Join(Tables, ", "))
	}
	cw := csv.NewWriter(w)
	multi := len(r.Traces) > 1
	header := false
	for _, tr := range r.Traces {
		rows := tableRows(&tr, name)
		rv := reflect.ValueOf(rows)
		if rows == nil || rv.Kind() != reflect.Slice {
			continue
		}
		names, paths := columns(rv.Type().Elem())
		if !header {
			h := names
			if multi {
				h = append([]string{"rank", "trace"}, names...)
			}
			if err := cw.Write(h); err != nil {
				return err
			}
			header = true
		}
		for i := range rv.Len() {
			row := make([]string, 0, len(names)+2)
			if multi {
				row = append(row, strconv.Itoa(tr.Rank), filepath.Base(tr.Path))
			}
			el := rv.Index(i)
			for _, p := range paths {
				row = append(row, csvSafe(cell(el.FieldByIndex(p))))
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	if !header {
		// An empty table still has its header.
		if err := cw.Write(emptyHeader(name)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe defuses spreadsheet formulas: a cell from an untrusted trace
// that starts with = + - @ (and is not a number) gets a leading quote.
// Control characters become '?' and invalid UTF-8 U+FFFD.
func csvSafe(s string) string {
	s = textsafe.Text(s) // no control byte or invalid UTF-8 in the file
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	return "'" + s
}

func emptyHeader(name string) []string {
	types := map[string]reflect.Type{
		"operators": reflect.TypeFor[optable.OpRow](), "kernels": reflect.TypeFor[optable.KernelRow](),
		"steps": reflect.TypeFor[breakdown.Step](), "idle_streams": reflect.TypeFor[idle.Stream](),
		"host_waits": reflect.TypeFor[idle.Gap](), "sync_causes": reflect.TypeFor[syncs.Cause](),
		"sync_steps": reflect.TypeFor[syncs.Step](), "gpus": reflect.TypeFor[gpu.Device](),
	}
	names, _ := columns(types[name])
	return names
}

func writeCSVTable(w io.Writer, in *Input, o *Options) error {
	if in.Report == nil {
		return fmt.Errorf("%w: no trace was read", ErrNoInput)
	}
	if o.Table == "" {
		return fmt.Errorf("%w: csv: name a table (--table %s) or write all of them into a directory (-o DIR)", ErrUsage, strings.Join(Tables, "|"))
	}
	return WriteCSV(w, in.Report, o.Table)
}

// WriteCSVTables writes every table as dir/NAME.csv and returns the paths.
func WriteCSVTables(dir string, r *report.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, name := range Tables {
		p := filepath.Join(dir, name+".csv")
		f, err := os.Create(p)
		if err != nil {
			return out, err
		}
		err = WriteCSV(f, r, name)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}
