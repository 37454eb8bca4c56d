package cluster_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/internal/kafkatest"
)

// forward accepts TCP connections on listen and copies each to and from a
// new connection to target, until stop is called (which closes every
// connection and waits for its goroutines). addr is the address it
// listens on.
func forward(listen, target string) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, fmt.Errorf("forwarding %s to %s: %w", listen, target, err)
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			c.Close()
			return false
		}
		conns[c] = true
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			if !track(in) || !track(out) {
				in.Close()
				out.Close()
				continue
			}
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	}, nil
}

// hostNet is a bridge on the host with one network namespace per
// simulated host, each joined to the bridge by a veth pair.
type hostNet struct {
	bridge, hostIP string
	ns             []string
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newHostNet makes n namespaces on a new bridge, removed when the test
// ends. Names and the subnet are random: other runs of the suite may
// share the machine.
func newHostNet(t *testing.T, n int) *hostNet {
	var b [3]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	subnet := fmt.Sprintf("10.%d.%d", 64+int(b[0])%128, b[1])
	h := &hostNet{bridge: "wb" + id, hostIP: subnet + ".1"}
	t.Cleanup(func() {
		for _, ns := range h.ns {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
		_ = exec.Command("ip", "link", "del", h.bridge).Run()
	})
	run(t, "ip", "link", "add", h.bridge, "type", "bridge")
	run(t, "ip", "addr", "add", h.hostIP+"/24", "dev", h.bridge)
	run(t, "ip", "link", "set", h.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("weir-%s-%d", id, i)
		vh, vn := fmt.Sprintf("wv%s%dh", id, i), fmt.Sprintf("wv%s%dn", id, i)
		run(t, "ip", "netns", "add", ns)
		h.ns = append(h.ns, ns)
		run(t, "ip", "link", "add", vh, "type", "veth", "peer", "name", vn)
		run(t, "ip", "link", "set", vn, "netns", ns)
		run(t, "ip", "link", "set", vh, "master", h.bridge)
		run(t, "ip", "link", "set", vh, "up")
		in := func(args ...string) { run(t, append([]string{"ip", "netns", "exec", ns}, args...)...) }
		in("ip", "addr", "add", fmt.Sprintf("%s.%d/24", subnet, 10+i), "dev", vn)
		in("ip", "link", "set", vn, "up")
		in("ip", "link", "set", "lo", "up")
	}
	return h
}

// TestClusterFailoverHosts is TestClusterFailover with every instance on
// a host of its own: a network namespace joined to the broker's host by a
// veth pair and a bridge. The broker listens (and advertises itself) on
// the host's loopback, so the test forwards the bridge address to it, and
// each instance forwards its own loopback's broker address to the bridge:
// every byte an instance exchanges with the broker crosses its veth.
// It needs root (ip netns); it runs once, in the test command's first
// pass (not under -race).
func TestClusterFailoverHosts(t *testing.T) {
	broker := kafkatest.Broker(t)
	switch {
	case os.Geteuid() != 0:
		t.Skip("network namespaces (ip netns) need root; TestClusterFailover runs the same failover on loopback")
	case raceEnabled:
		t.Skip("runs once, in the test command's pass without -race (scripts/test.sh)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("running as root but ip (iproute2) is missing: %v", err)
	}
	h := newHostNet(t, 4)
	bridged, stop, err := forward(h.hostIP+":0", broker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	failoverTrial(t, broker, 0, func(i int, s jobSpec, moved chan struct{}) *member {
		s.Forward = broker + "=" + bridged
		m := startMember(t, s, moved, "ip", "netns", "exec", h.ns[i])
		// The member ran in the namespace, whose loopback has no broker.
		mine, _ := os.Readlink("/proc/self/ns/net")
		t.Cleanup(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.netns == "" || m.netns == mine {
				t.Errorf("member %d ran in network namespace %q, the test's is %q", i, m.netns, mine)
			}
		})
		return m
	})
}
