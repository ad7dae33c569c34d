package kineto

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"testing"
)

func walk(v reflect.Value, path string, out map[string]int64, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		walk(v.Elem(), path, out, seen)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			walk(v.Field(i), path+"."+v.Type().Field(i).Name, out, seen)
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		out[path] += int64(v.Cap()) * int64(v.Type().Elem().Size())
		if k := v.Type().Elem().Kind(); k == reflect.Struct || k == reflect.Slice || k == reflect.Pointer || k == reflect.String {
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), path+"[]", out, seen)
			}
		}
	case reflect.String:
		out[path] += int64(v.Len())
	case reflect.Map:
		out[path] += int64(v.Len()) * int64(v.Type().Key().Size()+v.Type().Elem().Size())
	}
}

func TestZZFootprint(t *testing.T) {
	f := os.Getenv("XFOOT")
	if f == "" {
		t.Skip()
	}
	tr, err := ReadFile(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	walk(reflect.ValueOf(tr), "T", out, map[uintptr]bool{})
	var keys []string
	var tot int64
	for k, v := range out {
		keys = append(keys, k)
		tot += v
	}
	sort.Slice(keys, func(i, j int) bool { return out[keys[i]] > out[keys[j]] })
	fmt.Printf("events %d total %.1f MB (%.1f B/event)\n", tr.Events.Len(), float64(tot)/1e6, float64(tot)/float64(tr.Events.Len()))
	for _, k := range keys[:min(30, len(keys))] {
		fmt.Printf("%8.2f MB %6.1f B/ev  %s\n", float64(out[k])/1e6, float64(out[k])/float64(tr.Events.Len()), k)
	}
}
