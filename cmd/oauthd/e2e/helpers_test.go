package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// Starting the real binary: serve and gateway.

type server struct {
	cmd  *exec.Cmd
	base string
	db   string
	done chan error
}

var listenRE = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// startServe runs `oauthd serve` on a free port and waits until /readyz
// answers 200. serve's stderr goes to the test log.
func startServe(t *testing.T, db string, args ...string) *server {
	t.Helper()
	return startServeSink(t, db, nil, args...)
}

// startServeLogged is startServe that keeps serve's stderr in a logSink
// instead of the test log.
func startServeLogged(t *testing.T, db string, args ...string) (*server, *logSink) {
	t.Helper()
	sink := &logSink{}
	return startServeSink(t, db, sink, args...), sink
}

func startServeSink(t *testing.T, db string, sink *logSink, args ...string) *server {
	t.Helper()
	base := []string{"serve", "--addr", "127.0.0.1:0", "--db", db}
	if postgres.IsURL(db) {
		if session := pgtest.Session(db); session != "" {
			// Through PgBouncer (OAUTHD_TEST_PGBOUNCER): the listener
			// goes straight to the server.
			base = append(base, "--db-session-url", session)
		}
	}
	cmd := exec.Command(oauthdBin, append(base, args...)...)
	s := &server{cmd: cmd, db: db}
	s.base, s.done = startProcess(t, cmd, "serve", listenRE, sink)
	waitReady(t, s.base)
	return s
}

// startProcess starts cmd with cleanEnv and cmd.Env, passes every line of its stderr to
// sink (or, when sink is nil, to the test log, prefixed with what), and
// waits for the first line that matches listen, whose first submatch it
// returns. done receives cmd.Wait's result once the process has exited; a
// process still running when t ends is killed.
func startProcess(t *testing.T, cmd *exec.Cmd, what string, listen *regexp.Regexp, sink *logSink) (addr string, done chan error) {
	t.Helper()
	cmd.Env = append(cleanEnv(), cmd.Env...) // with the variables the test set
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan error, 1)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if sink != nil {
				sink.add(sc.Text())
			} else {
				t.Log(what + ": " + sc.Text())
			}
			if m := listen.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	select {
	case addr = <-found:
	case err := <-done:
		if sink != nil {
			t.Fatalf("%s exited before listening: %v\n%s", what, err, sink.text())
		}
		t.Fatalf("%s exited before listening: %v", what, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not print its address within 20s", what)
	}
	return addr, done
}

// waitReady waits until base/readyz answers 200, for at most 10s.
func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz did not answer 200 within 10s (last: %v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
