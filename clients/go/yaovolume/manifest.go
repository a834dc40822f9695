package yaovolume

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// entry is one file of a manifest: its slash-separated path relative to the synced
// directory, type ('f' regular file, 'd' directory, 'l' symbolic link, anything else
// 'o'), size, mtime (nanoseconds since the epoch) and mode (permission and special bits).
type entry struct {
	Path  string
	Type  byte
	Size  int64
	Mtime int64
	Mode  fs.FileMode
}

var errBadListing = errors.New("unexpected listing output from the workspace")

// parseListing parses find -printf '%y %s %T@ %m %P\0' records.
func parseListing(b []byte) ([]entry, error) {
	var out []entry
	for len(b) > 0 {
		z := bytes.IndexByte(b, 0)
		if z < 0 {
			return nil, errBadListing
		}
		rec := string(b[:z])
		b = b[z+1:]
		f := strings.SplitN(rec, " ", 5)
		if len(f) != 5 || len(f[0]) != 1 {
			return nil, errBadListing
		}
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		mtime, err2 := parseFindTime(f[2])
		mode, err3 := strconv.ParseUint(f[3], 8, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, errBadListing
		}
		e := entry{Path: f[4], Type: f[0][0], Size: size, Mtime: mtime, Mode: octalMode(uint32(mode))}
		switch e.Type {
		case 'f', 'd', 'l':
		default:
			e.Type = 'o'
		}
		out = append(out, e)
	}
	return out, nil
}

// parseFindTime parses find's %T@ ("1700000000.1234567890") as nanoseconds.
func parseFindTime(s string) (int64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	frac = (frac + "000000000")[:9]
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, err
	}
	return secs*1e9 + ns, nil
}

// octalMode converts permission and special bits (as chmod takes them) to an fs.FileMode.
func octalMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// modeOctal is the reverse of octalMode.
func modeOctal(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// typeMode is the fs.FileMode type bits of a listing's type letter.
func typeMode(t byte) fs.FileMode {
	switch t {
	case 'd':
		return fs.ModeDir
	case 'l':
		return fs.ModeSymlink
	case 'p':
		return fs.ModeNamedPipe
	case 's':
		return fs.ModeSocket
	case 'c':
		return fs.ModeDevice | fs.ModeCharDevice
	case 'b':
		return fs.ModeDevice
	case 'f':
		return 0
	}
	return fs.ModeIrregular
}

// walkLocal is the manifest of a local directory (excluded entries left out, excluded
// directories not entered). Symbolic links are listed as 'l' but never followed.
func walkLocal(dir string, excludes []string) ([]entry, error) {
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != dir {
				return nil // vanished meanwhile
			}
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if isExcluded(rel, excludes) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished meanwhile
		}
		e := entry{Path: rel, Size: info.Size(), Mtime: info.ModTime().UnixNano(), Mode: info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		switch {
		case info.Mode().IsRegular():
			e.Type = 'f'
		case info.IsDir():
			e.Type = 'd'
			e.Size = 0
		case info.Mode()&fs.ModeSymlink != 0:
			e.Type = 'l'
		default:
			e.Type = 'o'
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// sameTime: equal mtimes, at the precision of the coarser side (a filesystem that keeps
// whole seconds gives a zero fraction).
func sameTime(a, b int64) bool {
	if a == b {
		return true
	}
	if a%1e9 == 0 || b%1e9 == 0 {
		return a/1e9 == b/1e9
	}
	return false
}

// plan is what one direction of a sync does on its destination.
type plan struct {
	Dirs    []string // directories to create (parents first)
	Files   []entry  // files to send (source entries)
	Deletes []string // destination paths to remove first (top-most only)
	Bytes   int64    // sum of Files' sizes
}

// diff plans making dst mirror src: files whose size or mtime differ (every file with
// force) are sent, directories missing are made, a destination entry of another type is
// removed first, and, with deletes, what src does not have is removed. Symbolic links and
// special files are never sent; a source one keeps whatever the destination has at its
// path. Both manifests are already filtered by the excludes.
func diff(src, dst []entry, force, deletes bool) plan {
	var p plan
	have := make(map[string]entry, len(dst))
	for _, e := range dst {
		have[e.Path] = e
	}
	want := make(map[string]entry, len(src))
	for _, e := range src {
		want[e.Path] = e
	}
	removed := map[string]bool{}
	remove := func(q string) {
		removed[q] = true
		p.Deletes = append(p.Deletes, q)
	}
	sorted := append([]entry(nil), src...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, e := range sorted {
		d, ok := have[e.Path]
		if ok && underRemoved(e.Path, removed) {
			ok = false
		}
		switch e.Type {
		case 'd':
			if ok && d.Type == 'd' {
				continue
			}
			if ok {
				remove(e.Path)
			}
			p.Dirs = append(p.Dirs, e.Path)
		case 'f':
			if ok && d.Type == 'f' && !force && d.Size == e.Size && sameTime(d.Mtime, e.Mtime) {
				continue
			}
			if ok && d.Type != 'f' {
				remove(e.Path)
			}
			p.Files = append(p.Files, e)
			p.Bytes += e.Size
		}
	}
	if deletes {
		extra := make([]string, 0)
		for _, e := range dst {
			if _, ok := want[e.Path]; !ok {
				extra = append(extra, e.Path)
			}
		}
		sort.Strings(extra)
		for _, q := range extra {
			if !underRemoved(q, removed) {
				remove(q)
			}
		}
	}
	sort.Strings(p.Deletes)
	return p
}

// underRemoved: is q, or a directory above it, already removed?
func underRemoved(q string, removed map[string]bool) bool {
	for {
		if removed[q] {
			return true
		}
		i := strings.LastIndexByte(q, '/')
		if i < 0 {
			return false
		}
		q = q[:i]
	}
}

// safeRel: is rel a clean relative path that stays below its base (archive entries,
// listing names)?
func safeRel(rel string) bool {
	if rel == "" || strings.ContainsRune(rel, 0) || path.IsAbs(rel) {
		return false
	}
	c := path.Clean(rel)
	return c != "." && c != ".." && !strings.HasPrefix(c, "../") && c == strings.TrimSuffix(rel, "/")
}

func fromNanos(ns int64) time.Time { return time.Unix(0, ns) }

// applyLocalDeletes removes local paths (relative to dir) for SyncPull.
func applyLocalDeletes(dir string, rels []string) error {
	for _, r := range rels {
		if !safeRel(r) {
			return ErrUnsafeArchive
		}
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(r))); err != nil {
			return err
		}
	}
	return nil
}
