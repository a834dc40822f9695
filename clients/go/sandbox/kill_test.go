package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMarkArgv(t *testing.T) {
	if got, want := markArgv([]string{"ls", "-l"}, "ab12"), []string{"env", ExecMarkerEnv + "=ab12", "ls", "-l"}; !reflect.DeepEqual(got, want) {
		t.Errorf("markArgv: %q, want %q", got, want)
	}
	// A program whose name has '=' is not taken for a variable by env.
	if got, want := markArgv([]string{"./a=b", "x"}, "id"), []string{"env", ExecMarkerEnv + "=id", "sh", "-c", `exec "$@"`, "sh", "./a=b", "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("markArgv: %q, want %q", got, want)
	}
	if got := killArgv("id", 1500*time.Millisecond); got[len(got)-1] != "15" || got[len(got)-2] != "id" || got[len(got)-3] != ExecMarkerEnv {
		t.Errorf("killArgv: %q", got)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// TestKillScript runs the kill script here, under the local sh with GNU tools and under
// busybox alone, against a marked process tree: a shell with a child, one that ignores
// SIGTERM (needs SIGKILL after the grace), and an unmarked process that must survive.
func TestKillScript(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	shells := map[string][2]string{"posix": {"sh", "/usr/bin:/bin"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		bin := t.TempDir()
		for _, applet := range []string{"sh", "grep", "kill", "sleep"} {
			if err := os.Symlink(bb, filepath.Join(bin, applet)); err != nil {
				t.Fatal(err)
			}
		}
		shells["busybox"] = [2]string{filepath.Join(bin, "sh"), bin}
	} else {
		t.Log("busybox not installed: only the local tools are tried")
	}
	for label, sh := range shells {
		for _, trap := range []string{"", "trap '' TERM;"} {
			id, err := newExecID()
			if err != nil {
				t.Fatal(err)
			}
			// The marked tree: sh, its child sleep (and the child's pid on stdout).
			tree := exec.Command("sh", "-c", trap+` sleep 300 & echo $!; wait`)
			tree.Env = []string{"PATH=/usr/bin:/bin", ExecMarkerEnv + "=" + id}
			tree.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			out, err := tree.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			other := exec.Command("sleep", "300")
			other.Env = []string{"PATH=/usr/bin:/bin", ExecMarkerEnv + "=someone-else"}
			if err := tree.Start(); err != nil {
				t.Fatal(err)
			}
			if err := other.Start(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 32)
			n, _ := out.Read(buf)
			child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
			if err != nil {
				t.Fatalf("child pid: %q", buf[:n])
			}
			argv := killArgv(id, 500*time.Millisecond)
			kill := exec.Command(sh[0], argv[1:]...)
			kill.Env = []string{"PATH=" + sh[1]}
			t0 := time.Now()
			msg, err := kill.CombinedOutput()
			took := time.Since(t0)
			waited := make(chan struct{})
			go func() { _ = tree.Wait(); close(waited) }()
			select {
			case <-waited:
			case <-time.After(5 * time.Second):
				t.Errorf("%s %q: the marked shell did not end", label, trap)
				_ = syscall.Kill(-tree.Process.Pid, syscall.SIGKILL)
			}
			if err != nil {
				t.Errorf("%s %q: kill script: %v: %s", label, trap, err, msg)
			}
			for i := 0; alive(child) && i < 20; i++ {
				time.Sleep(50 * time.Millisecond) // reaped by init: a moment
			}
			if alive(child) {
				t.Errorf("%s %q: the marked child %d still runs", label, trap, child)
				_ = syscall.Kill(child, syscall.SIGKILL)
			}
			if !alive(other.Process.Pid) {
				t.Errorf("%s %q: an unmarked process was killed", label, trap)
			}
			_ = other.Process.Kill()
			_ = other.Wait()
			if trap != "" && took < 500*time.Millisecond {
				t.Errorf("%s: SIGKILL after %v, before the grace of 0.5 s", label, took)
			}
			if trap == "" && took > 3*time.Second {
				t.Errorf("%s: SIGTERM took %v", label, took)
			}
		}
	}
}
