package sandbox

import (
	"context"
	"io"

	"k8s.io/apimachinery/pkg/types"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// The method set of a Client as interfaces, so programs can depend on what they use and
// test against sandbox/sandboxfake (an in-memory implementation) instead of a cluster.
// Every error a Client returns for the API server's answers is client-go's: test them
// with IsNotFound and k8s.io/apimachinery/pkg/api/errors (IsAlreadyExists, IsForbidden,
// ...); the fake returns the same kinds.

// Sandboxes finds, creates, changes, waits for and removes Sandboxes.
type Sandboxes interface {
	Namespace() string
	Get(ctx context.Context, name string) (*v1alpha1.Sandbox, error)
	GetFor(ctx context.Context, user, chat string) (*v1alpha1.Sandbox, error)
	List(ctx context.Context, opts ListOptions) ([]v1alpha1.Sandbox, error)
	ListByUser(ctx context.Context, user string) ([]v1alpha1.Sandbox, error)
	GetOrCreate(ctx context.Context, req Request) (*v1alpha1.Sandbox, bool, error)
	Create(ctx context.Context, sb *v1alpha1.Sandbox) (*v1alpha1.Sandbox, error)
	Start(ctx context.Context, name string) (*v1alpha1.Sandbox, error)
	Stop(ctx context.Context, name string) (*v1alpha1.Sandbox, error)
	Remove(ctx context.Context, name string) error
	EnsureRunning(ctx context.Context, name string) (*v1alpha1.Sandbox, error)
	WaitReady(ctx context.Context, name string) (*v1alpha1.Sandbox, error)
	WaitStopped(ctx context.Context, name string) (*v1alpha1.Sandbox, error)
	WaitGone(ctx context.Context, name string, uid types.UID) error
}

// KeepAlive marks Sandboxes used (last-used-at).
type KeepAlive interface {
	Touch(ctx context.Context, name string) error
	MarkUsed(ctx context.Context, name string) (bool, error)
	Heartbeat(ctx context.Context, name string, onError func(error)) (stop func())
}

// Processes runs commands in, reads the output of, and forwards ports to a sandbox's
// container.
type Processes interface {
	Exec(ctx context.Context, name string, opts ExecOptions) (int, error)
	Logs(ctx context.Context, name string, opts LogOptions) (io.ReadCloser, error)
	PortForward(ctx context.Context, name string, localPort, remotePort int) (int, error)
}

// Files reads and writes the files of a sandbox.
type Files interface {
	ReadFile(ctx context.Context, name, p string) ([]byte, error)
	ReadFileTo(ctx context.Context, name, p string, w io.Writer) error
	WriteFile(ctx context.Context, name, p string, data []byte) error
	WriteFileFrom(ctx context.Context, name, p string, r io.Reader, o WriteOptions) error
	Mkdir(ctx context.Context, name, p string, parents bool) error
	RemoveFile(ctx context.Context, name, p string) error
	RemoveAll(ctx context.Context, name, p string) error
	Stat(ctx context.Context, name, p string) (*FileInfo, error)
	ReadDir(ctx context.Context, name, p string) ([]FileInfo, error)
}

// Interface is everything a Client does. *Client and *sandboxfake.Fake implement it.
type Interface interface {
	Sandboxes
	KeepAlive
	Processes
	Files
}

var _ Interface = (*Client)(nil)
