package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// The naming rules of controller/sandbox/model/naming.c, byte for byte: the Go client and the
// controller must agree on the pod name of every (user, chat), because the client names
// the Sandbox after it (the canonical name) and finds the pod by it. A test compiles the
// C file and compares both on a table and on random IDs.

const (
	namePrefix = "yao-sb-"
	nameMax    = 63 // DNS-1123 label
	hashLen    = 8
	// Room left for <u> and <c> in "yao-sb-<u>-<c>-<hash>".
	hashedRoom    = nameMax - len(namePrefix) - 1 - 1 - hashLen
	labelValueMax = 63
)

// ErrInvalidID is returned for an empty user or chat ID, or one containing a NUL byte
// (the API server refuses both).
var ErrInvalidID = errors.New("user and chat IDs must be non-empty and free of NUL bytes")

// PodName is the canonical name of the Sandbox of (user, chat), which is also the name of
// its pod: "yao-sb-<user>-<chat>" when both IDs are non-empty runs of [a-z0-9] and the
// whole fits in 63 characters; otherwise "yao-sb-<u>-<c>-<hash>", where u and c are the
// IDs lower-cased (ASCII), every other byte mapped to '-', runs collapsed, '-' trimmed at
// both ends ("x" when nothing is left), shortened to share 46 characters, and hash is
// the first 8 hex digits of SHA-256(user + "\x00" + chat). See docs/design.md, "Naming".
func PodName(user, chat string) (string, error) {
	if user == "" || chat == "" || strings.IndexByte(user, 0) >= 0 || strings.IndexByte(chat, 0) >= 0 {
		return "", ErrInvalidID
	}
	if isPlainID(user) && isPlainID(chat) && len(namePrefix)+len(user)+1+len(chat) <= nameMax {
		return namePrefix + user + "-" + chat, nil
	}
	// Sanitise both at full room first, then share the room: a short side leaves what it
	// does not need to the other, two long sides get half each.
	half := hashedRoom / 2
	u := sanitiseID(user, hashedRoom)
	c := sanitiseID(chat, hashedRoom)
	umax, cmax := len(u), len(c)
	if len(u)+len(c) > hashedRoom {
		switch {
		case len(u) <= half:
			cmax = hashedRoom - len(u)
		case len(c) <= hashedRoom-half:
			umax = hashedRoom - len(c)
		default:
			umax, cmax = half, hashedRoom-half
		}
	}
	// Re-run the sanitiser with the final bound so a cut never leaves a trailing '-'.
	if umax < len(u) {
		u = sanitiseID(user, umax)
	}
	if cmax < len(c) {
		c = sanitiseID(chat, cmax)
	}
	return namePrefix + u + "-" + c + "-" + shortHash(user+"\x00"+chat), nil
}

// LabelValue is the sanitised label value the controller puts on the objects it creates
// (sandbox.yaoapps.com/user, .../chat): a valid value unchanged; otherwise each run of
// disallowed bytes becomes one '-', non-alphanumeric ends are trimmed, the body is cut
// to 54 characters and "-" + the first 8 hex digits of SHA-256(value) are appended.
func LabelValue(in string) string {
	in = cString(in) // as C sees it
	if isLabelValue(in) {
		return in
	}
	const bodyMax = labelValueMax - 1 - hashLen
	out := make([]byte, 0, labelValueMax)
	replaced := false
	for i := 0; i < len(in) && in[i] != 0 && len(out) < bodyMax; i++ {
		ch := in[i]
		if !isAlnum(ch) && ch != '-' && ch != '_' && ch != '.' {
			if replaced {
				continue // one '-' per run of disallowed bytes
			}
			ch = '-'
			replaced = true
		} else {
			replaced = false
		}
		if len(out) == 0 && !isAlnum(ch) {
			continue // must start alphanumeric
		}
		out = append(out, ch)
	}
	for len(out) > 0 && !isAlnum(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	if len(out) > 0 {
		out = append(out, '-')
	}
	return string(out) + shortHash(in)
}

// IsDNSLabel is true for a valid DNS-1123 label: 1-63 of [a-z0-9-], alphanumeric ends.
func IsDNSLabel(s string) bool {
	if s == "" || len(s) > nameMax {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return isLowerAlnum(s[0]) && isLowerAlnum(s[len(s)-1])
}

func isLowerAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') }

// isPlainID: a non-empty run of [a-z0-9].
func isPlainID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerAlnum(s[i]) {
			return false
		}
	}
	return true
}

// sanitiseID lower-cases, maps everything outside [a-z0-9] to '-', collapses '-' runs,
// trims '-' at both ends and keeps at most max bytes ("x" if nothing is left).
func sanitiseID(in string, max int) string {
	out := make([]byte, 0, max)
	for i := 0; i < len(in) && len(out) < max; i++ {
		c := in[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !isLowerAlnum(c) {
			if len(out) == 0 || out[len(out)-1] == '-' {
				continue // leading '-' or a run
			}
			c = '-'
		}
		out = append(out, c)
	}
	for len(out) > 0 && out[len(out)-1] == '-' {
		out = out[:len(out)-1]
	}
	if len(out) == 0 {
		return "x"
	}
	return string(out)
}

// isLabelValue: already a valid label value (<= 63 of [A-Za-z0-9._-], alphanumeric ends;
// empty is valid).
func isLabelValue(s string) bool {
	if len(s) > labelValueMax {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !isAlnum(ch) && ch != '-' && ch != '_' && ch != '.' {
			return false
		}
	}
	return s == "" || (isAlnum(s[0]) && isAlnum(s[len(s)-1]))
}

// cString is s up to its first NUL, as C sees it.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// shortHash is the first 8 lowercase hex digits of SHA-256(s).
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:hashLen/2])
}
