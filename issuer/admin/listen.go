package admin

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// Listen listens on the admin Unix socket at path, which only its owner
// may open (mode 0600, with no moment at a wider mode): the socket is the
// admin API's only access control ([Handler]). A socket file nobody
// answers on is stale (a server killed before it could remove it) and is
// replaced; one that answers belongs to a running server and is refused.
func Listen(path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("another process answers on the admin socket %s; stop it first", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale admin socket %s: %w", path, err)
		}
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("admin socket %s: %w (the path must be shorter than 104 bytes; use a shorter --db path)", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod admin socket: %w", err)
	}
	return ln, nil
}
