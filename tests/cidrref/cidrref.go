// tests/cidrref/cidrref.go — sbx_cidr_parse and sbx_cidr_contains (controller/sandbox/model/netpol.c)
// against a reference built on Go's net/netip, and against what Go's net.ParseCIDR (which
// most network plugins use) makes of each accepted CIDR.
//
//	go run tests/cidrref/cidrref.go -driver build/bin/cidr_driver [-n 200000] [-seed 1]
//
// It generates random CIDRs (IPv4, IPv6, IPv4-mapped and IPv4-compatible spellings, ranges
// near the cut ranges, host bits set or not, odd prefixes), feeds pairs to the C driver
// (tests/cidrref/cidr_driver.c) and compares, pair by pair:
//   - refused or accepted alike, and the canonical text equal: a CIDR whose address is
//     IPv4-mapped with a prefix of 96 or more is its IPv4 range; one in ::/96 with such a
//     prefix (IPv4-compatible) is refused; host bits must be zero;
//   - each accepted CIDR denotes, to net.ParseCIDR + net.IPNet.Contains, exactly the
//     addresses the canonical form does (the family included);
//   - containment: same family, the outer prefix not longer, and the inner network
//     address inside the outer.
// Exit 1 on the first mismatch, naming the input.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
)

// ref is the reference canonical form: "err" or the prefix's text.
func ref(s string) (netip.Prefix, bool) {
	slash := strings.IndexByte(s, '/')
	if slash < 0 {
		return netip.Prefix{}, false
	}
	bits := s[slash+1:]
	// digits only, no sign, no leading zero, at most 3 digits
	if len(bits) == 0 || len(bits) > 3 || strings.Trim(bits, "0123456789") != "" || (bits[0] == '0' && len(bits) > 1) {
		return netip.Prefix{}, false
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Zone() != "" {
		return netip.Prefix{}, false
	}
	if p.Masked() != p {
		return netip.Prefix{}, false
	}
	a := p.Addr()
	if a.Is6() && p.Bits() >= 96 {
		b := a.As16()
		if a.Is4In6() {
			return netip.PrefixFrom(a.Unmap(), p.Bits()-96), true
		}
		zero := true
		for _, x := range b[:12] {
			if x != 0 {
				zero = false
			}
		}
		if zero {
			return netip.Prefix{}, false
		}
	}
	return p, true
}

// plugin checks that Go's net.ParseCIDR reads s as the addresses canonical c denotes:
// the same family (net.IPNet matches an IPv4 address only when its IP is IPv4 or
// IPv4-mapped) and the same network number and prefix.
func plugin(s string, c netip.Prefix) error {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		return fmt.Errorf("net.ParseCIDR refuses %q: %v", s, err)
	}
	ones, bits := n.Mask.Size()
	ip := n.IP
	if v4 := ip.To4(); v4 != nil {
		ip = v4
		if bits == 128 {
			ones -= 96
		}
		bits = 32
	}
	a, _ := netip.AddrFromSlice(ip)
	got := netip.PrefixFrom(a, ones)
	if got != c {
		return fmt.Errorf("net.ParseCIDR reads %q as %v (family bits %d), the controller as %v", s, got, bits, c)
	}
	// and net.IPNet.Contains agrees on the first and last address
	first := c.Addr()
	if !n.Contains(first.AsSlice()) {
		return fmt.Errorf("net.IPNet %v does not contain %v", n, first)
	}
	return nil
}

var cuts = []string{"10.0.0.0", "172.16.0.0", "192.168.0.0", "100.64.0.0", "169.254.0.0", "169.254.169.254", "0.0.0.0", "8.8.8.0"}

func randV4(r *rand.Rand) [4]byte {
	if r.Intn(2) == 0 {
		a := netip.MustParseAddr(cuts[r.Intn(len(cuts))]).As4()
		for i := 1 + r.Intn(3); i < 4; i++ {
			if r.Intn(3) == 0 {
				a[i] = byte(r.Intn(256))
			}
		}
		return a
	}
	var a [4]byte
	r.Read(a[:])
	return a
}

// masked clears the host bits of b (len*8 bits) beyond prefix, most of the time.
func masked(r *rand.Rand, b []byte, prefix int) {
	if r.Intn(8) == 0 {
		return
	}
	for bit := prefix; bit < len(b)*8; bit++ {
		b[bit/8] &^= 0x80 >> (bit % 8)
	}
}

func gen(r *rand.Rand) string {
	switch r.Intn(7) {
	case 0, 1: // IPv4
		a := randV4(r)
		p := r.Intn(33)
		masked(r, a[:], p)
		return fmt.Sprintf("%s/%d", netip.AddrFrom4(a), p)
	case 2: // IPv4-mapped, written either way
		a := randV4(r)
		p := 96 + r.Intn(33)
		if r.Intn(6) == 0 {
			p = r.Intn(96)
		}
		var b [16]byte
		b[10], b[11] = 0xff, 0xff
		copy(b[12:], a[:])
		masked(r, b[:], p)
		if r.Intn(2) == 0 {
			return fmt.Sprintf("::ffff:%d.%d.%d.%d/%d", b[12], b[13], b[14], b[15], p)
		}
		return fmt.Sprintf("%s/%d", netip.AddrFrom16(b).StringExpanded(), p)
	case 3: // IPv4-compatible
		a := randV4(r)
		p := 96 + r.Intn(33)
		var b [16]byte
		copy(b[12:], a[:])
		masked(r, b[:], p)
		if r.Intn(2) == 0 {
			return fmt.Sprintf("::%d.%d.%d.%d/%d", b[12], b[13], b[14], b[15], p)
		}
		return fmt.Sprintf("%s/%d", netip.AddrFrom16(b), p)
	case 4: // IPv6 near the special prefixes
		pre := []string{"::", "::ffff:0:0", "64:ff9b::", "2002::", "fc00::", "fe80::", "fd00:ec2::254", "::1", "0:0:0:0:1::"}
		b := netip.MustParseAddr(pre[r.Intn(len(pre))]).As16()
		for i := 0; i < 16; i++ {
			if r.Intn(6) == 0 {
				b[i] = byte(r.Intn(256))
			}
		}
		p := r.Intn(129)
		masked(r, b[:], p)
		return fmt.Sprintf("%s/%d", netip.AddrFrom16(b), p)
	case 5: // IPv6
		var b [16]byte
		r.Read(b[:])
		p := r.Intn(129)
		masked(r, b[:], p)
		return fmt.Sprintf("%s/%d", netip.AddrFrom16(b), p)
	default: // malformed
		bad := []string{"10.0.0.0", "10.0.0.0/33", "::/129", "10.0.0.0/08", "010.0.0.0/8", "::ffff:10.0.0.0/-1",
			"1.2.3.4/+8", "fe80::%eth0/64", "10.0.0.0/8 ", " 10.0.0.0/8", "::ffff:1.2.3/104", "1::2::3/64",
			"/8", "10.0.0.0//8", "::ffff:10.0.0.0/0104"}
		return bad[r.Intn(len(bad))]
	}
}

func main() {
	driver := flag.String("driver", "build/bin/cidr_driver", "the C driver")
	n := flag.Int("n", 200000, "pairs")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	r := rand.New(rand.NewSource(*seed))

	pairs := make([][2]string, *n)
	var in strings.Builder
	for i := range pairs {
		a := gen(r)
		b := gen(r)
		if r.Intn(3) == 0 { // often a nested pair: b inside a
			if p, ok := ref(a); ok {
				bits := p.Bits() + r.Intn(p.Addr().BitLen()-p.Bits()+1)
				q, _ := p.Addr().Prefix(bits)
				b = q.String()
			}
		}
		pairs[i] = [2]string{a, b}
		in.WriteString(a + "\t" + b + "\n")
	}
	cmd := exec.Command(*driver)
	cmd.Stdin = strings.NewReader(in.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cidrref: %s: %v\n", *driver, err)
		os.Exit(2)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	accepted, mapped, contained := 0, 0, 0
	for i := 0; i < len(pairs); i++ {
		if !sc.Scan() {
			fmt.Fprintf(os.Stderr, "cidrref: the driver answered %d lines of %d\n", i, len(pairs))
			os.Exit(1)
		}
		f := strings.Fields(sc.Text())
		var want [2]string
		var ps [2]netip.Prefix
		var oks [2]bool
		for j := 0; j < 2; j++ {
			ps[j], oks[j] = ref(pairs[i][j])
			want[j] = "err"
			if oks[j] {
				want[j] = ps[j].String()
				if err := plugin(pairs[i][j], ps[j]); err != nil {
					fmt.Fprintf(os.Stderr, "cidrref: %v\n", err)
					os.Exit(1)
				}
				accepted++
				if ps[j].Addr().Is4() && strings.Contains(pairs[i][j], ":") {
					mapped++
				}
			}
		}
		wc := "-"
		if oks[0] && oks[1] {
			wc = "0"
			if ps[0].Addr().BitLen() == ps[1].Addr().BitLen() && ps[0].Bits() <= ps[1].Bits() && ps[0].Contains(ps[1].Addr()) {
				wc = "1"
				contained++
			}
		}
		if len(f) != 3 || f[0] != want[0] || f[1] != want[1] || f[2] != wc {
			fmt.Fprintf(os.Stderr, "cidrref: %q %q: the controller says %q, the reference %s %s %s\n",
				pairs[i][0], pairs[i][1], sc.Text(), want[0], want[1], wc)
			os.Exit(1)
		}
	}
	fmt.Printf("cidrref: %d pairs agree (%d CIDRs accepted, %d of them IPv4-mapped spellings; %d contained)\n",
		len(pairs), accepted, mapped, contained)
}
