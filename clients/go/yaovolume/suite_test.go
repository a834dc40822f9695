package yaovolume

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamer is a Volume with the streaming extras (both *Fake and *Client have them).
type streamer interface {
	Volume
	ReadFileTo(ctx context.Context, sessionID, path string, w io.Writer) (os.FileMode, error)
	WriteFileFrom(ctx context.Context, sessionID, path string, r io.Reader, perm os.FileMode) error
}

// suiteEnv is what the shared suite runs against: a Volume and a session whose workspace
// starts empty; Shell (nil when there is no running container, e.g. a stopped sandbox)
// runs a shell command with the workspace as its working directory.
type suiteEnv struct {
	V       streamer
	Session string
	Shell   func(t *testing.T, script string) string
	// BigFile is the size of the large-file case.
	BigFile int64
	// Runs counts the commands the last call ran (nil when it cannot be known).
	Runs func() int
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantIs(t *testing.T, err error, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %q (%T) is not %v", err, err, target)
		}
	}
}

// writeTree writes files (relative path -> content) below dir with mode 0644, or the
// mode given in modes, and a fixed mtime in the past (whole seconds plus a fraction).
func writeTree(t *testing.T, dir string, files map[string]string, modes map[string]os.FileMode) {
	t.Helper()
	mt := time.Unix(1_700_000_000, 123456789)
	for p, c := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(f), 0o755))
		m := os.FileMode(0o644)
		if mm, ok := modes[p]; ok {
			m = mm
		}
		must(t, os.WriteFile(f, []byte(c), m))
		must(t, os.Chmod(f, m))
		must(t, os.Chtimes(f, mt, mt))
	}
}

// readTree is every regular file below dir: path -> content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	}))
	return out
}

func names(l []FileInfo) []string {
	var out []string
	for _, fi := range l {
		out = append(out, fi.Path)
	}
	return out
}

func eqMap(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d files %v, want %d %v", len(got), keys(got), len(want), keys(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("file %q: got %q (present %v), want %q", k, trunc(g), ok, trunc(v))
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// oddNames are names a workspace must carry unchanged.
var oddNames = []string{"sp ace.txt", "new\nline.txt", "-dash.txt", "ユニコード/文件.txt", `quote'"$x.txt`, "*glob?.txt", "tab\there.txt", "emoji-😀.md"}

// runSuite runs every case of the shared suite.
func runSuite(t *testing.T, env suiteEnv) {
	ctx := context.Background()
	v, sid := env.V, env.Session

	t.Run("WriteReadStatList", func(t *testing.T) {
		must(t, v.WriteFile(ctx, sid, "wr/a/b.txt", []byte("hello"), 0o640))
		data, mode, err := v.ReadFile(ctx, sid, "wr/a/b.txt")
		must(t, err)
		if string(data) != "hello" || mode != 0o640 {
			t.Fatalf("read %q mode %v", data, mode)
		}
		fi, err := v.Stat(ctx, sid, "wr/a/b.txt")
		must(t, err)
		if fi.Size != 5 || fi.Mode != 0o640 || fi.IsDir || fi.Path != "wr/a/b.txt" || time.Since(fi.Mtime) > time.Hour {
			t.Fatalf("stat %+v", fi)
		}
		must(t, v.WriteFile(ctx, sid, "wr/a/b.txt", []byte("hello again"), 0o600)) // an existing file keeps its mode
		data, mode, err = v.ReadFile(ctx, sid, "wr/a/b.txt")
		must(t, err)
		if string(data) != "hello again" || mode != 0o640 {
			t.Fatalf("read after overwrite %q mode %v", data, mode)
		}
		must(t, v.WriteFile(ctx, sid, "wr/empty", nil, 0))
		data, mode, err = v.ReadFile(ctx, sid, "wr/empty")
		must(t, err)
		if len(data) != 0 || mode != 0o644 {
			t.Fatalf("empty file %q %v", data, mode)
		}
		l, err := v.ListDir(ctx, sid, "wr")
		must(t, err)
		if got := names(l); strings.Join(got, ",") != "a,empty" || !l[0].IsDir || l[0].Mode&fs.ModeDir == 0 {
			t.Fatalf("list %+v", l)
		}
		d, err := v.Stat(ctx, sid, "wr/a")
		must(t, err)
		if !d.IsDir {
			t.Fatalf("stat dir %+v", d)
		}
		root, err := v.ListDir(ctx, sid, ".")
		must(t, err)
		if !strings.Contains(strings.Join(names(root), ","), "wr") {
			t.Fatalf("root list %v", names(root))
		}
		_, _, err = v.ReadFile(ctx, sid, "wr/a")
		wantIs(t, err, ErrIsDir)
		_, err = v.ListDir(ctx, sid, "wr/empty")
		wantIs(t, err, ErrNotDir)
		_, err = v.Stat(ctx, sid, "wr/nope")
		wantIs(t, err, fs.ErrNotExist)
		_, _, err = v.ReadFile(ctx, sid, "wr/nope")
		wantIs(t, err, fs.ErrNotExist)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != "wr/nope" || pe.Op != "read" {
			t.Fatalf("not a *fs.PathError naming the path: %#v", err)
		}
	})

	t.Run("MkdirRenameRemove", func(t *testing.T) {
		must(t, v.MkdirAll(ctx, sid, "mr/d/e/f"))
		must(t, v.MkdirAll(ctx, sid, "mr/d/e/f")) // exists: fine
		must(t, v.WriteFile(ctx, sid, "mr/x.txt", []byte("x"), 0o644))
		must(t, v.Rename(ctx, sid, "mr/x.txt", "mr/d/e/f/y.txt"))
		data, _, err := v.ReadFile(ctx, sid, "mr/d/e/f/y.txt")
		must(t, err)
		if string(data) != "x" {
			t.Fatalf("renamed content %q", data)
		}
		_, err = v.Stat(ctx, sid, "mr/x.txt")
		wantIs(t, err, fs.ErrNotExist)
		wantIs(t, v.Rename(ctx, sid, "mr/none", "mr/z"), fs.ErrNotExist)
		wantIs(t, v.MkdirAll(ctx, sid, "mr/d/e/f/y.txt/sub"), ErrNotDir)
		wantIs(t, v.Remove(ctx, sid, "mr/d", false), ErrNotEmpty)
		wantIs(t, v.Remove(ctx, sid, "mr/none", false), fs.ErrNotExist)
		must(t, v.Remove(ctx, sid, "mr/none", true))
		must(t, v.Remove(ctx, sid, "mr/d/e/f/y.txt", false))
		must(t, v.Remove(ctx, sid, "mr/d/e/f", false))
		must(t, v.Remove(ctx, sid, "mr", true))
		_, err = v.Stat(ctx, sid, "mr")
		wantIs(t, err, fs.ErrNotExist)
		wantIs(t, v.Remove(ctx, sid, ".", true), fs.ErrPermission)
		wantIs(t, v.Remove(ctx, sid, "", true), fs.ErrPermission)
		wantIs(t, v.Rename(ctx, sid, ".", "x"), fs.ErrPermission)
	})

	t.Run("ContainmentLexical", func(t *testing.T) {
		for _, p := range []string{"..", "../x", "a/../../x", "/etc/passwd", "/", "./../x", "a/b/../../../x", "x\x00y"} {
			_, _, err := v.ReadFile(ctx, sid, p)
			wantIs(t, err, ErrOutsideWorkspace, fs.ErrPermission)
			wantIs(t, v.WriteFile(ctx, sid, p, []byte("x"), 0o644), ErrOutsideWorkspace)
			_, err = v.Stat(ctx, sid, p)
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.ListDir(ctx, sid, p)
			wantIs(t, err, ErrOutsideWorkspace)
			wantIs(t, v.Remove(ctx, sid, p, true), ErrOutsideWorkspace)
			wantIs(t, v.MkdirAll(ctx, sid, p), ErrOutsideWorkspace)
			wantIs(t, v.Rename(ctx, sid, "x", p), ErrOutsideWorkspace)
			_, err = v.Copy(ctx, sid, p, "x")
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.SyncPush(ctx, sid, t.TempDir(), WithRemotePath(p))
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.SyncPull(ctx, sid, t.TempDir(), WithRemotePath(p))
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.Tar(ctx, sid, ".", p, nil)
			wantIs(t, err, ErrOutsideWorkspace)
		}
		// "a/../b" stays inside and is fine
		must(t, v.WriteFile(ctx, sid, "cl/a/../b", []byte("in"), 0o644))
		data, _, err := v.ReadFile(ctx, sid, "cl/b")
		must(t, err)
		if string(data) != "in" {
			t.Fatalf("got %q", data)
		}
		must(t, v.Remove(ctx, sid, "cl", true))
	})

	t.Run("ContainmentSymlinks", func(t *testing.T) {
		if env.Shell == nil {
			t.Skip("no shell in the workspace (stopped sandbox): symbolic links are made by the sandbox")
		}
		env.Shell(t, `mkdir -p sl/in && echo secret-in > sl/in/f && ln -s /etc sl/esc && ln -s ../.. sl/up &&
ln -s /etc/hostname sl/file-esc && ln -s in sl/inlink && ln -s /nonexistent/dir sl/dangling`)
		for _, p := range []string{"sl/file-esc", "sl/esc/hostname", "sl/up/etc/hostname", "sl/dangling/x"} {
			_, _, err := v.ReadFile(ctx, sid, p)
			wantIs(t, err, ErrOutsideWorkspace)
			wantIs(t, v.WriteFile(ctx, sid, p, []byte("pwned"), 0o644), ErrOutsideWorkspace)
			_, err = v.Stat(ctx, sid, p)
			wantIs(t, err, ErrOutsideWorkspace)
		}
		for _, p := range []string{"sl/esc", "sl/up", "sl/dangling"} {
			_, err := v.ListDir(ctx, sid, p)
			wantIs(t, err, ErrOutsideWorkspace)
			wantIs(t, v.MkdirAll(ctx, sid, p+"/x"), ErrOutsideWorkspace)
			_, err = v.SyncPull(ctx, sid, t.TempDir(), WithRemotePath(p))
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.SyncPush(ctx, sid, t.TempDir(), WithRemotePath(p))
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.Zip(ctx, sid, p, "sl.zip", nil)
			wantIs(t, err, ErrOutsideWorkspace)
			_, err = v.Copy(ctx, sid, "sl/in", p+"/copied")
			wantIs(t, err, ErrOutsideWorkspace)
		}
		wantIs(t, v.Rename(ctx, sid, "sl/in/f", "sl/esc/f"), ErrOutsideWorkspace)
		// A link that stays inside is followed.
		must(t, v.WriteFile(ctx, sid, "sl/inlink/g", []byte("via link"), 0o644))
		data, _, err := v.ReadFile(ctx, sid, "sl/in/g")
		must(t, err)
		if string(data) != "via link" {
			t.Fatalf("got %q", data)
		}
		// The links themselves are listed (not followed) and can be removed; their
		// targets stay.
		l, err := v.ListDir(ctx, sid, "sl")
		must(t, err)
		for _, fi := range l {
			if fi.Path == "esc" && (fi.Mode&fs.ModeSymlink == 0 || fi.IsDir) {
				t.Fatalf("esc listed as %+v", fi)
			}
		}
		must(t, v.Remove(ctx, sid, "sl/esc", false))
		must(t, v.Remove(ctx, sid, "sl/up", true))
		if out := env.Shell(t, `test -e /etc/hostname && test -d sl/in && echo kept`); !strings.Contains(out, "kept") {
			t.Fatalf("a target went with its link: %q", out)
		}
		// SyncPull never follows or creates links.
		dir := t.TempDir()
		_, err = v.SyncPull(ctx, sid, dir, WithRemotePath("sl"))
		must(t, err)
		got := readTree(t, dir)
		if _, ok := got["file-esc"]; ok {
			t.Fatalf("a link out was pulled as a file: %v", keys(got))
		}
		if got["in/f"] != "secret-in\n" {
			t.Fatalf("pulled %v", keys(got))
		}
		must(t, v.Remove(ctx, sid, "sl", true))
	})

	t.Run("OddNames", func(t *testing.T) {
		for i, n := range oddNames {
			must(t, v.WriteFile(ctx, sid, "odd/"+n, []byte(fmt.Sprint("content ", i)), 0o644))
		}
		for i, n := range oddNames {
			data, _, err := v.ReadFile(ctx, sid, "odd/"+n)
			must(t, err)
			if string(data) != fmt.Sprint("content ", i) {
				t.Fatalf("%q: %q", n, data)
			}
		}
		l, err := v.ListDir(ctx, sid, "odd")
		must(t, err)
		if len(l) != len(oddNames) { // ユニコード is a directory holding 文件.txt
			t.Fatalf("list %q", names(l))
		}
		dir := t.TempDir()
		res, err := v.SyncPull(ctx, sid, dir, WithRemotePath("odd"))
		must(t, err)
		if res.FilesSynced != len(oddNames) {
			t.Fatalf("pulled %+v", res)
		}
		want := map[string]string{}
		for i, n := range oddNames {
			want[n] = fmt.Sprint("content ", i)
		}
		eqMap(t, readTree(t, dir), want)
		must(t, v.Remove(ctx, sid, "odd", true))
		res, err = v.SyncPush(ctx, sid, dir, WithRemotePath("odd2"))
		must(t, err)
		if res.FilesSynced != len(oddNames) {
			t.Fatalf("pushed %+v", res)
		}
		back := t.TempDir()
		_, err = v.SyncPull(ctx, sid, back, WithRemotePath("odd2"))
		must(t, err)
		eqMap(t, readTree(t, back), want)
		must(t, v.Remove(ctx, sid, "odd2", true))
	})

	t.Run("SyncPush", func(t *testing.T) {
		local := t.TempDir()
		files := map[string]string{"a.txt": "a", "src/main.go": "package main", "src/util/u.go": "package util",
			"run.sh": "#!/bin/sh\necho hi", "secret": "s", "node_modules/x/index.js": "x", "debug.log": "log", "empty": ""}
		writeTree(t, local, files, map[string]os.FileMode{"run.sh": 0o755, "secret": 0o600})
		must(t, os.MkdirAll(filepath.Join(local, "emptydir"), 0o750))
		ex := WithExcludes("node_modules", "*.log")
		res, err := v.SyncPush(ctx, sid, local, WithRemotePath("sp"), ex)
		must(t, err)
		if res.FilesSynced != 6 || res.BytesTransferred != int64(len("a")+len("package main")+len("package util")+len("#!/bin/sh\necho hi")+1) {
			t.Fatalf("push %+v", res)
		}
		for p, m := range map[string]os.FileMode{"run.sh": 0o755, "secret": 0o600, "a.txt": 0o644} {
			fi, err := v.Stat(ctx, sid, "sp/"+p)
			must(t, err)
			if fi.Mode != m || !fi.Mtime.Equal(time.Unix(1_700_000_000, 123456789)) {
				t.Fatalf("%s: mode %v mtime %v", p, fi.Mode, fi.Mtime.UnixNano())
			}
		}
		if fi, err := v.Stat(ctx, sid, "sp/emptydir"); err != nil || !fi.IsDir {
			t.Fatalf("emptydir %+v %v", fi, err)
		}
		for _, p := range []string{"sp/node_modules", "sp/debug.log"} {
			_, err := v.Stat(ctx, sid, p)
			wantIs(t, err, fs.ErrNotExist)
		}
		// Nothing changed: nothing sent.
		res, err = v.SyncPush(ctx, sid, local, WithRemotePath("sp"), ex)
		must(t, err)
		if res.FilesSynced != 0 || res.BytesTransferred != 0 {
			t.Fatalf("re-push %+v", res)
		}
		// Excluded files on the remote side are neither sent nor deleted.
		must(t, v.WriteFile(ctx, sid, "sp/remote.log", []byte("kept"), 0o644))
		// One file changed (same size, other mtime), one gone, one new.
		must(t, os.WriteFile(filepath.Join(local, "a.txt"), []byte("b"), 0o644))
		must(t, os.Remove(filepath.Join(local, "src/util/u.go")))
		must(t, os.WriteFile(filepath.Join(local, "new.txt"), []byte("new"), 0o644))
		if env.Runs != nil {
			env.Runs()
		}
		res, err = v.SyncPush(ctx, sid, local, WithRemotePath("sp"), ex)
		must(t, err)
		if res.FilesSynced != 2 || res.BytesTransferred != 4 {
			t.Fatalf("incremental push %+v", res)
		}
		if env.Runs != nil {
			if n := env.Runs(); n > 2 {
				t.Fatalf("an incremental push ran %d commands, want 2 (list, extract)", n)
			}
		}
		back := t.TempDir()
		_, err = v.SyncPull(ctx, sid, back, WithRemotePath("sp"))
		must(t, err)
		eqMap(t, readTree(t, back), map[string]string{"a.txt": "b", "src/main.go": "package main", "run.sh": "#!/bin/sh\necho hi",
			"secret": "s", "empty": "", "new.txt": "new", "remote.log": "kept"})
		// A type change: a file where a directory was.
		must(t, os.RemoveAll(filepath.Join(local, "src")))
		must(t, os.WriteFile(filepath.Join(local, "src"), []byte("now a file"), 0o644))
		_, err = v.SyncPush(ctx, sid, local, WithRemotePath("sp"), ex)
		must(t, err)
		data, _, err := v.ReadFile(ctx, sid, "sp/src")
		must(t, err)
		if string(data) != "now a file" {
			t.Fatalf("type change %q", data)
		}
		// ForceFull sends everything again.
		res, err = v.SyncPush(ctx, sid, local, WithRemotePath("sp"), ex, WithForceFull())
		must(t, err)
		if res.FilesSynced != 6 {
			t.Fatalf("force %+v", res)
		}
		// A missing local directory is an error, and nothing is deleted.
		_, err = v.SyncPush(ctx, sid, filepath.Join(local, "none"), WithRemotePath("sp"))
		wantIs(t, err, fs.ErrNotExist)
		if _, err := v.Stat(ctx, sid, "sp/a.txt"); err != nil {
			t.Fatal(err)
		}
		must(t, v.Remove(ctx, sid, "sp", true))
	})

	t.Run("SyncPull", func(t *testing.T) {
		src := t.TempDir()
		writeTree(t, src, map[string]string{"x/1.txt": "one", "x/2.txt": "two", "tool": "#!/bin/sh", "cache/c.bin": "c", "keep.tmp": "k"},
			map[string]os.FileMode{"tool": 0o750})
		_, err := v.SyncPush(ctx, sid, src, WithRemotePath("pl"))
		must(t, err)
		local := t.TempDir()
		writeTree(t, local, map[string]string{"stale.txt": "old", "mine.tmp": "excluded, kept"}, nil)
		ex := WithExcludes("cache", "*.tmp")
		res, err := v.SyncPull(ctx, sid, local, WithRemotePath("pl"), ex)
		must(t, err)
		if res.FilesSynced != 3 || res.BytesTransferred != 3+3+9 {
			t.Fatalf("pull %+v", res)
		}
		eqMap(t, readTree(t, local), map[string]string{"x/1.txt": "one", "x/2.txt": "two", "tool": "#!/bin/sh", "mine.tmp": "excluded, kept"})
		fi, err := os.Stat(filepath.Join(local, "tool"))
		must(t, err)
		if fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(time.Unix(1_700_000_000, 123456789)) {
			t.Fatalf("tool: %v %v", fi.Mode(), fi.ModTime().UnixNano())
		}
		res, err = v.SyncPull(ctx, sid, local, WithRemotePath("pl"), ex)
		must(t, err)
		if res.FilesSynced != 0 {
			t.Fatalf("re-pull %+v", res)
		}
		must(t, v.WriteFile(ctx, sid, "pl/x/1.txt", []byte("ONE!"), 0o644))
		must(t, v.Remove(ctx, sid, "pl/x/2.txt", false))
		res, err = v.SyncPull(ctx, sid, local, WithRemotePath("pl"), ex)
		must(t, err)
		if res.FilesSynced != 1 || res.BytesTransferred != 4 {
			t.Fatalf("incremental pull %+v", res)
		}
		eqMap(t, readTree(t, local), map[string]string{"x/1.txt": "ONE!", "tool": "#!/bin/sh", "mine.tmp": "excluded, kept"})
		// A missing remote sub-path is an error (the local side is not wiped).
		_, err = v.SyncPull(ctx, sid, local, WithRemotePath("pl/none"))
		wantIs(t, err, fs.ErrNotExist)
		if len(readTree(t, local)) != 3 {
			t.Fatal("local side changed")
		}
		must(t, v.Remove(ctx, sid, "pl", true))
	})

	t.Run("Copy", func(t *testing.T) {
		src := t.TempDir()
		writeTree(t, src, map[string]string{"a": "A", "d/b": "BB", "d/skip.o": "o", "e/f/g": "GGG"}, map[string]os.FileMode{"a": 0o700})
		_, err := v.SyncPush(ctx, sid, src, WithRemotePath("cp/src"))
		must(t, err)
		res, err := v.Copy(ctx, sid, "cp/src", "cp/dst", WithExcludes("*.o"))
		must(t, err)
		if res.FilesSynced != 3 || res.BytesTransferred != 6 {
			t.Fatalf("copy %+v", res)
		}
		fi, err := v.Stat(ctx, sid, "cp/dst/a")
		must(t, err)
		if fi.Mode != 0o700 || !fi.Mtime.Equal(time.Unix(1_700_000_000, 123456789)) {
			t.Fatalf("copied a: %+v", fi)
		}
		_, err = v.Stat(ctx, sid, "cp/dst/d/skip.o")
		wantIs(t, err, fs.ErrNotExist)
		res, err = v.Copy(ctx, sid, "cp/src", "cp/dst", WithExcludes("*.o"))
		must(t, err)
		if res.FilesSynced != 0 {
			t.Fatalf("re-copy %+v", res)
		}
		res, err = v.Copy(ctx, sid, "cp/src", "cp/dst", WithForceFull())
		must(t, err)
		if res.FilesSynced != 4 {
			t.Fatalf("forced copy %+v", res)
		}
		res, err = v.Copy(ctx, sid, "cp/src/e/f/g", "cp/single/g2")
		must(t, err)
		if res.FilesSynced != 1 || res.BytesTransferred != 3 {
			t.Fatalf("file copy %+v", res)
		}
		res, err = v.Copy(ctx, sid, "cp/src/e/f/g", "cp/single/g2")
		must(t, err)
		if res.FilesSynced != 0 {
			t.Fatalf("file re-copy %+v", res)
		}
		_, err = v.Copy(ctx, sid, "cp/none", "cp/x")
		wantIs(t, err, fs.ErrNotExist)
		must(t, v.Remove(ctx, sid, "cp", true))
	})

	t.Run("Archives", func(t *testing.T) {
		src := t.TempDir()
		tree := map[string]string{"r.txt": "root file", "sub/a.txt": strings.Repeat("a", 10000), "sub/deep/b.bin": "\x00\x01\x02", "x.log": "skip", "sp ace/ü.txt": "u"}
		writeTree(t, src, tree, map[string]os.FileMode{"sub/a.txt": 0o600})
		_, err := v.SyncPush(ctx, sid, src, WithRemotePath("ar/src"))
		must(t, err)
		want := map[string]string{}
		for k, c := range tree {
			if k != "x.log" {
				want[k] = c
			}
		}
		check := func(dir string) {
			t.Helper()
			out := t.TempDir()
			_, err := v.SyncPull(ctx, sid, out, WithRemotePath(dir))
			must(t, err)
			eqMap(t, readTree(t, out), want)
			fi, err := v.Stat(ctx, sid, dir+"/sub/a.txt")
			must(t, err)
			if fi.Mode != 0o600 {
				t.Fatalf("%s/sub/a.txt mode %v", dir, fi.Mode)
			}
		}
		res, err := v.Zip(ctx, sid, "ar/src", "ar/out/src.zip", []string{"*.log"})
		must(t, err)
		fi, err := v.Stat(ctx, sid, "ar/out/src.zip")
		must(t, err)
		if res.FilesCount != 4 || res.SizeBytes != fi.Size {
			t.Fatalf("zip %+v, file %d bytes", res, fi.Size)
		}
		res, err = v.Unzip(ctx, sid, "ar/out/src.zip", "ar/unzipped")
		must(t, err)
		if res.FilesCount != 4 || res.SizeBytes != int64(9+10000+3+1) {
			t.Fatalf("unzip %+v", res)
		}
		check("ar/unzipped")
		for _, gz := range []bool{false, true} {
			name, make, open := "ar/out/src.tar", v.Tar, v.Untar
			if gz {
				name, make, open = "ar/out/src.tgz", v.Tgz, v.Untgz
			}
			res, err = make(ctx, sid, "ar/src", name, []string{"*.log"})
			must(t, err)
			fi, err = v.Stat(ctx, sid, name)
			must(t, err)
			if res.FilesCount != 4 || res.SizeBytes != fi.Size {
				t.Fatalf("%s: %+v, file %d bytes", name, res, fi.Size)
			}
			res, err = open(ctx, sid, name, "ar/un-"+filepath.Base(name))
			must(t, err)
			if res.FilesCount != 4 || res.SizeBytes != int64(9+10000+3+1) {
				t.Fatalf("un%s %+v", name, res)
			}
			check("ar/un-" + filepath.Base(name))
		}
		res, err = v.Gzip(ctx, sid, "ar/src/sub/a.txt", "ar/out/a.txt.gz")
		must(t, err)
		fi, err = v.Stat(ctx, sid, "ar/out/a.txt.gz")
		must(t, err)
		if res.FilesCount != 1 || res.SizeBytes != fi.Size || fi.Size >= 10000 {
			t.Fatalf("gzip %+v, file %d bytes", res, fi.Size)
		}
		res, err = v.Gunzip(ctx, sid, "ar/out/a.txt.gz", "ar/out/a.txt")
		must(t, err)
		data, _, err := v.ReadFile(ctx, sid, "ar/out/a.txt")
		must(t, err)
		if res.SizeBytes != 10000 || string(data) != strings.Repeat("a", 10000) {
			t.Fatalf("gunzip %+v", res)
		}
		// A single file zips and tars under its base name.
		res, err = v.Zip(ctx, sid, "ar/src/r.txt", "ar/out/one.zip", nil)
		must(t, err)
		if res.FilesCount != 1 {
			t.Fatalf("zip of a file %+v", res)
		}
		res, err = v.Unzip(ctx, sid, "ar/out/one.zip", "ar/one")
		must(t, err)
		data, _, err = v.ReadFile(ctx, sid, "ar/one/r.txt")
		must(t, err)
		if res.FilesCount != 1 || string(data) != "root file" {
			t.Fatalf("unzip of a one-file zip %+v %q", res, data)
		}
		_, err = v.Gzip(ctx, sid, "ar/src", "ar/out/dir.gz")
		wantIs(t, err, ErrIsDir)
		// Archives whose entries climb out are refused, nothing is written.
		var zb bytes.Buffer
		zw := zip.NewWriter(&zb)
		w, _ := zw.Create("../../evil.txt")
		w.Write([]byte("evil"))
		zw.Close()
		must(t, v.WriteFile(ctx, sid, "ar/evil.zip", zb.Bytes(), 0o644))
		_, err = v.Unzip(ctx, sid, "ar/evil.zip", "ar/evil")
		wantIs(t, err, ErrUnsafeArchive)
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "ok.txt", Mode: 0o644, Size: 2})
		tw.Write([]byte("ok"))
		tw.WriteHeader(&tar.Header{Name: "../evil.txt", Mode: 0o644, Size: 4})
		tw.Write([]byte("evil"))
		tw.Close()
		must(t, v.WriteFile(ctx, sid, "ar/evil.tar", tb.Bytes(), 0o644))
		_, err = v.Untar(ctx, sid, "ar/evil.tar", "ar/evil")
		wantIs(t, err, ErrUnsafeArchive)
		for _, p := range []string{"evil.txt", "ar/evil.txt"} {
			_, err = v.Stat(ctx, sid, p)
			wantIs(t, err, fs.ErrNotExist)
		}
		must(t, v.Remove(ctx, sid, "ar", true))
	})

	t.Run("LargeFile", func(t *testing.T) {
		size := env.BigFile
		if size == 0 {
			size = 16 << 20
		}
		gen := func() io.Reader { return io.LimitReader(rand.New(rand.NewSource(42)), size) }
		want := sha256.New()
		io.Copy(want, gen())
		peak := watchHeap()
		must(t, v.WriteFileFrom(ctx, sid, "big/blob.bin", gen(), 0o600))
		got := sha256.New()
		mode, err := v.ReadFileTo(ctx, sid, "big/blob.bin", got)
		must(t, err)
		if heap := peak(); heap > 96<<20 {
			t.Fatalf("streaming %d bytes took the heap to %d bytes", size, heap)
		}
		if !bytes.Equal(got.Sum(nil), want.Sum(nil)) || mode != 0o600 {
			t.Fatalf("the file came back different (mode %v)", mode)
		}
		fi, err := v.Stat(ctx, sid, "big/blob.bin")
		must(t, err)
		if fi.Size != size {
			t.Fatalf("size %d", fi.Size)
		}
		// SyncPull and SyncPush of it stream too.
		dir := t.TempDir()
		peak = watchHeap()
		res, err := v.SyncPull(ctx, sid, dir, WithRemotePath("big"))
		must(t, err)
		if res.BytesTransferred != size {
			t.Fatalf("pull %+v", res)
		}
		must(t, os.Chtimes(filepath.Join(dir, "blob.bin"), time.Now(), time.Now()))
		res, err = v.SyncPush(ctx, sid, dir, WithRemotePath("big"))
		must(t, err)
		if res.BytesTransferred != size || res.FilesSynced != 1 {
			t.Fatalf("push %+v", res)
		}
		if heap := peak(); heap > 96<<20 {
			t.Fatalf("syncing %d bytes took the heap to %d bytes", size, heap)
		}
		must(t, v.Remove(ctx, sid, "big", true))
	})

	t.Run("CancelMidSync", func(t *testing.T) {
		local := t.TempDir()
		f, err := os.Create(filepath.Join(local, "huge.bin"))
		must(t, err)
		_, err = io.Copy(f, io.LimitReader(rand.New(rand.NewSource(7)), 256<<20))
		must(t, err)
		f.Close()
		writeTree(t, local, map[string]string{"small.txt": "s"}, nil)
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			// cancel once the transfer is under way
			for i := 0; i < 200; i++ {
				time.Sleep(50 * time.Millisecond)
				if fi, err := v.Stat(ctx, sid, "cancel"); err == nil && fi.IsDir {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
			cancel()
		}()
		start := time.Now()
		_, err = v.SyncPush(cctx, sid, local, WithRemotePath("cancel"))
		cancel()
		if err == nil {
			t.Skip("the push finished before it could be cancelled")
		}
		wantIs(t, err, context.Canceled)
		t.Logf("cancelled after %v", time.Since(start))
		if env.Shell != nil {
			// No extraction goes on: the remote process was killed.
			deadline := time.Now().Add(10 * time.Second)
			for {
				out := env.Shell(t, `a=yaovol b=tar n=0; for p in /proc/[0-9]*; do { c=$(tr '\0' ' ' < $p/cmdline); } 2>/dev/null; case $c in *"$a extract"*|"$b -x -p -f -"*) n=$((n+1));; esac; done; echo "running=$n"`)
				if strings.Contains(out, "running=0") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the extraction still runs after the cancel: %s", out)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		// A new push completes the job.
		res, err := v.SyncPush(ctx, sid, local, WithRemotePath("cancel"))
		must(t, err)
		if res.FilesSynced < 1 {
			t.Fatalf("push after cancel %+v", res)
		}
		fi, err := v.Stat(ctx, sid, "cancel/huge.bin")
		must(t, err)
		if fi.Size != 256<<20 {
			t.Fatalf("huge.bin %d bytes", fi.Size)
		}
		must(t, v.Remove(ctx, sid, "cancel", true))
	})

	t.Run("ConcurrentWriters", func(t *testing.T) {
		a := bytes.Repeat([]byte("A"), 1<<20)
		b := bytes.Repeat([]byte("B"), 1<<20)
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := 0; i < 5; i++ {
			for _, data := range [][]byte{a, b} {
				wg.Add(1)
				go func(data []byte) {
					defer wg.Done()
					errs <- v.WriteFile(ctx, sid, "cw/same.bin", data, 0o644)
				}(data)
			}
		}
		// and two pushes into two sub-paths at once
		la, lb := t.TempDir(), t.TempDir()
		writeTree(t, la, map[string]string{"1": "a1", "2": "a2"}, nil)
		writeTree(t, lb, map[string]string{"1": "b1", "3": "b3"}, nil)
		for _, p := range [][2]string{{la, "cw/pa"}, {lb, "cw/pb"}} {
			wg.Add(1)
			go func(local, sub string) {
				defer wg.Done()
				_, err := v.SyncPush(ctx, sid, local, WithRemotePath(sub))
				errs <- err
			}(p[0], p[1])
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err)
		}
		data, _, err := v.ReadFile(ctx, sid, "cw/same.bin")
		must(t, err)
		if !bytes.Equal(data, a) && !bytes.Equal(data, b) {
			t.Fatalf("the file is a mix of two writers (%d bytes)", len(data))
		}
		l, err := v.ListDir(ctx, sid, "cw")
		must(t, err)
		if strings.Join(names(l), ",") != "pa,pb,same.bin" {
			t.Fatalf("left behind: %q", names(l))
		}
		for sub, want := range map[string]map[string]string{"cw/pa": {"1": "a1", "2": "a2"}, "cw/pb": {"1": "b1", "3": "b3"}} {
			out := t.TempDir()
			_, err := v.SyncPull(ctx, sid, out, WithRemotePath(sub))
			must(t, err)
			eqMap(t, readTree(t, out), want)
		}
		must(t, v.Remove(ctx, sid, "cw", true))
	})

	t.Run("SessionErrors", func(t *testing.T) {
		_, _, err := v.ReadFile(ctx, "no-slash", "x")
		wantIs(t, err, ErrInvalidSession)
		_, _, err = v.ReadFile(ctx, "nobody-here/none", "x")
		wantIs(t, err, ErrSandboxMissing)
	})
}

// watchHeap samples the heap until the returned function is called, which gives the
// highest HeapInuse seen.
func watchHeap() func() uint64 {
	runtime.GC()
	stop := make(chan struct{})
	done := make(chan uint64)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak {
				peak = ms.HeapInuse
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return <-done
	}
}
