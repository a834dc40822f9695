package yaovolume

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The shared suite on the Fake: the volume script runs locally.
func TestFakeSuite(t *testing.T) {
	dir := t.TempDir()
	f := NewFake(dir)
	sid := SessionID("alice", "chat-1")
	root, err := f.AddSession(sid)
	if err != nil {
		t.Fatal(err)
	}
	total := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, c := range f.Runs {
			n += c
		}
		return n
	}
	last := 0
	runSuite(t, suiteEnv{
		V: f, Session: sid,
		Shell: func(t *testing.T, script string) string {
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v: %s", script, err, out)
			}
			return string(out)
		},
		Runs: func() int { n := total(); d := n - last; last = n; return d },
	})
	if _, err := filepath.Abs(root); err != nil {
		t.Fatal(err)
	}
}
