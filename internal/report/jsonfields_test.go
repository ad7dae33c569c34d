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
	"unicode"
	"unicode/utf8"

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
		doc := jsonNames(docs[t.PkgPath()+"."+t.Name()+"."+f.Name], t)
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

// goIdent matches a word that may be a Go field name.
var goIdent = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// jsonNames writes the Go names of struct t's fields in a meaning as the
// JSON names readers of the report see: the comments are written in Go.
func jsonNames(meaning string, t reflect.Type) string {
	names := map[string]string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "" && name != "-" {
			names[f.Name] = name
		}
	}
	parts := strings.Split(meaning, `"`)
	for i := 0; i < len(parts); i += 2 { // not inside quotes: "Call stack", "Ranks"
		parts[i] = goIdent.ReplaceAllStringFunc(parts[i], func(w string) string {
			if name, ok := names[w]; ok {
				return "`" + name + "`"
			}
			return w
		})
	}
	return strings.Join(parts, `"`)
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
					docs[pkg+"."+ts.Name.Name] = meaning(gd.Doc.Text(), ts.Name.Name)
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
					docs[pkg+"."+ts.Name.Name+"."+n.Name] = meaning(doc, n.Name)
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

// meaning is the first sentence of a Go doc comment without its subject,
// the Go name, which readers of the JSON never see: "Us is the gap's
// length." reads "The gap's length.".
func meaning(doc, name string) string {
	s := firstSentence(doc)
	rest, ok := strings.CutPrefix(s, name)
	if !ok {
		return s
	}
	for _, verb := range []string{": ", " is ", " are ", " "} {
		if r, ok := strings.CutPrefix(rest, verb); ok {
			c, size := utf8.DecodeRuneInString(r)
			return string(unicode.ToUpper(c)) + r[size:]
		}
	}
	return s
}

// sentenceEnd is a period that ends a sentence: another one starts after it
// (not "e.g. x" or "fp64 ... fp4").
var sentenceEnd = regexp.MustCompile(`\. [A-Z]`)

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if loc := sentenceEnd.FindStringIndex(s); loc != nil {
		s = s[:loc[0]+1]
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// unit is the unit a field name's words state (docs/json.md, "Units").
func unit(path string) string {
	name := path[strings.LastIndexAny(path, ".]}")+1:]
	for _, w := range strings.Split(name, "_") {
		switch w {
		case "us":
			return "µs"
		case "ns":
			return "ns"
		case "ms":
			return "ms"
		case "seconds":
			return "s"
		case "pct":
			return "%"
		case "bytes":
			return "bytes"
		case "gbps", "gbs":
			return "GB/s"
		case "tflops":
			return "TFLOP/s"
		}
	}
	return ""
}

var (
	docStart = "<!-- fields: generated from the Go types by `BOTTLENECK_UPDATE=1 go test ./internal/report -run TestJSONDoc` -->\n"
	docEnd   = "<!-- end of fields -->\n"
)

// TestJSONDoc: docs/json.md documents exactly the fields of analyze
// --json's report (the Go types it is encoded from), each with a meaning
// (internal/driver's TestJSONHasOnlyDocumentedFields checks the JSON of
// real inputs against the list).
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

	for _, f := range fields {
		if f.doc == "" {
			t.Errorf("field %s has no meaning: give its Go field (or its named struct type) a doc comment", f.path)
		}
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
