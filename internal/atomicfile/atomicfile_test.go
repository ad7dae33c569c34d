package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	for _, want := range []string{"first", "second"} {
		if err := Write(p, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Fatalf("content %q, want %q", b, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files left, want 1", len(ents))
	}
}

func TestWriteIntoMissingDirectoryFails(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "f.txt"), []byte("x")); err == nil {
		t.Fatal("want an error")
	}
}

func TestWriteNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.html")
	if err := WriteNew(p, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(p, []byte("second")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Errorf("content %q", b)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("files left: %v", names)
	}
}
