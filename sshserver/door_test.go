package sshserver

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// The door after login: with any key let in, a client that logs in may
// still not hold the server's descriptors, memory or log. Each test's
// client misbehaves in one way, on 127.0.0.1 and 127.0.0.2.

// login opens a connection from local and logs in with signer as user,
// opening no session; it returns the client (nil and the error if the
// server refused or closed it).
func login(t *testing.T, addr, local, user string, signer gossh.Signer) (*gossh.Client, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	cfg := &gossh.ClientConfig{User: user, Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)}, Timeout: 5 * time.Second,
		HostKeyCallback: gossh.InsecureIgnoreHostKey()}
	c, chans, reqs, err := gossh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	client := gossh.NewClient(c, chans, reqs)
	t.Cleanup(func() { client.Close() })
	return client, nil
}

// open is the count of connections the server holds open.
func (s *Server) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// waitConns waits until the server holds n connections open.
func waitConns(t *testing.T, s *Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); s.open() != n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", s.open(), n)
		}
	}
}

// TestConnectionsBounded: logged-in connections are bounded from one
// address and in all, the next refused at once with a log line; those
// that open no session are closed at SessionWait; then a real client gets
// in. Before the bounds all 20 of 20 idle connections stayed open (3,000
// held 3,019 descriptors and 234 MB).
func TestConnectionsBounded(t *testing.T) {
	dir := t.TempDir()
	key, _ := newKey(t)
	const wait = 1500 * time.Millisecond
	r := startServer(t, Config{HostKeyPath: filepath.Join(dir, "host"), AllowAnyKey: true,
		MaxConnections: 6, MaxConnectionsPerIP: 4, SessionWait: wait})
	var in int
	for _, local := range []string{"127.0.0.1", "127.0.0.2"} {
		for range 10 {
			if c, err := login(t, r.addr, local, "demo", key); err == nil {
				in++
				defer c.Close()
			}
		}
	}
	t.Logf("%d of 20 idle logins admitted, %d open", in, r.srv.open())
	if in != 6 || r.srv.open() != 6 {
		t.Fatalf("%d logins admitted, %d open; want 6 (4 from one address, 6 in all)", in, r.srv.open())
	}
	for _, want := range []string{"too many connections open (4 in all, 4 from 127.0.0.1)", "too many connections open (6 in all, 2 from 127.0.0.2)"} {
		if !strings.Contains(r.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, r.log.String())
		}
	}
	// None opened a session: each is closed at the wait.
	waitConns(t, r.srv, 0)
	if want := "no session within 1.5s of the login"; !strings.Contains(r.log.String(), want) {
		t.Errorf("log lacks %q", want)
	}
	s, err := dial(t, r.addr, key, nil)
	if err != nil {
		t.Fatalf("a client after the flood: %v", err)
	}
	s.waitFor(t, "Latency")
}

// loggedIn serves any key and logs a client in from 127.0.0.1, with no
// session.
func loggedIn(t *testing.T) *gossh.Client {
	t.Helper()
	key, _ := newKey(t)
	r := startServer(t, Config{HostKeyPath: filepath.Join(t.TempDir(), "host"), AllowAnyKey: true})
	c, err := login(t, r.addr, "127.0.0.1", "demo", key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChannelsBounded: one connection holds at most
// MaxChannelsPerConnection channels at once (100,000 empty ones took 851
// MB); one given back makes room for another.
func TestChannelsBounded(t *testing.T) {
	c := loggedIn(t)
	var open []gossh.Channel
	refused := 0
	for range 50 {
		ch, reqs, err := c.OpenChannel("session", nil)
		if err != nil {
			var oe *gossh.OpenChannelError
			if !errors.As(err, &oe) || oe.Reason != gossh.ResourceShortage {
				t.Fatalf("a refused channel: %v", err)
			}
			refused++
			continue
		}
		go gossh.DiscardRequests(reqs)
		open = append(open, ch)
	}
	t.Logf("%d of 50 channels open, %d refused", len(open), refused)
	if len(open) != MaxChannelsPerConnection {
		t.Fatalf("%d channels open on one connection, want %d", len(open), MaxChannelsPerConnection)
	}
	open[0].Close()
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(10 * time.Millisecond) {
		ch, reqs, err := c.OpenChannel("session", nil)
		if err == nil {
			go gossh.DiscardRequests(reqs)
			ch.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no channel after one closed: %v", err)
		}
	}
}

// TestEnvBounded: a session's env requests past MaxEnvRequests are
// refused (100,000 of them added 520 MB).
func TestEnvBounded(t *testing.T) {
	c := loggedIn(t)
	ch, reqs, err := c.OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	go gossh.DiscardRequests(reqs)
	accepted := 0
	for i := range 1000 {
		ok, err := ch.SendRequest("env", true, gossh.Marshal(struct{ Key, Value string }{"K", strings.Repeat("v", i%100)}))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			accepted++
		}
	}
	t.Logf("%d of 1000 env requests accepted", accepted)
	if accepted != MaxEnvRequests {
		t.Fatalf("%d env requests accepted, want %d", accepted, MaxEnvRequests)
	}
}

// TestRefusedUserShortened: a refused key's log line quotes the user name
// shortened: 200 KB names made 4 MB of log a second.
func TestRefusedUserShortened(t *testing.T) {
	dir := t.TempDir()
	_, knownPub := newKey(t)
	stranger, _ := newKey(t)
	r := startServer(t, Config{HostKeyPath: filepath.Join(dir, "host"), AuthorizedKeys: writeFile(t, dir, "authorized", knownPub)})
	for range 5 {
		if _, err := login(t, r.addr, "127.0.0.1", strings.Repeat("é", 100_000), stranger); err == nil {
			t.Fatal("an unknown key got in")
		}
	}
	log := r.log.String()
	t.Logf("%d bytes of log for 5 refusals of 200 KB user names", len(log))
	if !strings.Contains(log, "not authorized") || len(log) > 5*400 {
		t.Fatalf("%d bytes of log:\n%.600s", len(log), log)
	}
}

// TestHostKeyDirUntouched: a new host key in an existing directory, or
// in the current one by a bare name, leaves the directory's mode as it
// was (the key library chmodded it to 0700); a directory that does not
// exist is created private.
func TestHostKeyDirUntouched(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if _, err := New(Config{HostKeyPath: filepath.Join(dir, "host"), AllowAnyKey: true}); err != nil {
		t.Fatal(err)
	}
	if m := mode(dir); m != 0o755 {
		t.Errorf("an existing directory's mode became %04o", m)
	}
	if m := mode(filepath.Join(dir, "host")); m != 0o600 {
		t.Errorf("the key's mode is %04o", m)
	}
	t.Chdir(dir)
	if _, err := New(Config{HostKeyPath: "bare_host", AllowAnyKey: true}); err != nil {
		t.Fatal(err)
	}
	if m := mode("."); m != 0o755 {
		t.Errorf("the current directory's mode became %04o", m)
	}
	if _, err := New(Config{HostKeyPath: filepath.Join(dir, "new", "deeper", "host"), AllowAnyKey: true}); err != nil {
		t.Fatal(err)
	}
	if m := mode(filepath.Join(dir, "new", "deeper")); m != 0o700 {
		t.Errorf("a new directory's mode is %04o, want 0700", m)
	}
	// The key made here is the one the server reads, again and again.
	if _, err := New(Config{HostKeyPath: filepath.Join(dir, "host"), AllowAnyKey: true}); err != nil {
		t.Fatal(err)
	}
}
