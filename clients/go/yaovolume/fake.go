package yaovolume

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Fake is a Volume over local directories, one per registered session, for the tests of
// programs that use a Volume. It runs the same volume script as the cluster
// implementation, locally, so it behaves the same way (containment, atomic writes, sync
// plans, typed errors); it needs sh and GNU coreutils, findutils and tar (Linux).
// A session that was not added answers ErrSandboxMissing.
type Fake struct {
	dir string

	mu       sync.Mutex
	sessions map[string]string // session id -> root
	// Runs counts the commands run, by operation (for tests that check that bulk
	// operations do not run a command per file).
	Runs map[string]int
}

var _ Volume = (*Fake)(nil)

// NewFake returns a Fake keeping its workspaces below dir.
func NewFake(dir string) *Fake {
	return &Fake{dir: dir, sessions: map[string]string{}, Runs: map[string]int{}}
}

// AddSession creates the (empty) workspace of a session and returns its directory.
func (f *Fake) AddSession(sessionID string) (string, error) {
	if _, _, err := ParseSession(sessionID); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(sessionID))
	root := filepath.Join(f.dir, "ws-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	f.mu.Lock()
	f.sessions[sessionID] = root
	f.mu.Unlock()
	return root, nil
}

// RemoveSession forgets a session (its files stay on disk).
func (f *Fake) RemoveSession(sessionID string) {
	f.mu.Lock()
	delete(f.sessions, sessionID)
	f.mu.Unlock()
}

func (f *Fake) open(_ context.Context, sessionID string) (runner, func(), error) {
	if _, _, err := ParseSession(sessionID); err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	root, ok := f.sessions[sessionID]
	f.mu.Unlock()
	if !ok {
		return nil, nil, ErrSandboxMissing
	}
	return &localRunner{root: root, f: f}, func() {}, nil
}

func (f *Fake) e() *engine { return &engine{b: f} }

// localRunner runs the volume script on this machine (the fake's runner).
type localRunner struct {
	root string
	f    *Fake
}

func (l *localRunner) Root() string { return l.root }

func (l *localRunner) Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	l.f.mu.Lock()
	l.f.Runs[args[0]]++
	l.f.mu.Unlock()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", volumeScript, "yaovol"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stdin = stdin
	if stdout == nil {
		stdout = io.Discard
	}
	cmd.Stdout = stdout
	errb := &boundedBuffer{max: 16 << 10}
	cmd.Stderr = errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return remoteError(ee.ExitCode(), errb.Bytes())
	}
	return err
}

// remoteError is the *RemoteError of a command that exited with code and stderr.
func remoteError(code int, stderr []byte) *RemoteError {
	msg := firstLine(stderr)
	return &RemoteError{Code: code, Message: msg, kind: remoteKind(code, msg)}
}

func firstLine(b []byte) string {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}
