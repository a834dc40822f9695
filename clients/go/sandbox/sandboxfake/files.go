package sandboxfake

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
)

// The file helpers on an in-memory tree per Sandbox: the workspace (kept while the
// Sandbox exists, as its PVC is) and the rest of the container's filesystem (gone with
// each new pod). Errors are *sandbox.FileError values with the complaints GNU tools
// make, so errors.Is with fs.ErrNotExist, fs.ErrExist and fs.ErrPermission works as with
// the Client. No symlinks, no owners; permission bits are kept but not enforced.

// node is a file or directory.
type node struct {
	dir   bool
	mode  fs.FileMode // permission bits
	data  []byte
	mtime time.Time
}

// resetFiles makes the empty tree of a new Sandbox: /, /tmp and the workspace.
func (b *box) resetFiles() {
	b.files = map[string]*node{}
	b.mkdirAll("/tmp", 0o1777, time.Time{})
	b.mkdirAll(b.sb.MountPath(), 0o755, time.Time{})
}

// dropPodFiles forgets what lies outside the workspace (a new pod).
func (b *box) dropPodFiles() {
	if b.files == nil {
		b.resetFiles()
		return
	}
	ws := path.Clean(b.sb.MountPath())
	for p := range b.files {
		if p != ws && !strings.HasPrefix(p, ws+"/") && !strings.HasPrefix(ws, p+"/") && p != "/" {
			delete(b.files, p)
		}
	}
	b.mkdirAll("/tmp", 0o1777, time.Time{})
}

// mkdirAll creates p and its missing parents as directories (no checks).
func (b *box) mkdirAll(p string, mode fs.FileMode, at time.Time) {
	for _, d := range ancestry(p) {
		if _, ok := b.files[d]; !ok {
			b.files[d] = &node{dir: true, mode: mode, mtime: at}
		}
	}
}

// ancestry is "/", "/a", "/a/b" for "/a/b".
func ancestry(p string) []string {
	out := []string{"/"}
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		out = append(out, cur)
	}
	return out
}

// parentCheck: nil when p's parent exists and is a directory, else the complaint.
func (b *box) parentCheck(p string) string {
	for _, d := range ancestry(path.Dir(p)) {
		n, ok := b.files[d]
		if !ok {
			return "No such file or directory"
		}
		if !n.dir {
			return "Not a directory"
		}
	}
	return ""
}

// fileOp runs op on the tree of a running Sandbox (started as the Client's file helpers
// start it), with p resolved as they resolve it.
func (f *Fake) fileOp(ctx context.Context, name, p string, op func(b *box, file string, now time.Time) error) error {
	f.mu.Lock()
	err := f.injected(OpExec)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	sb, err := f.EnsureRunning(ctx, name)
	if err != nil {
		return err
	}
	file := sandbox.ResolvePath(sb, p)
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.boxes[name]
	if !ok {
		return NotFound(name)
	}
	return op(b, file, f.now())
}

func fileErr(op, file string, code int, msg string) error {
	return sandbox.NewFileError(op, file, code, msg, nil)
}

// ReadFile returns a file's contents.
func (f *Fake) ReadFile(ctx context.Context, name, p string) ([]byte, error) {
	var out bytes.Buffer
	if err := f.ReadFileTo(ctx, name, p, &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ReadFileTo writes a file's contents to w.
func (f *Fake) ReadFileTo(ctx context.Context, name, p string, w io.Writer) error {
	var data []byte
	err := f.fileOp(ctx, name, p, func(b *box, file string, _ time.Time) error {
		if msg := b.parentCheck(file); msg != "" {
			return fileErr("read", file, 1, file+": "+msg)
		}
		n, ok := b.files[file]
		switch {
		case !ok:
			return fileErr("read", file, 1, file+": No such file or directory")
		case n.dir:
			return fileErr("read", file, 1, file+": Is a directory")
		}
		data = append([]byte(nil), n.data...)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// WriteFile creates or replaces a file, creating missing parents.
func (f *Fake) WriteFile(ctx context.Context, name, p string, data []byte) error {
	return f.WriteFileFrom(ctx, name, p, bytes.NewReader(data), sandbox.WriteOptions{Parents: true})
}

// WriteFileFrom creates or replaces a file with what r yields (new files get mode 0644,
// or o.Mode).
func (f *Fake) WriteFileFrom(ctx context.Context, name, p string, r io.Reader, o sandbox.WriteOptions) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return f.fileOp(ctx, name, p, func(b *box, file string, now time.Time) error {
		if o.Parents {
			for _, d := range ancestry(path.Dir(file)) {
				if n, ok := b.files[d]; ok && !n.dir {
					return fileErr("write", file, 1, "mkdir: cannot create directory '"+path.Dir(file)+"': Not a directory")
				}
			}
			b.mkdirAll(path.Dir(file), 0o755, now)
		}
		switch msg := b.parentCheck(file); msg {
		case "":
		case "No such file or directory":
			return fileErr("write", file, 2, "cannot create "+file+": Directory nonexistent")
		default:
			return fileErr("write", file, 2, "cannot create "+file+": "+msg)
		}
		n, ok := b.files[file]
		if ok && n.dir {
			return fileErr("write", file, 2, "cannot create "+file+": Is a directory")
		}
		if !ok {
			n = &node{mode: 0o644}
			b.files[file] = n
		}
		n.data, n.mtime = data, now
		if o.Mode != 0 {
			n.mode = o.Mode.Perm()
		}
		return nil
	})
}

// Mkdir creates a directory; with parents, missing parents too and no error when it
// exists.
func (f *Fake) Mkdir(ctx context.Context, name, p string, parents bool) error {
	return f.fileOp(ctx, name, p, func(b *box, file string, now time.Time) error {
		quoted := "cannot create directory '" + file + "': "
		if n, ok := b.files[file]; ok {
			if parents && n.dir {
				return nil
			}
			return fileErr("mkdir", file, 1, quoted+"File exists")
		}
		if parents {
			for _, d := range ancestry(file) {
				if n, ok := b.files[d]; ok && !n.dir {
					return fileErr("mkdir", file, 1, quoted+"Not a directory")
				}
			}
			b.mkdirAll(file, 0o755, now)
			return nil
		}
		if msg := b.parentCheck(file); msg != "" {
			return fileErr("mkdir", file, 1, quoted+msg)
		}
		b.files[file] = &node{dir: true, mode: 0o755, mtime: now}
		return nil
	})
}

// RemoveFile removes a file or an empty directory (like os.Remove).
func (f *Fake) RemoveFile(ctx context.Context, name, p string) error {
	return f.remove(ctx, name, p, false)
}

// RemoveAll removes a path and everything below it; a missing path is not an error. "/"
// and the workspace root are refused (fs.ErrInvalid).
func (f *Fake) RemoveAll(ctx context.Context, name, p string) error {
	return f.remove(ctx, name, p, true)
}

func (f *Fake) remove(ctx context.Context, name, p string, all bool) error {
	return f.fileOp(ctx, name, p, func(b *box, file string, _ time.Time) error {
		if file == "/" || file == path.Clean(b.sb.MountPath()) {
			return sandbox.NewFileError("remove", file, 0, "refusing to remove / or the workspace root", fs.ErrInvalid)
		}
		n, ok := b.files[file]
		if !ok {
			if all {
				return nil
			}
			return fileErr("remove", file, 1, "cannot remove '"+file+"': No such file or directory")
		}
		var below []string
		for q := range b.files {
			if strings.HasPrefix(q, file+"/") {
				below = append(below, q)
			}
		}
		if n.dir && len(below) > 0 && !all {
			return fileErr("remove", file, 1, "failed to remove '"+file+"': Directory not empty")
		}
		for _, q := range below {
			delete(b.files, q)
		}
		delete(b.files, file)
		return nil
	})
}

// info describes the node at file.
func info(file string, n *node) sandbox.FileInfo {
	mode := n.mode
	size := int64(len(n.data))
	if n.dir {
		mode |= fs.ModeDir
		size = 4096
	}
	if n.mode&0o1000 != 0 {
		mode = mode&^0o1000 | fs.ModeSticky
	}
	return sandbox.FileInfo{Name: path.Base(file), Path: file, Size: size, Mode: mode, ModTime: n.mtime.Truncate(time.Second)}
}

// Stat describes a path.
func (f *Fake) Stat(ctx context.Context, name, p string) (*sandbox.FileInfo, error) {
	var out *sandbox.FileInfo
	err := f.fileOp(ctx, name, p, func(b *box, file string, _ time.Time) error {
		n, ok := b.files[file]
		if !ok {
			return fileErr("stat", file, 1, file+": No such file or directory")
		}
		fi := info(file, n)
		out = &fi
		return nil
	})
	return out, err
}

// ReadDir lists a directory sorted by name; a path that is not a directory gives its own
// FileInfo alone (as the Client, like ls, does).
func (f *Fake) ReadDir(ctx context.Context, name, p string) ([]sandbox.FileInfo, error) {
	var out []sandbox.FileInfo
	err := f.fileOp(ctx, name, p, func(b *box, file string, _ time.Time) error {
		n, ok := b.files[file]
		if !ok {
			return fileErr("ls", file, 1, file+": No such file or directory")
		}
		if !n.dir {
			out = []sandbox.FileInfo{info(file, n)}
			return nil
		}
		prefix := strings.TrimSuffix(file, "/") + "/"
		for q, m := range b.files {
			if strings.HasPrefix(q, prefix) && !strings.Contains(q[len(prefix):], "/") && q != file {
				out = append(out, info(q, m))
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return nil
	})
	return out, err
}
