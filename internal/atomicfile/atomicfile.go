// Package atomicfile writes files so that readers never see a partial one.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to a temporary file beside path and renames it into
// place (mode 0644): a reader sees the old file or the new one, and a
// failed write leaves no partial file behind.
func Write(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
