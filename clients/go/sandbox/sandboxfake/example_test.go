package sandboxfake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox"
	"github.com/yaoapp/yao-sandbox/clients/go/sandbox/sandboxfake"
)

// runScript is the code under test: it depends on sandbox.Interface, so it runs against
// a *sandbox.Client in production and a *sandboxfake.Fake in its tests.
func runScript(ctx context.Context, c sandbox.Interface, user, chat, script string) (string, error) {
	sb, _, err := c.GetOrCreate(ctx, sandbox.Request{UserID: user, ChatID: chat,
		Spec: v1alpha1.SandboxSpec{Lifecycle: v1alpha1.LifecycleSession}})
	if err != nil {
		return "", err
	}
	if err := c.WriteFile(ctx, sb.Name, "job/main.sh", []byte(script)); err != nil {
		return "", err
	}
	var out bytes.Buffer
	code, err := c.Exec(ctx, sb.Name, sandbox.ExecOptions{
		Command: []string{"sh", "main.sh"}, WorkDir: sb.MountPath() + "/job", Stdout: &out, Timeout: time.Minute})
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("the script failed with exit code %d", code)
	}
	return out.String(), nil
}

// Testing a program's code with the fake: script what the command prints, run the code,
// then look at what it did (the files it wrote, the commands it ran).
func Example() {
	ctx := context.Background()
	f := sandboxfake.New(sandboxfake.Options{Namespace: "yao"})
	f.SetExecResult([]string{"sh", "main.sh"}, sandboxfake.ExecResult{Stdout: "hello\n"})

	out, err := runScript(ctx, f, "alice", "c1", "echo hello")
	fmt.Printf("output %q, error %v\n", out, err)

	sb, _ := f.GetFor(ctx, "alice", "c1")
	fmt.Println(sb.Name, sb.Status.Phase, sb.Status.PodName)
	script, _ := f.ReadFile(ctx, sb.Name, "job/main.sh")
	fmt.Printf("the script: %q\n", script)
	for _, call := range f.ExecCalls() {
		fmt.Println("ran", call.Command, "in", call.WorkDir)
	}

	// A failing command, and the error path.
	f.SetExecResult([]string{"sh", "main.sh"}, sandboxfake.ExecResult{Stderr: "boom\n", ExitCode: 3})
	_, err = runScript(ctx, f, "alice", "c1", "exit 3")
	fmt.Println(err)
	// Output:
	// output "hello\n", error <nil>
	// yao-sb-alice-c1 Running yao-sb-alice-c1
	// the script: "echo hello"
	// ran [sh main.sh] in /workspace/job
	// the script failed with exit code 3
}

// A sandbox that does not come up: with Options.Manual the test decides its state, here
// an image that cannot be pulled, and sees what the program's wait reports.
func Example_notReady() {
	ctx := context.Background()
	f := sandboxfake.New(sandboxfake.Options{Manual: true})
	sb, _, _ := f.GetOrCreate(ctx, sandbox.Request{UserID: "bob", ChatID: "c2"})
	_ = f.SetPending(sb.Name, "ImagePullBackOff", `Back-off pulling image "no/such:image"`)

	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := f.WaitReady(wctx, sb.Name)
	var nr *sandbox.NotReadyError
	if errors.As(err, &nr) {
		fmt.Println(nr.Phase, nr.Reason, errors.Is(err, context.DeadlineExceeded))
	}

	// The pull succeeds after all.
	go func() { _ = f.SetRunning(sb.Name) }()
	sb, err = f.WaitReady(ctx, sb.Name)
	fmt.Println(sb.Status.Phase, err)
	// Output:
	// Pending ImagePullBackOff true
	// Running <nil>
}
