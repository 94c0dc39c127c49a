package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// leanMaxBody bounds the response body the lean client reads, as Post
// does.
const leanMaxBody = 64 << 10

// errLeanResponse is a response the lean client cannot read: a malformed
// status line or header, or a body over leanMaxBody.
var errLeanResponse = errors.New("malformed HTTP response")

// leanClient is a keep-alive HTTP/1.1 client for one worker of a refresh
// run: one plain-TCP connection, a form POST written with one write, the
// response's status, Content-Length (or chunked body) and body read with
// a reused buffer. It costs a fraction of net/http's client per request,
// as pgbench's C client costs a fraction of a Go one: the load generator
// shares the server's cores, so what it spends is taken from the server.
// It speaks only what a token endpoint answers; a response it cannot
// read is a transport error, and the connection is dropped. Not safe for
// concurrent use.
type leanClient struct {
	addr string // host:port to dial
	head []byte // "POST path HTTP/1.1\r\nHost: …\r\nContent-Type: …\r\nContent-Length: "

	conn net.Conn
	br   *bufio.Reader
	req  []byte // reused request buffer
	body []byte // reused response-body buffer
}

// newLeanClient returns a lean client for the http URL target, or an error
// for any other scheme.
func newLeanClient(target string) (*leanClient, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("lean client: %q is not an http:// URL", target)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	path := u.RequestURI()
	return &leanClient{
		addr: addr,
		head: []byte("POST " + path + " HTTP/1.1\r\nHost: " + u.Host +
			"\r\nUser-Agent: oauthd-bench\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: "),
	}, nil
}

// close drops the connection.
func (c *leanClient) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// post sends the form body and returns the response's status and body
// (valid until the next call). Status 0 means a transport error
// (returned), after which the connection is dropped and the next call
// dials again. Nothing is retried here: a request the server dropped is
// the caller's to send again, as with [Endpoint.Post].
func (c *leanClient) post(form []byte) (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return 0, nil, err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 4<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	c.req = append(append(strconv.AppendInt(append(c.req[:0], c.head...), int64(len(form)), 10), "\r\n\r\n"...), form...)
	c.conn.SetDeadline(time.Now().Add(RequestTimeout))
	if _, err := c.conn.Write(c.req); err != nil {
		c.close()
		return 0, nil, err
	}
	status, body, keep, err := c.read()
	if err != nil {
		c.close()
		return 0, nil, err
	}
	if !keep {
		c.close()
	}
	return status, body, nil
}

// read reads one response.
func (c *leanClient) read() (status int, body []byte, keep bool, err error) {
	line, err := c.line()
	if err != nil {
		return 0, nil, false, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, nil, false, errLeanResponse
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 {
		return 0, nil, false, errLeanResponse
	}
	keep = line[7] == '1' // HTTP/1.0 closes unless it says otherwise; we never ask it to
	length, chunked := -1, false
	for {
		h, err := c.line()
		if err != nil {
			return 0, nil, false, err
		}
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, nil, false, errLeanResponse
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return 0, nil, false, errLeanResponse
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
			if !chunked {
				return 0, nil, false, errLeanResponse
			}
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				keep = true
			}
		}
	}
	switch {
	case status == 204 || status == 304 || status < 200:
		c.body = c.body[:0]
	case chunked:
		c.body, err = readAllBounded(httputil.NewChunkedReader(c.br), c.body[:0])
	case length >= 0:
		if length > leanMaxBody {
			return 0, nil, false, errLeanResponse
		}
		if cap(c.body) < length {
			c.body = make([]byte, length)
		}
		c.body = c.body[:length]
		_, err = io.ReadFull(c.br, c.body)
	default: // the body ends with the connection
		keep = false
		c.body, err = readAllBounded(c.br, c.body[:0])
	}
	if err != nil {
		return 0, nil, false, err
	}
	return status, c.body, keep, nil
}

// line reads one line without its CRLF; a line longer than the buffer is
// malformed.
func (c *leanClient) line() ([]byte, error) {
	l, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errLeanResponse
		}
		return l, err
	}
	l = l[:len(l)-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	return l, nil
}

// readAllBounded appends r's bytes to buf, up to leanMaxBody.
func readAllBounded(r io.Reader, buf []byte) ([]byte, error) {
	b := bytes.NewBuffer(buf)
	n, err := b.ReadFrom(io.LimitReader(r, leanMaxBody+1))
	if err != nil {
		return nil, err
	}
	if n > leanMaxBody {
		return nil, errLeanResponse
	}
	return b.Bytes(), nil
}
