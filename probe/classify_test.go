package probe

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestClientSideFailures: a request this process could not send for want
// of descriptors is the client's failure, never the endpoint's connection
// error (issue 24).
func TestClientSideFailures(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		err := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)}
		if got := classify(context.Background(), err, false); got != ClientSide || got.String() != "client" {
			t.Errorf("%v: class %v", err, got)
		}
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	if got := classify(context.Background(), refused, false); got != Connection {
		t.Errorf("%v: class %v", refused, got)
	}
}
