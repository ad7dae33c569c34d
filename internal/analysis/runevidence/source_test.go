package runevidence

import (
	"os"
	"path/filepath"
	"testing"
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
	c := newSourceCache("")
	for line, want := range map[int]bool{6: true, 7: true, 4: true, 13: false, 11: true, 16: true, 18: false, 99: false} {
		if got := c.readsDataFrameRows(src, line); got != want {
			t.Errorf("line %d: %v, want %v", line, got, want)
		}
	}
}

// The autocast blocks on the CPU are found around a line, with their
// dtype (bfloat16 by default); a CUDA one and lines outside are not.
func TestCPUAutocastBlocks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(src, []byte(autocastProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newSourceCache("")
	for line, want := range map[int]int{5: 4, 6: 0, 8: 0, 10: 9, 12: 11, 16: 14, 2: 0} {
		if got := c.enclosing(src, line, &cpuAutocastBlock).Line; got != want {
			t.Errorf("line %d: in the block at %d, want %d", line, got, want)
		}
	}
}

const autocastProgram = `import torch
m = torch.nn.Linear(8, 8)
for step in range(3):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = m(torch.randn(4, 8)).sum()
    loss.backward()
    with torch.autocast("cuda"):
        y = m(torch.randn(4, 8))
    with torch.amp.autocast(device_type='cpu', dtype=torch.float16):
        z = m(torch.randn(4, 8))
    with torch.cpu.amp.autocast():
        w = m(torch.randn(4, 8))

@torch.autocast("cpu")
def forward(x):
    return m(x)
`
