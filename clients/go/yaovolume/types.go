// Package yaovolume implements the method set of Yao's workspace Volume (Yao's
// tai/volume.Volume: file IO, directory sync, copy and archives, keyed by a session id)
// over the PVC workspaces of yao-sandbox, so Yao's file browser, git view, workspace sync
// and archive features reach the same /workspace its sandboxes see.
//
// A session id is "{userID}/{chatID}" and names the Sandbox of that pair (found by its
// canonical name, else by the selectable fields spec.userID and spec.chatID; never
// created). Paths are relative to the workspace root.
//
//   - A running Sandbox: every operation is one or two commands in its pod over the
//     project's exec stream (bulk data as one tar stream each way: SyncPush, SyncPull
//     and Copy never run a command per file).
//   - A stopped or paused Sandbox is not woken (by default): reads and writes go through
//     a short-lived helper pod that mounts the claim (see Options.Stopped and the policy
//     in docs/go-client.md). PolicyWake starts the sandbox instead; PolicyRefuse fails
//     with ErrSandboxStopped.
//
// The types below have the shapes of Yao's (same names, field names and types), so Yao
// adapts with a thin wrapper that converts them one to one.
package yaovolume

import (
	"context"
	"io/fs"
	"os"
	"time"
)

// Volume is Yao's tai/volume.Volume method set.
type Volume interface {
	ReadFile(ctx context.Context, sessionID, path string) ([]byte, os.FileMode, error)
	WriteFile(ctx context.Context, sessionID, path string, data []byte, perm os.FileMode) error
	Stat(ctx context.Context, sessionID, path string) (*FileInfo, error)
	ListDir(ctx context.Context, sessionID, path string) ([]FileInfo, error)
	Remove(ctx context.Context, sessionID, path string, recursive bool) error
	Rename(ctx context.Context, sessionID, oldPath, newPath string) error
	MkdirAll(ctx context.Context, sessionID, path string) error

	SyncPush(ctx context.Context, sessionID, localDir string, opts ...SyncOption) (*SyncResult, error)
	SyncPull(ctx context.Context, sessionID, localDir string, opts ...SyncOption) (*SyncResult, error)
	Copy(ctx context.Context, sessionID, src, dst string, opts ...SyncOption) (*SyncResult, error)

	Zip(ctx context.Context, sessionID, src, dst string, excludes []string) (*ArchiveResult, error)
	Unzip(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error)
	Gzip(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error)
	Gunzip(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error)
	Tar(ctx context.Context, sessionID, src, dst string, excludes []string) (*ArchiveResult, error)
	Untar(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error)
	Tgz(ctx context.Context, sessionID, src, dst string, excludes []string) (*ArchiveResult, error)
	Untgz(ctx context.Context, sessionID, src, dst string) (*ArchiveResult, error)

	Close() error
}

// FileInfo describes one file or directory. Path is the path asked for (Stat) or the
// entry's name (ListDir), as in Yao.
type FileInfo struct {
	Path  string
	Size  int64
	Mtime time.Time
	Mode  fs.FileMode
	IsDir bool
}

// SyncResult sums up a SyncPush, SyncPull or Copy: the files written (deletions are not
// counted, as in Yao) and their bytes.
type SyncResult struct {
	FilesSynced      int
	BytesTransferred int64
	Duration         time.Duration
}

// ArchiveResult sums up an archive operation: for Zip, Gzip, Tar and Tgz the size of the
// archive written and the regular files in it; for the others the bytes and files
// extracted.
type ArchiveResult struct {
	SizeBytes  int64
	FilesCount int
}

// SyncOption configures SyncPush, SyncPull and Copy.
type SyncOption func(*SyncConfig)

// SyncConfig is the resolved options.
type SyncConfig struct {
	// ForceFull sends every file, even those whose size and mtime match.
	ForceFull bool
	// Excludes are glob patterns (path.Match syntax) matched against each entry's base
	// name; an excluded directory is skipped whole. Excluded entries are neither sent nor
	// deleted on the other side.
	Excludes []string
	// RemotePath is a sub-path of the workspace to sync with instead of its root.
	RemotePath string
}

// WithForceFull sends every file regardless of size and mtime.
func WithForceFull() SyncOption { return func(c *SyncConfig) { c.ForceFull = true } }

// WithExcludes adds base-name glob patterns to leave out.
func WithExcludes(patterns ...string) SyncOption {
	return func(c *SyncConfig) { c.Excludes = append(c.Excludes, patterns...) }
}

// WithRemotePath syncs with a sub-path of the workspace.
func WithRemotePath(path string) SyncOption { return func(c *SyncConfig) { c.RemotePath = path } }

// ApplySyncOpts resolves options.
func ApplySyncOpts(opts []SyncOption) SyncConfig {
	var cfg SyncConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}
