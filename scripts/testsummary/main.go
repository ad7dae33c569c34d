// Command testsummary reads `go test -json` on stdin, prints what `go
// test` without -v would (package results, and the output of failing
// tests), and ends with how many tests were skipped and
// why (the skip message, without its file:line), so a run on a machine
// without torch, a browser or a GPU says what it did not check, and last
// with the failed tests by package and name, where a reader of a long log
// looks first.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// location is the "file_test.go:12: " prefix t.Skip puts before its message.
var location = regexp.MustCompile(`^\s*\S+\.go:\d+: `)

func main() {
	last := map[string]string{}     // package/test -> its last logged line
	buffered := map[string]string{} // package/test -> its output, printed if it fails
	reasons := map[string]int{}
	var failed []string // package and test, in the order they failed
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var e event
		if json.Unmarshal(in.Bytes(), &e) != nil {
			fmt.Println(in.Text()) // not JSON: build errors and the like
			continue
		}
		key := e.Package + "/" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
					fmt.Print(e.Output)
				}
				continue
			}
			buffered[key] += e.Output
			if location.MatchString(e.Output) {
				last[key] = strings.TrimSpace(location.ReplaceAllString(e.Output, ""))
			}
		case "fail":
			fmt.Print(buffered[key])
			delete(buffered, key)
			if e.Test != "" {
				failed = append(failed, e.Package+" "+e.Test)
			}
		case "skip", "pass":
			if e.Action == "skip" && e.Test != "" {
				reasons[cmp.Or(last[key], "(no message)")]++
			}
			delete(buffered, key)
		}
	}
	writeSkips(reasons)
	if len(failed) == 0 {
		return
	}
	fmt.Printf("==> %d tests failed:\n", len(failed))
	for _, f := range failed {
		fmt.Printf("  %s\n", f)
	}
	os.Exit(1)
}

func writeSkips(reasons map[string]int) {
	if len(reasons) == 0 {
		fmt.Println("==> no test skipped")
		return
	}
	type reason struct {
		why string
		n   int
	}
	var rs []reason
	total := 0
	for why, n := range reasons {
		rs = append(rs, reason{why, n})
		total += n
	}
	slices.SortFunc(rs, func(a, b reason) int { return cmp.Or(b.n-a.n, strings.Compare(a.why, b.why)) })
	fmt.Printf("==> %d tests skipped:\n", total)
	for _, r := range rs {
		why := r.why
		if len(why) > 160 {
			why = why[:157] + "..."
		}
		fmt.Printf("  %4d  %s\n", r.n, why)
	}
}
