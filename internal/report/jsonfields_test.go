package report

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// field is one JSON path of the report: "a.b" for an object's field,
// "a[].b" inside arrays, "a{}" for a map (its keys are data).
type field struct {
	path, typ, doc string
}

// jsonFields lists the JSON paths of t's fields, with their Go comments.
func jsonFields(t reflect.Type, prefix string, docs map[string]string, seen map[reflect.Type]bool, out *[]field) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() != reflect.Uint8 {
			jsonFields(t.Elem(), prefix+"[]", docs, seen, out)
		}
		return
	case reflect.Map:
		jsonFields(t.Elem(), prefix+"{}", docs, seen, out)
		return
	case reflect.Struct:
	default:
		return
	}
	if t.PkgPath() == "time" || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			jsonFields(f.Type, prefix, docs, seen, out)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		doc := docs[t.PkgPath()+"."+t.Name()+"."+f.Name]
		if doc == "" { // the comment of the field's type, when it is a named struct
			e := f.Type
			for e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice || e.Kind() == reflect.Map {
				e = e.Elem()
			}
			doc = docs[e.PkgPath()+"."+e.Name()]
		}
		*out = append(*out, field{path: p, typ: jsonType(f.Type), doc: doc})
		jsonFields(f.Type, p, docs, seen, out)
	}
}

func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "JSON"
		}
		return "array of " + jsonType(t.Elem())
	case reflect.Map:
		return "object of " + jsonType(t.Elem())
	case reflect.Struct:
		if t.PkgPath() == "time" {
			return "string (RFC 3339 time)"
		}
		return "object"
	}
	return "any"
}

// fieldDocs reads the Go comments of the module's struct types and their
// fields: "pkgpath.Type" and "pkgpath.Type.Field" -> first sentence.
func fieldDocs(t *testing.T) map[string]string {
	const module = "github.com/bottleneck-dev/bottleneck"
	docs := map[string]string{}
	root := testutil.RepoRoot()
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := module + "/" + filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			if gd, ok := n.(*ast.GenDecl); ok && len(gd.Specs) == 1 && gd.Doc != nil {
				if ts, ok := gd.Specs[0].(*ast.TypeSpec); ok {
					docs[pkg+"."+ts.Name.Name] = firstSentence(gd.Doc.Text())
				}
			}
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fl := range st.Fields.List {
				doc := fl.Doc.Text()
				if doc == "" {
					doc = fl.Comment.Text()
				}
				for _, n := range fl.Names {
					docs[pkg+"."+ts.Name.Name+"."+n.Name] = firstSentence(doc)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// unit is the unit a field name's suffix states (docs/json.md, "Units").
func unit(path string) string {
	name := path[strings.LastIndexAny(path, ".]}")+1:]
	for _, u := range []struct{ suffix, unit string }{
		{"_us", "µs"}, {"_ns", "ns"}, {"_ms", "ms"}, {"_s", "s"}, {"_pct", "%"}, {"bytes", "bytes"}, {"_bytes", "bytes"},
	} {
		if strings.HasSuffix(name, u.suffix) {
			return u.unit
		}
	}
	return ""
}

var (
	docStart = "<!-- fields: generated from the Go types by `BOTTLENECK_UPDATE=1 go test ./internal/report -run TestJSONDoc` -->\n"
	docEnd   = "<!-- end of fields -->\n"
)

// TestJSONDoc: docs/json.md documents exactly the fields of analyze
// --json's report (the Go types it is encoded from), and the JSON of real
// traces has no field the document lacks.
func TestJSONDoc(t *testing.T) {
	var fields []field
	jsonFields(reflect.TypeFor[Report](), "", fieldDocs(t), map[reflect.Type]bool{}, &fields)
	var table bytes.Buffer
	table.WriteString(docStart + "\n| field | type | unit | meaning |\n|---|---|---|---|\n")
	for _, f := range fields {
		fmt.Fprintf(&table, "| `%s` | %s | %s | %s |\n", f.path, f.typ, unit(f.path), f.doc)
	}
	table.WriteString("\n" + docEnd)

	path := filepath.Join(testutil.RepoRoot(), "docs", "json.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(docStart)), bytes.Index(doc, []byte(docEnd))
	if i < 0 || j < i {
		t.Fatalf("%s: no generated field section", path)
	}
	want := slices.Concat(doc[:i], table.Bytes(), doc[j+len(docEnd):])
	if *testutil.Update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	} else if !bytes.Equal(doc, want) {
		t.Errorf("%s does not list the report's fields as they are: run BOTTLENECK_UPDATE=1 go test ./internal/report -run TestJSONDoc and describe the change", path)
	}

	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(doc, -1) {
		documented[string(m[1])] = true
	}
	for _, f := range fields {
		if !documented[f.path] {
			t.Errorf("field %s is not in docs/json.md", f.path)
		}
	}
	for p := range documented {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.path == p }) {
			t.Errorf("docs/json.md documents %s, which the report does not have", p)
		}
	}
}
