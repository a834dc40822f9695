package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

func TestExecArgv(t *testing.T) {
	cases := []struct {
		cmd  []string
		env  map[string]string
		dir  string
		want []string
	}{
		{[]string{"ls", "-l"}, nil, "", []string{"ls", "-l"}},
		{[]string{"ls"}, map[string]string{"B": "2", "A": "x y"}, "", []string{"env", "A=x y", "B=2", "ls"}},
		{[]string{"X=1"}, map[string]string{"A": "1"}, "", []string{"env", "A=1", "sh", "-c", `exec "$@"`, "sh", "X=1"}},
		{[]string{"X=1"}, nil, "", []string{"X=1"}},
		{[]string{"pwd"}, nil, "/w s", []string{"sh", "-c", `cd -- "$0" && exec "$@"`, "/w s", "pwd"}},
		{[]string{"pwd"}, map[string]string{"A": "1"}, "-d", []string{"env", "A=1", "sh", "-c", `cd -- "$0" && exec "$@"`, "-d", "pwd"}},
	}
	for _, c := range cases {
		got, err := execArgv(c.cmd, c.env, c.dir)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("execArgv(%q, %v, %q) = %q, %v; want %q", c.cmd, c.env, c.dir, got, err, c.want)
		}
	}
	for _, bad := range []map[string]string{{"": "x"}, {"A=B": "x"}} {
		if _, err := execArgv([]string{"ls"}, bad, ""); err == nil {
			t.Errorf("env %v accepted", bad)
		}
	}
	if _, err := execArgv(nil, nil, ""); err == nil {
		t.Error("an empty command was accepted")
	}
}

// TestExecArgvRuns runs the wrapped argv with the local sh: words arrive exactly.
func TestExecArgvRuns(t *testing.T) {
	dir := t.TempDir()
	argv, err := execArgv([]string{"sh", "-c", `printf '%s|' "$PWD" "$V" "$@"`, "sh", "a b", "", "*", "$HOME"},
		map[string]string{"V": "it's \"v\""}, dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if want := real + `|it's "v"|a b||*|$HOME|`; string(out) != want && string(out) != strings.Replace(want, real, dir, 1) {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestTouchInterval(t *testing.T) {
	for idle, want := range map[time.Duration]time.Duration{
		0: time.Minute, -1: time.Minute, time.Second: time.Second, 3 * time.Second: time.Second,
		6 * time.Second: 2 * time.Second, 30 * time.Minute: time.Minute, 90 * time.Second: 30 * time.Second,
	} {
		if got := TouchInterval(idle); got != want {
			t.Errorf("TouchInterval(%v) = %v, want %v", idle, got, want)
		}
	}
}

func TestRemoteMessage(t *testing.T) {
	for in, want := range map[string]string{
		"cat: /w/x: No such file or directory\n":                       "/w/x: No such file or directory",
		"\n  sh: 1: cd: can't cd to /nope\n":                           "cd: can't cd to /nope",
		"mkdir: cannot create directory '/a': File exists\r\n":         "cannot create directory '/a': File exists",
		"tar: Exiting with failure status due to previous errors\nx\n": "x",
		"":              "",
		"plain message": "plain message",
	} {
		if got := RemoteMessage([]byte(in)); got != want {
			t.Errorf("RemoteMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrKind(t *testing.T) {
	for msg, want := range map[string]error{
		"/w/x: No such file or directory":                   fs.ErrNotExist,
		"cannot create /w/a/b: Directory nonexistent":       fs.ErrNotExist, // dash
		"can't create /w/a/b: nonexistent directory":        fs.ErrNotExist, // busybox sh
		"cannot create directory '/w/a': File exists":       fs.ErrExist,
		"cannot open '/w/x' for reading: Permission denied": fs.ErrPermission,
		"cannot remove '/w/d': Is a directory":              nil,
	} {
		if got := errKind(1, msg); got != want {
			t.Errorf("errKind(%q) = %v, want %v", msg, got, want)
		}
	}
	if got := errKind(127, "stat is not available in the sandbox image"); !errors.Is(got, errors.ErrUnsupported) {
		t.Errorf("errKind(127, no stat) = %v", got)
	}
}

func TestFileMode(t *testing.T) {
	for raw, want := range map[uint32]fs.FileMode{
		0o100644: 0o644, 0o040755: fs.ModeDir | 0o755, 0o120777: fs.ModeSymlink | 0o777,
		0o104755: fs.ModeSetuid | 0o755, 0o041777: fs.ModeDir | fs.ModeSticky | 0o777,
		0o010600: fs.ModeNamedPipe | 0o600, 0o020666: fs.ModeDevice | fs.ModeCharDevice | 0o666,
	} {
		if got := fileMode(raw); got != want {
			t.Errorf("fileMode(%o) = %v, want %v", raw, got, want)
		}
	}
}

func TestParseListingMalformed(t *testing.T) {
	for _, in := range []string{"", "x\n", "1\n", "1\na\x00\x00", "1\na\x00\x00zz 1 1\n", "2\na\x00\x00\n"} {
		if _, err := parseListing([]byte(in), "/w"); err == nil {
			t.Errorf("parseListing(%q) accepted", in)
		}
	}
}

// runListScript runs listScript locally with shell sh and PATH path.
func runListScript(t *testing.T, sh, path, mode, p string) ([][]FileInfo, error) {
	t.Helper()
	cmd := exec.Command(sh, "-c", listScript, "sh", mode, p)
	cmd.Env = []string{"PATH=" + path}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, &FileError{Op: mode, Path: p, Message: RemoteMessage(errb.Bytes()), kind: errKind(1, RemoteMessage(errb.Bytes()))}
	}
	return parseListing(out.Bytes(), p)
}

// TestListScript runs the listing script with the local tools (GNU coreutils under dash)
// and with busybox alone, on names with spaces, newlines, hidden files and symlinks.
func TestListScript(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "a file.txt"), []byte("hello"), 0o640))
	must(os.WriteFile(filepath.Join(dir, ".hidden"), nil, 0o600))
	must(os.WriteFile(filepath.Join(dir, "new\nline"), []byte("x"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "..dots"), []byte("xy"), 0o600))
	must(os.Mkdir(filepath.Join(dir, "sub dir"), 0o750))
	must(os.Symlink("a file.txt", filepath.Join(dir, "link")))
	must(os.Symlink("nowhere\n", filepath.Join(dir, "dangling")))
	mtime := time.Unix(1700000000, 0)
	must(os.Chtimes(filepath.Join(dir, "a file.txt"), mtime, mtime))

	shells := map[string][2]string{"posix": {"sh", "/usr/bin:/bin"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		bin := t.TempDir()
		for _, applet := range []string{"sh", "stat", "readlink", "printf", "echo", "cat"} {
			must(os.Symlink(bb, filepath.Join(bin, applet)))
		}
		shells["busybox"] = [2]string{filepath.Join(bin, "sh"), bin}
	} else {
		t.Log("busybox not installed: only the local tools are tried")
	}
	for label, sh := range shells {
		groups, err := runListScript(t, sh[0], sh[1], "ls", dir)
		if err != nil {
			t.Fatalf("%s: ls: %v", label, err)
		}
		if len(groups) != 2 || len(groups[0]) != 1 || !groups[0][0].IsDir() {
			t.Fatalf("%s: ls groups %+v", label, groups)
		}
		byName := map[string]FileInfo{}
		for _, fi := range groups[1] {
			byName[fi.Name] = fi
		}
		want := []string{"a file.txt", ".hidden", "new\nline", "..dots", "sub dir", "link", "dangling"}
		if len(byName) != len(want) {
			t.Errorf("%s: entries %v, want %q", label, keys(byName), want)
		}
		for _, n := range want {
			if _, ok := byName[n]; !ok {
				t.Errorf("%s: %q missing", label, n)
			}
		}
		if fi := byName["a file.txt"]; fi.Size != 5 || fi.Mode != 0o640 || !fi.ModTime.Equal(mtime) ||
			fi.Path != filepath.Join(dir, "a file.txt") {
			t.Errorf("%s: a file.txt = %+v", label, fi)
		}
		if fi := byName["link"]; fi.Mode&fs.ModeSymlink == 0 || fi.LinkTarget != "a file.txt" {
			t.Errorf("%s: link = %+v", label, fi)
		}
		if fi := byName["dangling"]; fi.LinkTarget != "nowhere\n" {
			t.Errorf("%s: dangling = %+v", label, fi)
		}
		if fi := byName["sub dir"]; !fi.IsDir() || fi.Mode.Perm() != 0o750 {
			t.Errorf("%s: sub dir = %+v", label, fi)
		}
		// stat does not follow a symlink; ls of a symlink to a file gives the file.
		groups, err = runListScript(t, sh[0], sh[1], "stat", filepath.Join(dir, "link"))
		if err != nil || len(groups) != 1 || groups[0][0].Mode&fs.ModeSymlink == 0 || groups[0][0].Name != "link" {
			t.Errorf("%s: stat link = %+v, %v", label, groups, err)
		}
		groups, err = runListScript(t, sh[0], sh[1], "ls", filepath.Join(dir, "link"))
		if err != nil || len(groups) != 1 || groups[0][0].Mode != 0o640 {
			t.Errorf("%s: ls link = %+v, %v", label, groups, err)
		}
		// An empty directory lists nothing; a missing path is fs.ErrNotExist.
		groups, err = runListScript(t, sh[0], sh[1], "ls", filepath.Join(dir, "sub dir"))
		if err != nil || len(groups) != 2 || len(groups[1]) != 0 {
			t.Errorf("%s: ls empty dir = %+v, %v", label, groups, err)
		}
		_, err = runListScript(t, sh[0], sh[1], "stat", filepath.Join(dir, "missing"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: stat missing: %v", label, err)
		}
	}
}

func keys(m map[string]FileInfo) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

func sbWith(mut func(*v1alpha1.Sandbox)) *v1alpha1.Sandbox {
	sb := &v1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "u1"}}
	sb.Status.Phase = v1alpha1.PhaseRunning
	sb.Status.PodName = "s"
	sb.Status.StartedAt = &metav1.Time{Time: time.Unix(100, 0)}
	sb.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "PodReady"}}
	if mut != nil {
		mut(sb)
	}
	return sb
}

func TestStoppedWhy(t *testing.T) {
	before := sbWith(nil)
	cases := map[string]func(*v1alpha1.Sandbox){
		"":                                  func(*v1alpha1.Sandbox) {},
		"was deleted while the command ran": func(s *v1alpha1.Sandbox) { s.UID = "u2" },
		"was stopped while the command ran (reason: Idle)": func(s *v1alpha1.Sandbox) {
			s.Status.Phase = v1alpha1.PhaseStopping
			s.Status.Conditions[0].Reason = "Idle"
		},
		"was stopped while the command ran (reason: PodReady)": func(s *v1alpha1.Sandbox) { s.Spec.Paused = true },
		"was restarted while the command ran (its pod was replaced)": func(s *v1alpha1.Sandbox) {
			s.Status.StartedAt = &metav1.Time{Time: time.Unix(200, 0)}
		},
	}
	for want, mut := range cases {
		if got := stoppedWhy(before, sbWith(mut)); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestRunningState(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		mut      func(*v1alpha1.Sandbox)
		done     bool
		final    bool
		inReason string
	}{
		{nil, true, false, ""},
		{func(s *v1alpha1.Sandbox) { s.Status.Phase = v1alpha1.PhaseCreating }, false, false, ""},
		{func(s *v1alpha1.Sandbox) { s.Spec.Paused = true }, false, true, ""},
		{func(s *v1alpha1.Sandbox) { s.DeletionTimestamp = &now }, false, true, ""},
		{func(s *v1alpha1.Sandbox) { s.Status.Phase = v1alpha1.PhaseSucceeded }, false, true, ""},
		{func(s *v1alpha1.Sandbox) {
			s.Status.Phase = v1alpha1.PhasePending
			s.Status.Conditions[0] = metav1.Condition{Type: "Ready", Status: "False", Reason: "InvalidSpec", Message: "spec.resources.memory: too big"}
		}, false, true, "InvalidSpec"},
		{func(s *v1alpha1.Sandbox) {
			s.Status.Phase = v1alpha1.PhasePending
			s.Status.Conditions[0] = metav1.Condition{Type: "Ready", Status: "False", Reason: "CapacityExceeded"}
		}, false, false, ""},
	}
	for i, c := range cases {
		done, err := runningState(sbWith(c.mut))
		if done != c.done || (err != nil) != c.final {
			t.Errorf("case %d: done %v err %v", i, done, err)
		}
		if c.inReason != "" && (err == nil || !strings.Contains(err.Error(), c.inReason)) {
			t.Errorf("case %d: error %v does not name %s", i, err, c.inReason)
		}
	}
}

// fakeAPI serves one Sandbox: GET returns it, PATCH merges the annotations and counts.
type fakeAPI struct {
	mu      sync.Mutex
	sb      *v1alpha1.Sandbox
	patches int
	onPatch func(sb *v1alpha1.Sandbox, n int) // after the n-th PATCH is merged (may be nil)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasSuffix(r.URL.Path, "/namespaces/ns/sandboxes/"+f.sb.Name) {
		http.NotFound(w, r)
		return
	}
	if r.Method == http.MethodPatch {
		var p struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f.patches++
		if f.sb.Annotations == nil {
			f.sb.Annotations = map[string]string{}
		}
		for k, v := range p.Metadata.Annotations {
			f.sb.Annotations[k] = v
		}
		if f.onPatch != nil {
			f.onPatch(f.sb, f.patches)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	f.sb.APIVersion, f.sb.Kind = "sandbox.yaoapps.com/v1alpha1", "Sandbox"
	_ = json.NewEncoder(w).Encode(f.sb)
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.patches
}

// TestMarkUsedThrottle: a write only once the newest known use is a touch interval old,
// and none while the stored annotation (written by someone else) is fresh.
func TestMarkUsedThrottle(t *testing.T) {
	f := &fakeAPI{sb: sbWith(func(s *v1alpha1.Sandbox) { s.Name = "s"; s.Spec.IdleTimeout = "30s" })}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Now = func() time.Time { return now }
	ctx := context.Background()

	// Someone else touched it 5 s ago; the interval of a 30 s idle timeout is 10 s.
	f.sb.Annotations = map[string]string{v1alpha1.AnnotationLastUsedAt: formatTime(now.Add(-5 * time.Second))}
	if _, err := c.EnsureRunning(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if n := f.count(); n != 0 {
		t.Fatalf("%d writes while the stored value was fresh", n)
	}
	now = now.Add(4 * time.Second) // 9 s old: still fresh
	if wrote, err := c.MarkUsed(ctx, "s"); wrote || err != nil || f.count() != 0 {
		t.Fatalf("wrote %v, err %v, writes %d", wrote, err, f.count())
	}
	now = now.Add(time.Second) // 10 s: write
	if wrote, err := c.MarkUsed(ctx, "s"); !wrote || err != nil || f.count() != 1 {
		t.Fatalf("wrote %v, err %v, writes %d", wrote, err, f.count())
	}
	if got := f.sb.Annotations[v1alpha1.AnnotationLastUsedAt]; got != formatTime(now) {
		t.Errorf("stored %q, want %q", got, formatTime(now))
	}
	for i := 0; i < 9; i++ { // nine more calls within the next 9 s: no write
		now = now.Add(time.Second)
		if wrote, _ := c.MarkUsed(ctx, "s"); wrote {
			t.Fatalf("wrote again after %d s", i+1)
		}
	}
	now = now.Add(time.Second)
	if wrote, _ := c.MarkUsed(ctx, "s"); !wrote || f.count() != 2 {
		t.Fatalf("no second write after 10 s (writes %d)", f.count())
	}
	// Touch always writes.
	if err := c.Touch(ctx, "s"); err != nil || f.count() != 3 {
		t.Fatalf("Touch: %v, writes %d", err, f.count())
	}
}

// TestHeartbeat: with a 3 s idle timeout (1 s interval) a 2.5 s heartbeat writes 3 times
// (at once, after 1 s, after 2 s) and none after stop.
func TestHeartbeat(t *testing.T) {
	f := &fakeAPI{sb: sbWith(func(s *v1alpha1.Sandbox) { s.Name = "s"; s.Spec.IdleTimeout = "3s" })}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	stop := c.Heartbeat(context.Background(), "s", func(err error) { t.Error(err) })
	time.Sleep(2500 * time.Millisecond)
	stop()
	n := f.count()
	if n != 3 {
		t.Errorf("%d writes in 2.5 s, want 3", n)
	}
	time.Sleep(1200 * time.Millisecond)
	if f.count() != n {
		t.Errorf("writes after stop")
	}
}

// TestKeepAliveWindow: the window comes from the policy the controller publishes in status
// (the shorter of idleTimeout and reclaimAfter), from spec only when status has no idle
// timeout (an older controller), and is unknown (60 s interval) when nothing is set.
func TestKeepAliveWindow(t *testing.T) {
	cases := []struct {
		specIdle, statusIdle, statusReclaim string
		window, interval                    time.Duration
	}{
		// a class idle timeout of 5s on a Sandbox that sets none (spec alone gave 60 s,
		// and the session was removed under a 15 s command)
		{"", "5s", "", 5 * time.Second, 5 * time.Second / 3},
		{"30m", "90s", "", 90 * time.Second, 30 * time.Second}, // status wins over spec
		{"", "30m", "6s", 6 * time.Second, 2 * time.Second},    // the reclaim window is shorter
		{"2h", "2h", "30m", 30 * time.Minute, time.Minute},
		{"", "9s", "1h", 9 * time.Second, 3 * time.Second},
		{"12s", "", "1h", 12 * time.Second, 4 * time.Second}, // spec in status's place
		{"", "", "3s", 3 * time.Second, time.Second},
		{"15s", "", "", 15 * time.Second, 5 * time.Second}, // an older controller
		{"", "", "", 0, time.Minute},
		{"", "1s", "", time.Second, time.Second}, // the floor
		{"", "2s", "500ms", 500 * time.Millisecond, time.Second},
		{"", "1h30m", "", 90 * time.Minute, time.Minute},
		{"", "1m30s", "", 90 * time.Second, 30 * time.Second},
		{"45s", "soon", "", 45 * time.Second, 15 * time.Second}, // junk in status is ignored
		{"45s", "0s", "", 45 * time.Second, 15 * time.Second},
		{"", "-5s", "bad", 0, time.Minute},
	}
	for i, c := range cases {
		sb := sbWith(func(s *v1alpha1.Sandbox) {
			s.Spec.IdleTimeout, s.Status.IdleTimeout, s.Status.ReclaimAfter = c.specIdle, c.statusIdle, c.statusReclaim
		})
		if w, iv := KeepAliveWindow(sb), intervalOf(sb); w != c.window || iv != c.interval {
			t.Errorf("case %d (spec %q, status %q/%q): window %v interval %v, want %v %v", i,
				c.specIdle, c.statusIdle, c.statusReclaim, w, iv, c.window, c.interval)
		}
	}
	if KeepAliveWindow(nil) != 0 || intervalOf(nil) != time.Minute {
		t.Error("nil Sandbox")
	}
}

// TestHeartbeatFollowsThePublishedPolicy: a Sandbox with no spec.idleTimeout whose status
// says 3s is touched every second (not every 60 s); when a touch's answer carries a new
// policy (the class changed: 60s), the next interval follows it.
func TestHeartbeatFollowsThePublishedPolicy(t *testing.T) {
	f := &fakeAPI{sb: sbWith(func(s *v1alpha1.Sandbox) { s.Name = "s"; s.Status.IdleTimeout = "3s" })}
	f.onPatch = func(sb *v1alpha1.Sandbox, n int) {
		if n == 2 {
			sb.Status.IdleTimeout = "60s"
		}
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	// The first write's answer says 3s: the second comes after 1 s; its answer says 60s,
	// so none follows within the next 2.5 s.
	stop := c.Heartbeat(context.Background(), "s", func(err error) { t.Error(err) })
	time.Sleep(1500 * time.Millisecond)
	if n := f.count(); n != 2 {
		t.Errorf("%d writes in 1.5 s with status.idleTimeout 3s, want 2", n)
	}
	time.Sleep(2500 * time.Millisecond)
	stop()
	if n := f.count(); n != 2 {
		t.Errorf("%d writes after the policy became 60s, want still 2", n)
	}

	// A reclaim window shorter than the idle timeout sets the pace.
	f2 := &fakeAPI{sb: sbWith(func(s *v1alpha1.Sandbox) {
		s.Name = "s"
		s.Spec.IdleTimeout = "30m"
		s.Status.IdleTimeout = "30m"
		s.Status.ReclaimAfter = "3s"
	})}
	srv2 := httptest.NewServer(f2)
	defer srv2.Close()
	c2, err := New(&rest.Config{Host: srv2.URL}, Options{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	stop2 := c2.Heartbeat(context.Background(), "s", func(err error) { t.Error(err) })
	time.Sleep(2500 * time.Millisecond)
	stop2()
	if n := f2.count(); n != 3 {
		t.Errorf("%d writes in 2.5 s with status.reclaimAfter 3s, want 3", n)
	}
}
