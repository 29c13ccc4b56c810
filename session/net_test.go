package session

import "net"

// net0 finds a free local port for a test's metrics address.
type net0 struct{}

func (net0) listen() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
