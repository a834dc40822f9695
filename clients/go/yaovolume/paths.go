package yaovolume

import (
	"path"
	"strings"
)

// ParseSession splits a session id "{userID}/{chatID}" at its first "/". Both parts must
// be non-empty.
func ParseSession(sessionID string) (user, chat string, err error) {
	user, chat, ok := strings.Cut(sessionID, "/")
	if !ok || user == "" || chat == "" {
		return "", "", ErrInvalidSession
	}
	return user, chat, nil
}

// SessionID is the session id of (user, chat).
func SessionID(user, chat string) string { return user + "/" + chat }

// Clean checks a workspace path lexically and returns it cleaned and relative ("." for
// the root). An absolute path, a path that climbs above the root with "..", and a path
// with a NUL byte are refused with ErrOutsideWorkspace (the check that symbolic links do
// not lead out is made where the files are).
func Clean(p string) (string, error) {
	if strings.ContainsRune(p, 0) || path.IsAbs(p) {
		return "", ErrOutsideWorkspace
	}
	c := path.Clean("./" + p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", ErrOutsideWorkspace
	}
	return c, nil
}

// join is root/rel for a cleaned relative rel.
func join(root, rel string) string {
	if rel == "." || rel == "" {
		return root
	}
	return strings.TrimSuffix(root, "/") + "/" + rel
}

// isExcluded: does any pattern match rel's base name (Yao's rule)?
func isExcluded(rel string, patterns []string) bool {
	base := path.Base(rel)
	for _, p := range patterns {
		if ok, _ := path.Match(p, base); ok {
			return true
		}
	}
	return false
}
