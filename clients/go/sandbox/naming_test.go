package sandbox

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/names.tsv from the C implementation")

// namingInputs are the pairs of testdata/names.tsv: every branch of the C rules.
var namingInputs = [][2]string{
	{"alice", "c1"}, {"Alice", "C1"}, {"a-b", "c"}, {"a", "b-c"}, {"user@example.com", "chat 42"},
	{"用户", "对话"}, {"!!!", "???"}, {"-abc-", "--x--"}, {"a", "b"}, {"0", "0"},
	{strings.Repeat("a", 28), strings.Repeat("b", 27)}, // plain, exactly 63
	{strings.Repeat("a", 28), strings.Repeat("b", 28)}, // plain IDs, 64: hashed
	{strings.Repeat("a", 128), strings.Repeat("b", 128)},
	{"short", strings.Repeat("c", 128)}, {strings.Repeat("u", 128), "short"},
	{strings.Repeat("a", 22) + "-" + strings.Repeat("b", 30), "c"}, // cut right after a '-'
	{strings.Repeat("ab-", 40), strings.Repeat("-cd", 40)},
	{"UPPER_case.Mixed", "Chat/With/Slashes"}, {"x", strings.Repeat("é", 60)},
	{"tab\there", "new\nline"}, {"a", ""}, {"", "b"},
}

// goLine is what naming_driver.c prints for (user, chat).
func goLine(user, chat string) string {
	lv := func(s string) string {
		if v := LabelValue(s); v != "" {
			return v
		}
		return "-"
	}
	name, err := PodName(user, chat)
	if err != nil {
		name = "ERROR"
	}
	return name + " " + lv(user) + " " + lv(chat)
}

func encodePair(user, chat string) string {
	return hex.EncodeToString([]byte(user)) + "," + hex.EncodeToString([]byte(chat))
}

// TestNamingTable compares the Go rules with the table the C implementation produced.
func TestNamingTable(t *testing.T) {
	f, err := os.Open("testdata/names.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		in, want, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("malformed line %q", sc.Text())
		}
		u, c, _ := strings.Cut(in, ",")
		ub, err1 := hex.DecodeString(u)
		cb, err2 := hex.DecodeString(c)
		if err1 != nil || err2 != nil {
			t.Fatalf("malformed line %q", sc.Text())
		}
		if got := goLine(string(ub), string(cb)); got != want {
			t.Errorf("(%q, %q): Go %q, C %q", ub, cb, got, want)
		}
		n++
	}
	if n != len(namingInputs) {
		t.Errorf("names.tsv has %d pairs, namingInputs %d: run the cross-check with -update", n, len(namingInputs))
	}
}

// TestNamingCrossCheck compiles controller/sandbox/model/naming.c with testdata/naming_driver.c
// and compares it with the Go rules on the table and on random IDs (ASCII edge bytes,
// UTF-8, lengths around every cut).
func TestNamingCrossCheck(t *testing.T) {
	src, err := filepath.Abs("../../../controller")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "sandbox", "model", "naming.c")); err != nil {
		t.Skipf("controller sources not found next to the module: %v", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "naming_driver")
	out, err := exec.Command(cc, "-std=c11", "-O1", "-I", src, "-o", bin, "testdata/naming_driver.c",
		filepath.Join(src, "sandbox", "model", "naming.c"), "-lcrypto").CombinedOutput()
	if err != nil {
		t.Fatalf("compiling the C naming rules: %v\n%s", err, out)
	}

	pairs := append([][2]string(nil), namingInputs...)
	rng := rand.New(rand.NewSource(13))
	alphabet := []string{"a", "z", "0", "9", "A", "Z", "-", "_", ".", " ", "/", "@", "é", "用", "\x7f", "\x01"}
	randID := func() string {
		var b strings.Builder
		n := 1 + rng.Intn(130)
		for b.Len() < n {
			if rng.Intn(3) == 0 {
				b.WriteString(alphabet[rng.Intn(len(alphabet))])
			} else {
				b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[rng.Intn(36)])
			}
		}
		return b.String()
	}
	for i := 0; i < 5000; i++ {
		pairs = append(pairs, [2]string{randID(), randID()})
	}
	var in bytes.Buffer
	for _, p := range pairs {
		fmt.Fprintln(&in, encodePair(p[0], p[1]))
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &in
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the C naming rules: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(res), "\n"), "\n")
	if len(lines) != len(pairs) {
		t.Fatalf("C gave %d lines for %d pairs", len(lines), len(pairs))
	}
	bad := 0
	for i, p := range pairs {
		if got := goLine(p[0], p[1]); got != lines[i] {
			if bad++; bad <= 10 {
				t.Errorf("(%q, %q): Go %q, C %q", p[0], p[1], got, lines[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d pairs differ", bad, len(pairs))
	}
	if *update {
		var tsv strings.Builder
		for i := range namingInputs {
			tsv.WriteString(encodePair(pairs[i][0], pairs[i][1]) + "\t" + lines[i] + "\n")
		}
		if err := os.WriteFile("testdata/names.tsv", []byte(tsv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPodNameProperties(t *testing.T) {
	for _, p := range namingInputs {
		name, err := PodName(p[0], p[1])
		if p[0] == "" || p[1] == "" {
			if err == nil {
				t.Errorf("(%q, %q): no error for an empty ID", p[0], p[1])
			}
			continue
		}
		if err != nil || !IsDNSLabel(name) || !strings.HasPrefix(name, "yao-sb-") {
			t.Errorf("(%q, %q) = %q, %v: not a yao-sb- DNS label", p[0], p[1], name, err)
		}
	}
	a, _ := PodName("a-b", "c")
	b, _ := PodName("a", "b-c")
	if a == b {
		t.Errorf("(a-b, c) and (a, b-c) share %q", a)
	}
	if _, err := PodName("a\x00b", "c"); err == nil {
		t.Error("a NUL byte was accepted")
	}
}
