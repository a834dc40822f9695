package yaovolume

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// Clean refuses what Yao's local volume refuses (its root-containment test: "..",
// "../etc", "a/../../../etc" are unsafe; ".", plain names and nested valid paths are
// safe), and absolute paths too.
func TestCleanContainment(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"ws-abc123", "ws-abc123", true},
		{".", ".", true},
		{"", ".", true},
		{"a/b/../c", "a/c", true},
		{"a//b/./c/", "a/b/c", true},
		{"valid-id/nested", "valid-id/nested", true},
		{"..", "", false},
		{"../etc", "", false},
		{"a/../../../etc", "", false},
		{"a/../..", "", false},
		{"/etc/passwd", "", false},
		{"/", "", false},
		{"//x", "", false},
		{"a\x00b", "", false},
		{"..foo", "..foo", true},
		{"foo..", "foo..", true},
	} {
		got, err := Clean(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("Clean(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if !tc.ok && (!errors.Is(err, ErrOutsideWorkspace) || !errors.Is(err, fs.ErrPermission)) {
			t.Errorf("Clean(%q) = %q, %v; want ErrOutsideWorkspace", tc.in, got, err)
		}
	}
}

func TestParseSession(t *testing.T) {
	for _, tc := range []struct{ in, user, chat string }{
		{"alice/chat-1", "alice", "chat-1"},
		{"u/c/d", "u", "c/d"},
		{"../etc", "..", "etc"}, // names a Sandbox, never a directory: simply not found
	} {
		u, c, err := ParseSession(tc.in)
		if err != nil || u != tc.user || c != tc.chat {
			t.Errorf("ParseSession(%q) = %q, %q, %v", tc.in, u, c, err)
		}
	}
	for _, bad := range []string{"", "alice", "/chat", "alice/", ".."} {
		if _, _, err := ParseSession(bad); !errors.Is(err, ErrInvalidSession) {
			t.Errorf("ParseSession(%q): %v", bad, err)
		}
	}
}

func TestExcludes(t *testing.T) {
	pats := []string{"node_modules", "*.log", ".git", "tmp?"}
	for rel, want := range map[string]bool{
		"node_modules": true, "a/node_modules": true, "x.log": true, "a/b/c.log": true, ".git": true,
		"tmp1": true, "tmp12": false, "src/main.go": false, "logs/x": false, "node_modules_x": false,
	} {
		if got := isExcluded(rel, pats); got != want {
			t.Errorf("isExcluded(%q) = %v", rel, got)
		}
	}
	if !excludedPath("node_modules/x/y.js", pats) || excludedPath("src/x.js", pats) {
		t.Error("excludedPath")
	}
}

func TestParseListing(t *testing.T) {
	in := "f 12 1700000000.1234567890 644 a b\x00d 4096 1700000001.0000000000 2755 dir\x00l 5 1700000002 777 link\x00p 0 1.5 600 fifo\x00f 0 1.0 644 new\nline\x00"
	es, err := parseListing([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{"a b", 'f', 12, 1700000000123456789, 0o644},
		{"dir", 'd', 4096, 1700000001000000000, 0o755 | fs.ModeSetgid},
		{"link", 'l', 5, 1700000002000000000, 0o777},
		{"fifo", 'o', 0, 1500000000, 0o600},
		{"new\nline", 'f', 0, 1000000000, 0o644},
	}
	if !reflect.DeepEqual(es, want) {
		t.Fatalf("got %+v", es)
	}
	for _, bad := range []string{"f 1 2 644 x", "f x 2 644 a\x00", "ff 1 2 644 a\x00", "f 1 2 999 a\x00"} {
		if _, err := parseListing([]byte(bad)); err == nil {
			t.Errorf("parseListing(%q) accepted", bad)
		}
	}
}

func TestDiff(t *testing.T) {
	f := func(p string, size, mt int64) entry {
		return entry{Path: p, Type: 'f', Size: size, Mtime: mt, Mode: 0o644}
	}
	d := func(p string) entry { return entry{Path: p, Type: 'd', Mode: 0o755} }
	l := func(p string) entry { return entry{Path: p, Type: 'l'} }
	const s = int64(1e9)
	for _, tc := range []struct {
		name          string
		src, dst      []entry
		force, delete bool
		dirs, files   string
		deletes       string
		bytes         int64
	}{
		{"empty dst", []entry{d("a"), f("a/x", 3, s), f("y", 1, s)}, nil, false, true, "a", "a/x,y", "", 4},
		{"same", []entry{f("x", 3, s)}, []entry{f("x", 3, s)}, false, true, "", "", "", 0},
		{"size differs", []entry{f("x", 3, s)}, []entry{f("x", 4, s)}, false, true, "", "x", "", 3},
		{"mtime differs", []entry{f("x", 3, s+1)}, []entry{f("x", 3, s+2)}, false, true, "", "x", "", 3},
		{"second differs", []entry{f("x", 3, 2*s)}, []entry{f("x", 3, s)}, false, true, "", "x", "", 3},
		{"whole-second side", []entry{f("x", 3, 5*s+123)}, []entry{f("x", 3, 5*s)}, false, true, "", "", "", 0},
		{"force", []entry{f("x", 3, s)}, []entry{f("x", 3, s)}, true, true, "", "x", "", 3},
		{"extra deleted", []entry{f("x", 1, s)}, []entry{f("x", 1, s), d("old"), f("old/a", 1, s), f("z", 1, s)}, false, true, "", "", "old,z", 0},
		{"extra kept without delete", []entry{f("x", 1, s)}, []entry{f("x", 1, s), f("z", 1, s)}, false, false, "", "", "", 0},
		{"file becomes dir", []entry{d("p"), f("p/q", 1, s)}, []entry{f("p", 1, s)}, false, true, "p", "p/q", "p", 1},
		{"dir becomes file", []entry{f("p", 1, s)}, []entry{d("p"), f("p/q", 1, s)}, false, true, "", "p", "p", 1},
		{"link replaced by file", []entry{f("p", 1, s)}, []entry{l("p")}, false, true, "", "p", "p", 1},
		{"source link leaves dst alone", []entry{l("p")}, []entry{f("p", 1, s)}, false, true, "", "", "", 0},
		{"dst link extra deleted", nil, []entry{l("p")}, false, true, "", "", "p", 0},
	} {
		p := diff(tc.src, tc.dst, tc.force, tc.delete)
		var files []string
		for _, e := range p.Files {
			files = append(files, e.Path)
		}
		got := [3]string{strings.Join(p.Dirs, ","), strings.Join(files, ","), strings.Join(p.Deletes, ",")}
		if got != [3]string{tc.dirs, tc.files, tc.deletes} || p.Bytes != tc.bytes {
			t.Errorf("%s: dirs/files/deletes %q bytes %d", tc.name, got, p.Bytes)
		}
	}
}

func TestChunks(t *testing.T) {
	var paths []string
	for i := 0; i < 3000; i++ {
		paths = append(paths, strings.Repeat("p", 50))
	}
	cs := chunks(paths)
	n := 0
	for _, c := range cs {
		b := 0
		for _, p := range c {
			b += len(p) + 1
		}
		if b > maxArgBytes {
			t.Fatalf("chunk of %d bytes", b)
		}
		n += len(c)
	}
	if n != 3000 || len(cs) < 2 {
		t.Fatalf("%d paths in %d chunks", n, len(cs))
	}
}

func TestSafeRel(t *testing.T) {
	for p, want := range map[string]bool{"a": true, "a/b": true, "a/b/": true, "../a": false, "a/../../b": false, "/a": false, "": false,
		".": false, "a/./b": false, "a//b": false} {
		if safeRel(p) != want {
			t.Errorf("safeRel(%q) = %v", p, !want)
		}
	}
}
