package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

const tableProgram = `import pandas as pd, torch
class Rows(torch.utils.data.Dataset):
    def __getitem__(self, i):
        row = self.df.iloc[i]

        x = torch.tensor(row.values)
        return x
class Tensors(torch.utils.data.Dataset):
    def __init__(self, df):
        kept = df.loc[df.label >= 0]
        self.x = torch.from_numpy(kept.to_numpy())
    def __getitem__(self, i):
        return self.x[i]
def rows(df):
    for _, r in df.iterrows():
        yield torch.tensor(r.values)
x = df.iloc[0]
y = torch.tensor(x.values)
`

// A function that reads a DataFrame's rows is found from any of its lines;
// one whose DataFrame is read in another function (__init__), and lines at
// module level, are not.
func TestReadsDataFrameRows(t *testing.T) {
	src := filepath.Join(t.TempDir(), "data.py")
	if err := os.WriteFile(src, []byte(tableProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newSourceCache()
	for line, want := range map[int]bool{6: true, 7: true, 4: true, 13: false, 11: true, 16: true, 18: false, 99: false} {
		if got := c.readsDataFrameRows(src, line); got != want {
			t.Errorf("line %d: %v, want %v", line, got, want)
		}
	}
}

// With workers that read a DataFrame row by row, the input change leads
// with converting it once; without, it does not name it.
func TestInputNamesTheDataFrameRows(t *testing.T) {
	two := 2
	for _, rows := range []bool{true, false} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.8}, d: &Diagnosis{}, in: Analyses{
			Run: &RunEvidence{Loaders: []Loader{{Dataset: "Rows", NumWorkers: &two}}, WorkersReadDataFrameRows: rows,
				Workers: &pyprofile.WorkerSummary{Processes: 2, Samples: 400, BusyShare: 0.97, CPUShare: 0.9,
					Lines: []pyprofile.WorkerLine{{File: "/p/data.py", Line: 6, Func: "Rows.__getitem__", BusyPct: 93}}}}}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatal("no input finding")
		}
		if got := strings.Contains(f.AllChanges(), "the Dataset reads a DataFrame row by row"); got != rows || !strings.Contains(f.AllChanges(), "2 workers cannot keep up") {
			t.Errorf("rows %v: change %q", rows, f.AllChanges())
		}
	}
}
