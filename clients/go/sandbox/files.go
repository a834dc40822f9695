package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/yaoapp/yao-sandbox/clients/go/api/v1alpha1"
)

// File helpers over exec, mirroring the Yao sandbox Manager and the CLI's read, write,
// ls, stat, mkdir and rm. They need only POSIX tools in the image (sh, cat, stat -c,
// readlink, mkdir, rm, rmdir, chmod, dirname: GNU coreutils or busybox). Bytes travel
// unchanged both ways (exec streams are binary); paths are passed as arguments, never
// spliced into a script, so spaces, quotes and newlines in names are safe.
//
// A relative path is relative to the workspace (spec.workspace.mountPath, /workspace by
// default). Errors from the sandbox are *FileError values; errors.Is(err,
// fs.ErrNotExist), fs.ErrExist and fs.ErrPermission work on them.

// FileInfo describes one file of a sandbox.
type FileInfo struct {
	Name       string      // base name
	Path       string      // absolute path in the sandbox
	Size       int64       // bytes
	Mode       fs.FileMode // type bits and permissions, as os.Lstat gives them
	ModTime    time.Time
	LinkTarget string // for a symlink
}

// IsDir is true for a directory.
func (fi FileInfo) IsDir() bool { return fi.Mode.IsDir() }

// FileError is a file helper's failure in the sandbox: the operation, the path and the
// command's complaint (its first meaningful stderr line).
type FileError struct {
	Op, Path string
	ExitCode int
	Message  string
	kind     error // fs.ErrNotExist, ... or nil
}

func (e *FileError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s %s: %s", e.Op, e.Path, e.Message)
	}
	return fmt.Sprintf("%s %s: the command failed in the sandbox (exit code %d)", e.Op, e.Path, e.ExitCode)
}

func (e *FileError) Unwrap() error { return e.kind }

// NewFileError is the error of a file helper whose command failed with exitCode and
// message (its complaint). kind is what errors.Is matches (fs.ErrNotExist, ...); nil
// derives it from the message as the Client does ("No such file or directory",
// "File exists", "Permission denied" and their busybox and dash wordings). For fakes.
func NewFileError(op, path string, exitCode int, message string, kind error) *FileError {
	if kind == nil {
		kind = errKind(exitCode, message)
	}
	return &FileError{Op: op, Path: path, ExitCode: exitCode, Message: message, kind: kind}
}

// stderrKeep bounds the stderr a file helper keeps for its message.
const stderrKeep = 16 << 10

// boundedBuffer keeps the first max bytes written to it and drops the rest.
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

// ResolvePath is p as the file helpers use it: absolute as given (cleaned), relative
// below the Sandbox's workspace.
func ResolvePath(sb *v1alpha1.Sandbox, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(sb.MountPath(), p)
}

// fileOp runs argv (a function of the resolved path) in the running sandbox with stdin
// and stdout as given and stderr kept for the message.
func (c *Client) fileOp(ctx context.Context, name, op, p string, stdin io.Reader, stdout io.Writer,
	argv func(file string) []string) (string, error) {
	sb, err := c.EnsureRunning(ctx, name)
	if err != nil {
		return "", err
	}
	file := ResolvePath(sb, p)
	if op == "remove" && (file == "/" || file == path.Clean(sb.MountPath())) {
		return file, &FileError{Op: op, Path: file, Message: "refusing to remove / or the workspace root", kind: fs.ErrInvalid}
	}
	errb := &boundedBuffer{max: stderrKeep}
	code, err := c.execSandbox(ctx, sb, argv(file), ExecOptions{Stdin: stdin, Stdout: stdout, Stderr: errb})
	if err != nil {
		return file, fmt.Errorf("%s %s: %w", op, file, err)
	}
	if code != 0 {
		msg := RemoteMessage(errb.Bytes())
		return file, &FileError{Op: op, Path: file, ExitCode: code, Message: msg, kind: errKind(code, msg)}
	}
	return file, nil
}

// errKind maps a complaint to the fs error it stands for.
func errKind(code int, msg string) error {
	switch {
	case code == 127 && strings.Contains(msg, "not available"):
		return errors.ErrUnsupported
	case strings.Contains(msg, "No such file or directory"), strings.Contains(msg, "Not a directory"),
		strings.Contains(msg, "Directory nonexistent"), strings.Contains(msg, "nonexistent directory"): // dash, busybox sh
		return fs.ErrNotExist
	case strings.Contains(msg, "File exists"):
		return fs.ErrExist
	case strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Operation not permitted"),
		strings.Contains(msg, "Read-only file system"):
		return fs.ErrPermission
	}
	return nil
}

// RemoteMessage is a remote command's complaint as one line: the first stderr line that
// is not blank and does not merely sum up earlier ones (tar's closing words), without
// its "prog: " and "N: " prefixes (as in "sh: 1: ..."). The CLI's cli_remote_message.
func RemoteMessage(stderr []byte) string {
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimRight(strings.TrimLeft(line, " \t"), " \t\r")
		if line == "" || strings.Contains(line, "Error is not recoverable") ||
			strings.Contains(line, "Exiting with failure status") || strings.Contains(line, "Error exit delayed") {
			continue
		}
		if k := strings.IndexFunc(line, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-/", r))
		}); k > 0 && strings.HasPrefix(line[k:], ": ") {
			line = line[k+2:]
		}
		if k := strings.IndexFunc(line, func(r rune) bool { return r < '0' || r > '9' }); k > 0 && strings.HasPrefix(line[k:], ": ") {
			line = line[k+2:]
		}
		return line
	}
	return ""
}

// ReadFile returns the contents of a file of the sandbox.
func (c *Client) ReadFile(ctx context.Context, name, p string) ([]byte, error) {
	var out bytes.Buffer
	if err := c.ReadFileTo(ctx, name, p, &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// ReadFileTo streams a file of the sandbox to w (nothing is held in memory).
func (c *Client) ReadFileTo(ctx context.Context, name, p string, w io.Writer) error {
	_, err := c.fileOp(ctx, name, "read", p, nil, w, func(f string) []string { return []string{"cat", "--", f} })
	return err
}

// WriteOptions tunes WriteFileFrom.
type WriteOptions struct {
	// Parents creates missing parent directories (mkdir -p).
	Parents bool
	// Mode, when not 0, is applied with chmod after writing (permission bits only).
	Mode fs.FileMode
}

// writeScript: "$1" the file, "$2" "p" to create parents, "$3" a chmod mode or "".
const writeScript = `f=$1
if [ "$2" = p ]; then mkdir -p -- "$(dirname -- "$f")" || exit; fi
cat > "$f" || exit
if [ -n "$3" ]; then chmod "$3" "$f"; fi`

// WriteFile creates or replaces a file of the sandbox with data, creating missing
// parent directories.
func (c *Client) WriteFile(ctx context.Context, name, p string, data []byte) error {
	return c.WriteFileFrom(ctx, name, p, bytes.NewReader(data), WriteOptions{Parents: true})
}

// WriteFileFrom creates or replaces a file of the sandbox with what r yields until EOF.
func (c *Client) WriteFileFrom(ctx context.Context, name, p string, r io.Reader, o WriteOptions) error {
	parents, mode := "", ""
	if o.Parents {
		parents = "p"
	}
	if o.Mode != 0 {
		mode = strconv.FormatUint(uint64(o.Mode.Perm()), 8)
	}
	_, err := c.fileOp(ctx, name, "write", p, r, nil, func(f string) []string {
		return []string{"sh", "-c", writeScript, "sh", f, parents, mode}
	})
	return err
}

// Mkdir creates a directory of the sandbox; with parents, missing parents too and no
// error when it exists (mkdir -p).
func (c *Client) Mkdir(ctx context.Context, name, p string, parents bool) error {
	_, err := c.fileOp(ctx, name, "mkdir", p, nil, nil, func(f string) []string {
		if parents {
			return []string{"mkdir", "-p", "--", f}
		}
		return []string{"mkdir", "--", f}
	})
	return err
}

// removeScript: like os.Remove — a file, a symlink or an empty directory.
const removeScript = `if [ -d "$1" ] && [ ! -L "$1" ]; then exec rmdir -- "$1"; else exec rm -- "$1"; fi`

// Remove removes a file, a symlink or an empty directory of the sandbox (like os.Remove).
func (c *Client) RemoveFile(ctx context.Context, name, p string) error {
	return c.remove(ctx, name, p, false)
}

// RemoveAll removes a path and everything below it; a missing path is not an error
// (like os.RemoveAll). "/" and the workspace root itself are refused.
func (c *Client) RemoveAll(ctx context.Context, name, p string) error {
	return c.remove(ctx, name, p, true)
}

func (c *Client) remove(ctx context.Context, name, p string, all bool) error {
	_, err := c.fileOp(ctx, name, "remove", p, nil, nil, func(f string) []string {
		if all {
			return []string{"rm", "-rf", "--", f}
		}
		return []string{"sh", "-c", removeScript, "sh", f}
	})
	return err
}

// listScript lists "$2" ("$1" = ls or stat) with POSIX sh, stat -c and readlink only
// (GNU find's -printf, which busybox lacks, is not used). Output, in groups: a count N
// and '\n'; N times NAME '\0' LINK-TARGET '\0' (the target only for a symlink that is
// not followed); then N lines "MODE SIZE MTIME" (stat's raw mode in hex, bytes,
// seconds), "-" for an entry that vanished meanwhile. The first group is the path itself
// (followed when it is a symlink and $1 is ls); for ls of a directory its entries follow,
// hidden ones included. Errors: a line on stderr naming the path, exit 1; exit 127 when
// there is no stat.
const listScript = `CDPATH=
p=$2
command -v stat >/dev/null 2>&1 || { echo 'stat is not available in the sandbox image' >&2; exit 127; }
[ -e "$p" ] || [ -L "$p" ] || { printf '%s: No such file or directory\n' "$p" >&2; exit 1; }
e() {
  f=$1; shift
  printf '%d\n' $#
  for x; do
    t=
    if [ -z "$f" ] && [ -L "$x" ]; then t=$(readlink -- "$x" && echo .) && t=${t%??}; fi
    printf '%s\0%s\0' "$x" "$t"
  done
  [ $# -gt 0 ] || return 0
  if s=$(stat $f -c '%f %s %Y' -- "$@" 2>/dev/null); then printf '%s\n' "$s"
  else for x; do stat $f -c '%f %s %Y' -- "$x" 2>/dev/null || echo -; done; fi
}
if [ "$1" = ls ] && [ -e "$p" ]; then e -L "$p"; else e '' "$p"; fi
if [ "$1" = ls ] && [ -d "$p" ]; then
  cd -- "$p" 2>/dev/null && [ -r . ] || { printf '%s: Permission denied\n' "$p" >&2; exit 1; }
  set --
  for x in * .[!.]* ..?*; do { [ -e "$x" ] || [ -L "$x" ]; } && set -- "$@" "$x"; done
  e '' "$@"
fi
exit 0`

// Stat describes a path of the sandbox (a symlink itself, not its target).
func (c *Client) Stat(ctx context.Context, name, p string) (*FileInfo, error) {
	infos, file, err := c.listing(ctx, name, p, "stat")
	if err != nil {
		return nil, err
	}
	if len(infos) != 1 || len(infos[0]) != 1 {
		return nil, &FileError{Op: "stat", Path: file, Message: "the path vanished while it was read", kind: fs.ErrNotExist}
	}
	return &infos[0][0], nil
}

// ReadDir lists a directory of the sandbox (hidden entries included), sorted by name.
// A path that is a symlink to a directory is followed; a path that is not a directory
// gives its own FileInfo alone (as ls does).
func (c *Client) ReadDir(ctx context.Context, name, p string) ([]FileInfo, error) {
	groups, file, err := c.listing(ctx, name, p, "ls")
	if err != nil {
		return nil, err
	}
	if len(groups) < 2 {
		if len(groups) == 1 && len(groups[0]) == 1 && !groups[0][0].IsDir() {
			return groups[0], nil
		}
		return nil, &FileError{Op: "ls", Path: file, Message: "the path vanished while it was read", kind: fs.ErrNotExist}
	}
	out := groups[1]
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c *Client) listing(ctx context.Context, name, p, mode string) ([][]FileInfo, string, error) {
	var out bytes.Buffer
	file, err := c.fileOp(ctx, name, mode, p, nil, &out, func(f string) []string {
		return []string{"sh", "-c", listScript, "sh", mode, f}
	})
	if err != nil {
		return nil, file, err
	}
	groups, err := parseListing(out.Bytes(), file)
	if err != nil {
		return nil, file, fmt.Errorf("%s %s: %w", mode, file, err)
	}
	return groups, file, nil
}

// parseListing parses listScript's output for the path dir: one slice per group, the
// first naming dir itself; vanished entries are left out.
func parseListing(b []byte, dir string) ([][]FileInfo, error) {
	bad := errors.New("unexpected listing output from the sandbox")
	var groups [][]FileInfo
	for first := true; len(b) > 0; first = false {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			return nil, bad
		}
		n, err := strconv.Atoi(string(b[:nl]))
		if err != nil || n < 0 || n > len(b) {
			return nil, bad
		}
		b = b[nl+1:]
		names := make([][2]string, n)
		for i := 0; i < n; i++ {
			for k := 0; k < 2; k++ {
				z := bytes.IndexByte(b, 0)
				if z < 0 {
					return nil, bad
				}
				names[i][k] = string(b[:z])
				b = b[z+1:]
			}
		}
		group := make([]FileInfo, 0, n)
		for i := 0; i < n; i++ {
			nl := bytes.IndexByte(b, '\n')
			if nl < 0 {
				return nil, bad
			}
			line := string(b[:nl])
			b = b[nl+1:]
			if line == "-" {
				continue
			}
			fi, err := parseStatLine(line)
			if err != nil {
				return nil, bad
			}
			if first {
				fi.Name, fi.Path = baseName(dir), dir
			} else {
				fi.Name, fi.Path = names[i][0], path.Join(dir, names[i][0])
			}
			if fi.Mode&fs.ModeSymlink != 0 {
				fi.LinkTarget = names[i][1]
			}
			group = append(group, fi)
		}
		groups = append(groups, group)
	}
	if len(groups) == 0 {
		return nil, bad
	}
	return groups, nil
}

// parseStatLine parses "MODE SIZE MTIME": stat's raw st_mode in hex, bytes, seconds.
func parseStatLine(line string) (FileInfo, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return FileInfo{}, errors.New("bad stat line")
	}
	raw, err1 := strconv.ParseUint(f[0], 16, 32)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	mtime, err3 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return FileInfo{}, errors.New("bad stat line")
	}
	return FileInfo{Size: size, Mode: fileMode(uint32(raw)), ModTime: time.Unix(mtime, 0)}, nil
}

// fileMode converts a raw st_mode to an fs.FileMode (as os.Lstat does).
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	case 0o100000:
	default:
		mode |= fs.ModeIrregular
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// baseName is the name ls shows for a path: its last component, "/" for the root.
func baseName(p string) string {
	if strings.Trim(p, "/") == "" {
		return "/"
	}
	return path.Base(p)
}
