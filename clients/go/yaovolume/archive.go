package yaovolume

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Archives are made and opened by the client, streamed between two commands in the pod:
// the source read (one file, or one tar stream of a directory) and the destination
// written (one file replaced atomically, or one tar stream extracted). No zip or gzip
// tool is needed in the image, and nothing is held whole in memory (Unzip keeps the
// archive in a local temporary file: a zip is read from its end).

func sortInfos(l []FileInfo) { sort.Slice(l, func(i, j int) bool { return l[i].Path < l[j].Path }) }

// countWriter counts what goes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// pipeline runs produce (writing) and consume (reading) at once over a pipe; the first
// failure ends the other (its context is cancelled).
func pipeline(ctx context.Context, produce func(context.Context, io.Writer) error, consume func(context.Context, io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := produce(ctx, pw)
		if err != nil {
			cancel()
		}
		pw.CloseWithError(err)
		errc <- err
	}()
	cerr := consume(ctx, pr)
	if cerr != nil {
		cancel()
		pr.CloseWithError(cerr)
	} else {
		_, _ = io.Copy(io.Discard, pr)
	}
	perr := <-errc
	switch {
	case perr != nil && !errors.Is(perr, io.ErrClosedPipe) && !errors.Is(perr, context.Canceled):
		return perr
	case cerr != nil:
		return cerr
	}
	return perr
}

func get(ctx context.Context, r runner, a string, w io.Writer) error {
	hw := &headerWriter{w: w, onHeader: func(string) error { return nil }}
	if err := r.Run(ctx, []string{"read", r.Root(), a}, nil, hw); err != nil {
		return err
	}
	if !hw.done {
		return errBadListing
	}
	return nil
}

func put(ctx context.Context, r runner, a string, rd io.Reader) error {
	return r.Run(ctx, []string{"write", r.Root(), a, "644"}, rd, nil)
}

// packNames is the tar stream of the directories and regular files of a listing.
func packNames(ctx context.Context, r runner, a string, es []entry, w io.Writer) error {
	var names bytes.Buffer
	for _, e := range es {
		if e.Type == 'd' || e.Type == 'f' {
			names.WriteString(e.Path)
			names.WriteByte(0)
		}
	}
	return r.Run(ctx, []string{"pack", r.Root(), a}, &names, w)
}

// sources is what Zip, Tar and Tgz pack: the listing of the directory a, or, when a is a
// file, that file alone (named by its base name) from its directory.
func sources(ctx context.Context, r runner, a string, excludes []string) (string, []entry, error) {
	es, err := list(ctx, r, a, excludes)
	if !errors.Is(err, ErrNotDir) {
		return a, es, err
	}
	var out bytes.Buffer
	if err := r.Run(ctx, []string{"stat", r.Root(), a}, nil, &out); err != nil {
		return "", nil, err
	}
	st, err := parseListing(out.Bytes())
	if err != nil || len(st) != 1 {
		return "", nil, errBadListing
	}
	st[0].Path = path.Base(a)
	return path.Dir(a), st, nil
}

func countFiles(es []entry) int {
	n := 0
	for _, e := range es {
		if e.Type == 'f' {
			n++
		}
	}
	return n
}

// archiveOp resolves src and dst and runs f.
func (v *engine) archiveOp(ctx context.Context, sessionID, op, src, dst string, f func(r runner, as, ad string) (*ArchiveResult, error)) (*ArchiveResult, error) {
	var res *ArchiveResult
	err := v.with(ctx, sessionID, op, src, func(r runner) error {
		_, as, err := abs(r, src)
		if err != nil {
			return err
		}
		rd, ad, err := abs(r, dst)
		if err != nil {
			return &fs.PathError{Op: op, Path: dst, Err: err}
		}
		if rd == "." && (op == "zip" || op == "gzip" || op == "gunzip" || op == "tar" || op == "tgz") {
			return &fs.PathError{Op: op, Path: dst, Err: &kindError{"is a directory", ErrIsDir}}
		}
		res, err = f(r, as, ad)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (v *engine) Zip(ctx context.Context, sessionID, src, dst string, excludes []string) (*ArchiveResult, error) {
	return v.archiveOp(ctx, sessionID, "zip", src, dst, func(r runner, as, ad string) (*ArchiveResult, error) {
		as, es, err := sources(ctx, r, as, excludes)
		if err != nil {
			return nil, err
		}
		cw := &countWriter{}
		err = pipeline(ctx, func(ctx context.Context, w io.Writer) error {
			cw.w = w
			zw := zip.NewWriter(cw)
			err := pipeline(ctx, func(ctx context.Context, tw io.Writer) error {
				return packNames(ctx, r, as, es, tw)
			}, func(_ context.Context, rd io.Reader) error {
				tr := tar.NewReader(rd)
				for {
					h, err := tr.Next()
					if err == io.EOF {
						return nil
					}
					if err != nil {
						return err
					}
					name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
					fh := &zip.FileHeader{Name: name, Modified: h.ModTime}
					if h.Typeflag == tar.TypeDir {
						fh.Name += "/"
						fh.SetMode(fs.ModeDir | fs.FileMode(h.Mode).Perm())
						if _, err := zw.CreateHeader(fh); err != nil {
							return err
						}
						continue
					}
					fh.Method = zip.Deflate
					fh.SetMode(fs.FileMode(h.Mode).Perm())
					zf, err := zw.CreateHeader(fh)
					if err != nil {
						return err
					}
					if _, err := io.Copy(zf, tr); err != nil {
						return err
					}
				}
			})
			if err != nil {
				return err
			}
			return zw.Close()
		}, func(ctx context.Context, rd io.Reader) error { return put(ctx, r, ad, rd) })
		if err != nil {
			return nil, err
		}
		return &ArchiveResult{SizeBytes: cw.n, FilesCount: countFiles(es)}, nil
	})
}

func (v *engine) Unzip(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error) {
	return v.archiveOp(ctx, sessionID, "unzip", src, dst, func(r runner, as, ad string) (*ArchiveResult, error) {
		tmp, err := os.CreateTemp("", "yaovolume-unzip-*")
		if err != nil {
			return nil, err
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if err := get(ctx, r, as, tmp); err != nil {
			return nil, err
		}
		size, err := tmp.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		zr, err := zip.NewReader(tmp, size)
		if err != nil {
			return nil, err
		}
		for _, f := range zr.File {
			if !safeRel(strings.TrimPrefix(f.Name, "./")) {
				return nil, fmt.Errorf("zip slip: %w: %q", ErrUnsafeArchive, f.Name)
			}
		}
		res := &ArchiveResult{}
		err = pipeline(ctx, func(_ context.Context, w io.Writer) error {
			bw := bufio.NewWriterSize(w, 256<<10)
			tw := tar.NewWriter(bw)
			for _, f := range zr.File {
				name := strings.TrimSuffix(strings.TrimPrefix(f.Name, "./"), "/")
				if f.FileInfo().IsDir() {
					if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: f.Modified, Format: tar.FormatPAX}); err != nil {
						return err
					}
					continue
				}
				if !f.Mode().IsRegular() {
					continue
				}
				perm := f.Mode().Perm()
				if perm == 0 {
					perm = 0o644
				}
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(f.UncompressedSize64),
					Mode: int64(perm), ModTime: f.Modified, Format: tar.FormatPAX}); err != nil {
					return err
				}
				rc, err := f.Open()
				if err != nil {
					return err
				}
				n, err := io.Copy(tw, rc)
				rc.Close()
				if err != nil {
					return err
				}
				res.SizeBytes += n
				res.FilesCount++
			}
			if err := tw.Close(); err != nil {
				return err
			}
			return bw.Flush()
		}, func(ctx context.Context, rd io.Reader) error {
			return r.Run(ctx, []string{"extract", r.Root(), ad}, rd, nil)
		})
		if err != nil {
			return nil, err
		}
		return res, nil
	})
}

func (v *engine) Gzip(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error) {
	return v.archiveOp(ctx, sessionID, "gzip", src, dst, func(r runner, as, ad string) (*ArchiveResult, error) {
		cw := &countWriter{}
		err := pipeline(ctx, func(ctx context.Context, w io.Writer) error {
			cw.w = w
			zw := gzip.NewWriter(cw)
			zw.Name = path.Base(as)
			if err := get(ctx, r, as, zw); err != nil {
				if errors.Is(err, ErrIsDir) {
					return fmt.Errorf("gzip requires a file, not a directory: %w", err)
				}
				return err
			}
			return zw.Close()
		}, func(ctx context.Context, rd io.Reader) error { return put(ctx, r, ad, rd) })
		if err != nil {
			return nil, err
		}
		return &ArchiveResult{SizeBytes: cw.n, FilesCount: 1}, nil
	})
}

func (v *engine) Gunzip(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error) {
	return v.archiveOp(ctx, sessionID, "gunzip", src, dst, func(r runner, as, ad string) (*ArchiveResult, error) {
		var n int64
		err := pipeline(ctx, func(ctx context.Context, w io.Writer) error {
			return get(ctx, r, as, w)
		}, func(ctx context.Context, rd io.Reader) error {
			zr, err := gzip.NewReader(rd)
			if err != nil {
				return err
			}
			cr := &countReader{r: zr}
			err = put(ctx, r, ad, cr)
			n = cr.n
			return err
		})
		if err != nil {
			return nil, err
		}
		return &ArchiveResult{SizeBytes: n, FilesCount: 1}, nil
	})
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (v *engine) Tar(ctx context.Context, sessionID, src, dst string, excludes []string) (*ArchiveResult, error) {
	return v.tarOp(ctx, sessionID, "tar", src, dst, excludes, false)
}

func (v *engine) Tgz(ctx context.Context, sessionID, src, dst string, excludes []string) (*ArchiveResult, error) {
	return v.tarOp(ctx, sessionID, "tgz", src, dst, excludes, true)
}

func (v *engine) tarOp(ctx context.Context, sessionID, op, src, dst string, excludes []string, gz bool) (*ArchiveResult, error) {
	return v.archiveOp(ctx, sessionID, op, src, dst, func(r runner, as, ad string) (*ArchiveResult, error) {
		as, es, err := sources(ctx, r, as, excludes)
		if err != nil {
			return nil, err
		}
		cw := &countWriter{}
		err = pipeline(ctx, func(ctx context.Context, w io.Writer) error {
			cw.w = w
			if !gz {
				return packNames(ctx, r, as, es, cw)
			}
			zw := gzip.NewWriter(cw)
			if err := packNames(ctx, r, as, es, zw); err != nil {
				return err
			}
			return zw.Close()
		}, func(ctx context.Context, rd io.Reader) error { return put(ctx, r, ad, rd) })
		if err != nil {
			return nil, err
		}
		return &ArchiveResult{SizeBytes: cw.n, FilesCount: countFiles(es)}, nil
	})
}

func (v *engine) Untar(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error) {
	return v.untarOp(ctx, sessionID, "untar", src, dst, false)
}

func (v *engine) Untgz(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error) {
	return v.untarOp(ctx, sessionID, "untgz", src, dst, true)
}

// untarOp re-encodes the archive's directories and regular files (names checked; links,
// devices and the like left out, as Yao does) into the stream the pod extracts.
func (v *engine) untarOp(ctx context.Context, sessionID, op, src, dst string, gz bool) (*ArchiveResult, error) {
	return v.archiveOp(ctx, sessionID, op, src, dst, func(r runner, as, ad string) (*ArchiveResult, error) {
		res := &ArchiveResult{}
		err := pipeline(ctx, func(ctx context.Context, w io.Writer) error {
			return get(ctx, r, as, w)
		}, func(ctx context.Context, rd io.Reader) error {
			if gz {
				zr, err := gzip.NewReader(rd)
				if err != nil {
					return err
				}
				rd = zr
			}
			return pipeline(ctx, func(_ context.Context, w io.Writer) error {
				tr := tar.NewReader(rd)
				bw := bufio.NewWriterSize(w, 256<<10)
				tw := tar.NewWriter(bw)
				for {
					h, err := tr.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						return err
					}
					name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
					if name == "" || name == "." {
						continue
					}
					if !safeRel(name) {
						return fmt.Errorf("tar slip: %w: %q", ErrUnsafeArchive, h.Name)
					}
					switch h.Typeflag {
					case tar.TypeDir:
						err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: h.Mode&0o7777 | 0o700, ModTime: h.ModTime, Format: tar.FormatPAX})
					case tar.TypeReg, tar.TypeRegA:
						if err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: h.Size, Mode: h.Mode & 0o7777, ModTime: h.ModTime, Format: tar.FormatPAX}); err == nil {
							var n int64
							n, err = io.Copy(tw, tr)
							res.SizeBytes += n
							res.FilesCount++
						}
					}
					if err != nil {
						return err
					}
				}
				if err := tw.Close(); err != nil {
					return err
				}
				return bw.Flush()
			}, func(ctx context.Context, rd io.Reader) error {
				return r.Run(ctx, []string{"extract", r.Root(), ad}, rd, nil)
			})
		})
		if err != nil {
			return nil, err
		}
		return res, nil
	})
}
