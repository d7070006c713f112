package mongolog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/fluent-bit-out-mongodb/out_mongodb/sink"
)

// Flusher stores one chunk, as the plugin's instance does for Fluent Bit.
type Flusher interface {
	Flush(tag string, data []byte) sink.Status
}

// ImportOptions say what to import.
type ImportOptions struct {
	Paths []string // files or globs; "-" is standard input; .gz files are read through gzip
	Tag   string   // the records' tag
	// ChunkLines is how many lines make one chunk (default 1000).
	ChunkLines int
	// Progress, when set, is told the bytes read of the total (0 when
	// unknown) and the records stored after each chunk.
	Progress func(read, total, records int64)
	// Retry is how long a chunk the plugin gives back waits before it is
	// sent again (default 1s).
	Retry time.Duration
	// Stdin is what "-" reads (default os.Stdin).
	Stdin io.Reader
}

// Imported counts what an import did. Stored, Found (already stored by an
// earlier run) and Parked are known when the Flusher counts them
// (Totals).
type Imported struct {
	Files   int
	Records int64
	Chunks  int
	Retries int

	Stored, Found, Parked int64
	Counted               bool // the three above are known
}

// totaller is a Flusher that counts what it stored, as an instance does.
type totaller interface {
	Totals() sink.Totals
}

// Import sends the lines of the files, each as a record {log: line}, through
// the plugin's own pipeline (f: an instance configured with the plugin's
// keys), ChunkLines at a time. The chunks are the same on every run over
// the same files (a line's record time is its file's modification time, or
// the time the line holds with a parser and time_from_log), so a run
// interrupted and started again stores every line exactly once: the plugin
// finds what the earlier run stored. A chunk the plugin gives back is sent
// again until ctx ends; ctx ending stops between chunks.
func Import(ctx context.Context, f Flusher, opt ImportOptions) (res Imported, err error) {
	if opt.ChunkLines <= 0 {
		opt.ChunkLines = 1000
	}
	if opt.Retry <= 0 {
		opt.Retry = time.Second
	}
	if opt.Tag == "" {
		opt.Tag = "import"
	}
	files, total, err := expand(opt.Paths)
	if err != nil {
		return res, err
	}
	if t, ok := f.(totaller); ok {
		before := t.Totals()
		defer func() {
			after := t.Totals()
			res.Stored, res.Found, res.Parked = after.Stored-before.Stored, after.Found-before.Found, after.Parked-before.Parked
			res.Counted = true
		}()
	}
	var read int64
	for _, path := range files {
		if err = importFile(ctx, f, opt, path, &res, &read, total); err != nil {
			return res, err
		}
		res.Files++
	}
	return res, nil
}

// CheckPaths reports the first of paths (files, globs, "-") that Import
// would refuse: a bad glob, one that matches no file, a directory.
func CheckPaths(paths []string) error {
	_, _, err := expand(paths)
	return err
}

// expand resolves the globs of paths, in order, and sums the files' sizes.
func expand(paths []string) (files []string, total int64, err error) {
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %v", p, err)
		}
		if len(matches) == 0 {
			return nil, 0, fmt.Errorf("%s: no such file", p)
		}
		slices.Sort(matches)
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, 0, err
			}
			if st.IsDir() {
				return nil, 0, fmt.Errorf("%s is a directory; give files or a glob", m)
			}
			total += st.Size()
			files = append(files, m)
		}
	}
	return files, total, nil
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n *int64
}

func (c counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

func importFile(ctx context.Context, f Flusher, opt ImportOptions, path string, res *Imported, read *int64, total int64) error {
	in := opt.Stdin
	if in == nil {
		in = os.Stdin
	}
	stamp := time.Now().Truncate(time.Second)
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		st, err := file.Stat()
		if err != nil {
			return err
		}
		stamp = st.ModTime().Truncate(time.Second)
		in = file
	}
	in = counter{in, read}
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		defer gz.Close()
		in = gz
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var chunk bytes.Buffer
	lines := 0
	send := func() error {
		if lines == 0 {
			return nil
		}
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			st := f.Flush(opt.Tag, chunk.Bytes())
			if st == sink.Done {
				break
			}
			res.Retries++
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(opt.Retry):
			}
		}
		res.Chunks++
		res.Records += int64(lines)
		if opt.Progress != nil {
			opt.Progress(*read, total, res.Records)
		}
		chunk.Reset()
		lines = 0
		return nil
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			continue
		}
		appendRecord(&chunk, stamp, line)
		if lines++; lines == opt.ChunkLines {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s: a line longer than 16 MiB", path)
		}
		return fmt.Errorf("%s: %v", path, err)
	}
	return send()
}

// appendRecord appends the Fluent Bit record [[t, {}], {log: line}].
func appendRecord(b *bytes.Buffer, t time.Time, line string) {
	b.Write([]byte{0x92, 0x92, 0xd7, 0x00}) // [[ fixext8 of type 0: EventTime
	var ts [8]byte
	binary.BigEndian.PutUint32(ts[:4], uint32(t.Unix()))
	binary.BigEndian.PutUint32(ts[4:], uint32(t.Nanosecond()))
	b.Write(ts[:])
	b.WriteByte(0x80) // {} metadata
	b.WriteByte(0x81) // {log: line}
	enc := msgpack.NewEncoder(b)
	_ = enc.EncodeString("log")
	_ = enc.EncodeString(line)
}
