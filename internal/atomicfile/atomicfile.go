// Package atomicfile writes files so that readers never see a partial one.
package atomicfile

import (
	"errors"
	"io/fs"
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

// WriteNew is Write for a file that must not exist yet: it never replaces
// one. When path exists it returns an error matching fs.ErrExist and
// writes nothing, so concurrent writers each get a file of their own by
// trying the next name. The complete file appears at once (a hard link
// of the temporary file); where hard links are not supported it is
// created exclusively (O_EXCL) and written in place.
func WriteNew(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err != nil {
		return err
	}
	lerr := os.Link(tmp, path)
	if lerr == nil || errors.Is(lerr, fs.ErrExist) {
		return lerr
	}
	// No hard links here (some network and FUSE file systems).
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
