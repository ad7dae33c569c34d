package kineto

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
)

// input is an opened trace file.
type input struct {
	r io.Reader // its uncompressed bytes (nil when mapped)
	// mapped is the whole file, mapped read-only: plain files under
	// mapBelow bytes, where not copying them saves up to a fifth of the
	// CPU (mapFile).
	mapped     []byte
	compressed bool
	size       int64 // the uncompressed size, estimated for gzip (0: unknown)
	close      func()
}

// openInput opens path for reading its uncompressed bytes.
// Gzip is recognised by its magic bytes, not by the file name; inflating
// runs on its own goroutine so it overlaps with parsing.
// A pipe or "-" (stdin) is read as a stream: its size is unknown (0).
func openInput(path string) (*input, error) {
	f := os.Stdin
	if path != Stdin {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s is a directory", path)
	}
	if st.Mode().IsRegular() && st.Size() < mapBelow && !isGzip(f) {
		if m := mapFile(f, st.Size()); m != nil {
			f.Close()
			return &input{mapped: m, size: st.Size(), close: func() { unmapFile(m) }}, nil
		}
	}
	br := bufio.NewReaderSize(f, 256<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: bad gzip header: %w", path, err)
		}
		ra := newReadAhead(zr)
		in := &input{r: ra, compressed: true, close: func() { ra.Close(); f.Close() }}
		if st.Mode().IsRegular() {
			in.size = gzipSizeHint(f, st.Size())
		}
		return in, nil
	}
	if !st.Mode().IsRegular() {
		return &input{r: br, close: func() { f.Close() }}, nil
	}
	return &input{r: br, size: st.Size(), close: func() { f.Close() }}, nil
}

// isGzip reports whether the regular file f starts with gzip's magic
// bytes (read in place: the offset stays where it was).
func isGzip(f *os.File) bool {
	var magic [2]byte
	_, err := f.ReadAt(magic[:], 0)
	return err == nil && magic[0] == 0x1f && magic[1] == 0x8b
}

// mapBelow is the size under which a plain file is mapped instead of
// read. Above it, mapping saved no time (a 100 MB trace: 0.98-1.01x the
// wall time) and its pages would count in the process's memory.
const mapBelow = 24 << 20

// Stdin is the path that names standard input.
const Stdin = "-"

// readAhead reads from src on its own goroutine into a small ring of
// buffers so decompression and parsing use both cores.
type readAhead struct {
	full chan chunk
	free chan []byte
	done chan struct{}
	cur  chunk
	off  int
}

type chunk struct {
	b   []byte
	err error
}

const aheadChunk = 1 << 20

func newReadAhead(src io.Reader) *readAhead {
	ra := &readAhead{full: make(chan chunk, 4), free: make(chan []byte, 4), done: make(chan struct{})}
	for range 4 {
		ra.free <- make([]byte, aheadChunk)
	}
	go func() {
		defer close(ra.full)
		for {
			var buf []byte
			select {
			case buf = <-ra.free:
			case <-ra.done:
				return
			}
			n, err := fillBuf(src, buf)
			if n > 0 || err != nil {
				select {
				case ra.full <- chunk{buf[:n], err}:
				case <-ra.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ra
}

// fillBuf reads until buf is full or src fails, keeping src's own error
// (io.ReadFull would turn a truncated gzip stream into a short last block).
func fillBuf(src io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (ra *readAhead) Read(p []byte) (int, error) {
	for ra.off >= len(ra.cur.b) {
		if ra.cur.err != nil {
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.free <- ra.cur.b[:cap(ra.cur.b)]
		}
		c, ok := <-ra.full
		if !ok {
			return 0, io.EOF
		}
		ra.cur, ra.off = c, 0
	}
	n := copy(p, ra.cur.b[ra.off:])
	ra.off += n
	return n, nil
}

func (ra *readAhead) Close() {
	select {
	case <-ra.done:
	default:
		close(ra.done)
	}
}

// gzipSizeHint estimates the uncompressed size of a gzip file from its
// trailer (ISIZE, the size mod 4 GiB). Above 4 GiB that is ambiguous; the
// candidate nearest (in ratio) to the 12x that JSON traces typically
// compress by wins (they reach 8-20x).
func gzipSizeHint(f *os.File, compressed int64) int64 {
	var tail [4]byte
	if _, err := f.ReadAt(tail[:], compressed-4); err != nil {
		return compressed * 12
	}
	return nearestWrap(int64(binary.LittleEndian.Uint32(tail[:])), compressed*12)
}

// nearestWrap returns isize + k*4 GiB (k >= 0) nearest to want in ratio.
func nearestWrap(isize, want int64) int64 {
	best := isize
	for c := isize; c < 64*want; c += 1 << 32 {
		if ratioDist(c, want) < ratioDist(best, want) {
			best = c
		}
	}
	return best
}

func ratioDist(a, b int64) float64 {
	return math.Abs(math.Log(float64(max(a, 1)) / float64(max(b, 1))))
}

// SizeHint estimates the uncompressed size of the trace at path without
// reading it (the gzip trailer for compressed files).
// Pipes and stdin give 0: estimating would consume them.
func SizeHint(path string) int64 {
	st, err := os.Stat(path)
	if path == Stdin || err != nil || !st.Mode().IsRegular() {
		return 0
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	if isGzip(f) {
		return gzipSizeHint(f, st.Size())
	}
	return st.Size()
}

// memoryGuard ends the input with memlimit's error once the heap exceeds
// the process's limit, checked every few MiB read: the reader then reports
// the input as cut off there, and keeps what it read.
type memoryGuard struct {
	src   io.Reader
	since int
	err   error
}

const memoryCheckEvery = 4 << 20

func (g *memoryGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.since >= memoryCheckEvery {
		g.since = 0
		if memlimit.Exceeded() {
			g.err = memlimit.Error()
			return 0, g.err
		}
	}
	n, err := g.src.Read(p)
	g.since += n
	return n, err
}
