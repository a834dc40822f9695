package yaovolume

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// kindError is a sentinel that also matches a standard fs error with errors.Is.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Errors. Failures on a path are *fs.PathError values whose Err is one of these or a
// *RemoteError; errors.Is works through both, and with the standard fs errors:
// ErrOutsideWorkspace is also fs.ErrPermission (Yao's local volume answers an escaping
// path with os.ErrPermission), a missing file fs.ErrNotExist, and so on.
var (
	// ErrOutsideWorkspace: the path is absolute, climbs out with "..", or resolves
	// (through symbolic links) outside the workspace.
	ErrOutsideWorkspace error = &kindError{"the path is outside the workspace", fs.ErrPermission}
	// ErrInvalidSession: the session id is not "{userID}/{chatID}".
	ErrInvalidSession = errors.New(`invalid session id: want "{userID}/{chatID}"`)
	// ErrSandboxMissing: no Sandbox belongs to the session's (user, chat).
	ErrSandboxMissing error = &kindError{"no sandbox for this session", fs.ErrNotExist}
	// ErrSandboxStopped: the Sandbox is stopped or paused and Options.Stopped is PolicyRefuse.
	ErrSandboxStopped = errors.New("the sandbox is stopped (not woken for file access)")
	// ErrSandboxBusy: the Sandbox is starting, stopping or being deleted: neither its pod
	// nor a helper may touch the workspace now; try again.
	ErrSandboxBusy = errors.New("the sandbox is starting or stopping; its workspace is busy")
	// ErrSandboxStarted: the Sandbox was started while a helper pod held its workspace; the
	// helper was removed and the operation stopped (so there are never two writers).
	ErrSandboxStarted = errors.New("the sandbox was started while its stopped workspace was being accessed")
	// ErrIsDir and ErrNotDir: the path is (not) a directory.
	ErrIsDir  = errors.New("is a directory")
	ErrNotDir = errors.New("not a directory")
	// ErrNotEmpty: a directory to remove (not recursively) or to rename onto is not empty.
	ErrNotEmpty = errors.New("directory not empty")
	// ErrUnsupported: the image lacks a tool the operation needs (GNU find, tar,
	// coreutils' readlink -m).
	ErrUnsupported error = &kindError{"a tool the volume needs is missing from the sandbox image", errors.ErrUnsupported}
	// ErrUnsafeArchive: an archive entry would land outside its destination.
	ErrUnsafeArchive = errors.New("archive entry outside the destination")
)

// RemoteError is a command's failure in the pod: its exit code and complaint.
type RemoteError struct {
	Code    int
	Message string
	kind    error
}

func (e *RemoteError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("the command failed in the sandbox (exit code %d)", e.Code)
}

func (e *RemoteError) Unwrap() error { return e.kind }

// Exit codes of the volume script (script.go) for the errors it names itself.
const (
	codeOutside  = 10
	codeNotFound = 11
	codeExists   = 12
	codeIsDir    = 13
	codeNotDir   = 14
	codePerm     = 15
	codeNotEmpty = 16
	codeNoTool   = 17
)

// remoteKind maps a script's exit code and message to the error it stands for.
func remoteKind(code int, msg string) error {
	switch code {
	case codeOutside:
		return ErrOutsideWorkspace
	case codeNotFound:
		return fs.ErrNotExist
	case codeExists:
		return fs.ErrExist
	case codeIsDir:
		return &kindError{"is a directory", ErrIsDir}
	case codeNotDir:
		return &kindError{"not a directory", ErrNotDir}
	case codePerm:
		return fs.ErrPermission
	case codeNotEmpty:
		return ErrNotEmpty
	case codeNoTool, 127:
		return ErrUnsupported
	}
	switch {
	case strings.Contains(msg, "No such file or directory"):
		return fs.ErrNotExist
	case strings.Contains(msg, "Not a directory"):
		return ErrNotDir
	case strings.Contains(msg, "Is a directory"):
		return ErrIsDir
	case strings.Contains(msg, "Directory not empty"):
		return ErrNotEmpty
	case strings.Contains(msg, "File exists"):
		return fs.ErrExist
	case strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Operation not permitted"),
		strings.Contains(msg, "Read-only file system"):
		return fs.ErrPermission
	case strings.Contains(msg, "unrecognized option"), strings.Contains(msg, "invalid option"),
		strings.Contains(msg, "not found"):
		return ErrUnsupported
	}
	return nil
}

func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}
