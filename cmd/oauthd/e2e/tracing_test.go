package e2e

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/oauth2"
	"google.golang.org/protobuf/proto"

	"oauthd/consent/consenttest"
	"oauthd/data/postgres/pgtest"
)

// otlpSpan is one span an OTLP receiver got, with its service.name.
type otlpSpan struct {
	service                   string
	trace, id, parent, name   string
	kind                      tracepb.Span_SpanKind
	start, end                uint64
	attrs                     map[string]string
	links                     []string // the trace IDs of its links
	statusCode, statusMessage string
}

// otlpReceiver is an OTLP/HTTP collector (protobuf over POST /v1/traces,
// as the OpenTelemetry SDK's exporter sends it) that keeps every span.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []otlpSpan
	posts int
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: %s %s (%s); want POST /v1/traces application/x-protobuf", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var msg coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &msg)
		}
		if err != nil {
			t.Errorf("OTLP receiver: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.add(&msg)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) add(msg *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	for _, rs := range msg.ResourceSpans {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{service: service, trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId),
					parent: hex.EncodeToString(s.ParentSpanId), name: s.Name, kind: s.Kind,
					start: s.StartTimeUnixNano, end: s.EndTimeUnixNano, attrs: attrMap(s.Attributes),
					statusCode: s.GetStatus().GetCode().String(), statusMessage: s.GetStatus().GetMessage()}
				for _, l := range s.Links {
					sp.links = append(sp.links, hex.EncodeToString(l.TraceId))
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return m
}

// waitSpan waits (10 s at most) for a span that match accepts and returns
// it.
func (r *otlpReceiver) waitSpan(t *testing.T, what string, match func(otlpSpan) bool) otlpSpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if match(s) {
				r.mu.Unlock()
				return s
			}
		}
		n := len(r.spans)
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no span %s among the %d received:\n%s", what, n, r.dump())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// children returns the spans whose parent is p, by name.
func (r *otlpReceiver) children(p otlpSpan) map[string][]otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]otlpSpan{}
	for _, s := range r.spans {
		if s.trace == p.trace && s.parent == p.id {
			out[s.name] = append(out[s.name], s)
		}
	}
	return out
}

func (r *otlpReceiver) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.spans {
		b.WriteString("  " + s.service + " " + s.trace[:8] + " " + s.id + " <- " + s.parent + " " + s.kind.String() + " " + s.name + "\n")
	}
	return b.String()
}

// otelEnv points a process at the receiver, exporting every 50 ms.
func otelEnv(r *otlpReceiver) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + r.URL, "OTEL_BSP_SCHEDULE_DELAY=50"}
}

// wantChild checks that parent has exactly one child span called name,
// within its time, and returns it.
func wantChild(t *testing.T, r *otlpReceiver, parent otlpSpan, name string) otlpSpan {
	t.Helper()
	kids := r.children(parent)[name]
	if len(kids) != 1 {
		t.Fatalf("span %q has %d children %q; want 1. Spans:\n%s", parent.name, len(kids), name, r.dump())
	}
	k := kids[0]
	if k.start < parent.start || k.end > parent.end {
		t.Errorf("span %q [%d, %d] is not within its parent %q [%d, %d]", name, k.start, k.end, parent.name, parent.start, parent.end)
	}
	return k
}

// TestTracesOfLoginAndRefresh is issue 34's check of traces: the real
// binary, pointed at an OTLP receiver by OTEL_EXPORTER_OTLP_ENDPOINT alone,
// sends the spans of one login and one refresh (and of the code exchange
// between them), checked span by span: names, kinds, parents, the steps
// of each grant (client authentication, the store's operation and its
// write-ahead log's write and fsync, the signature), the password slot's
// wait and the password check.
func TestTracesOfLoginAndRefresh(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testTraces(t, filepath.Join(t.TempDir(), "o.db"), "bolt") })
	t.Run("postgres", func(t *testing.T) { testTraces(t, pgtest.New(t), "postgres") })
}

// testTraces is TestTracesOfLoginAndRefresh on the database db of the
// backend whose spans are named "<backend> <operation>".
func testTraces(t *testing.T, db, backend string) {
	recv := newOTLPReceiver(t)
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", db}
	if session := pgtest.Session(db); backend == "postgres" && session != "" {
		args = append(args, "--db-session-url", session) // through PgBouncer
	}
	cmd := exec.Command(oauthdBin, args...)
	cmd.Env = otelEnv(recv)
	s := &server{cmd: cmd, db: db}
	s.base, s.done = startProcess(t, cmd, "serve", listenRE, nil)
	waitReady(t, s.base)
	e := &e2e{server: s}
	mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json")

	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, "PROFILE_READ")
	verifier := oauth2.GenerateVerifier()
	code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	r := e.refresh(t, id, secret, tok.RefreshToken)
	if r.Status != http.StatusOK {
		t.Fatalf("refresh = %d %v", r.Status, r.Body)
	}

	serverSpan := func(name, grant string) func(otlpSpan) bool {
		return func(s otlpSpan) bool {
			return s.name == name && s.kind == tracepb.Span_SPAN_KIND_SERVER && (grant == "" || s.attrs["oauth.grant_type"] == grant)
		}
	}
	// The login: POST /auth/login, a root span of service oauthd, with
	// the password slot's wait, then the check, and the session stored.
	login := recv.waitSpan(t, "POST /auth/login", serverSpan("POST /auth/login", ""))
	if login.parent != "" || login.service != "oauthd" || login.attrs["http.route"] != "/auth/login" {
		t.Errorf("login span: parent %q service %q route %q; want a root span of oauthd, route /auth/login", login.parent, login.service, login.attrs["http.route"])
	}
	wait := wantChild(t, recv, login, "password slot wait")
	check := wantChild(t, recv, login, "password check")
	if wait.end > check.start {
		t.Errorf("the password check started before its slot was had")
	}
	wantStore(t, recv, login, backend, "create session")

	// The refresh: client authentication, the rotation in the store with
	// its log write and fsync, and the signature (started inside the
	// store's transaction, on another goroutine, yet a child of the
	// request's span).
	refresh := recv.waitSpan(t, "the refresh", serverSpan("POST /v2/auth/oauth2/token", "refresh_token"))
	wantChild(t, recv, refresh, "client authentication")
	wantStore(t, recv, refresh, backend, "rotate refresh token")
	sign := wantChild(t, recv, refresh, "sign access token")
	if sign.kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("sign span kind %v", sign.kind)
	}
	// The code exchange has the same steps, its store operation its own.
	exchange := recv.waitSpan(t, "the code exchange", serverSpan("POST /v2/auth/oauth2/token", "authorization_code"))
	wantChild(t, recv, exchange, "client authentication")
	wantStore(t, recv, exchange, backend, "exchange auth code")
	wantChild(t, recv, exchange, "sign access token")
	for _, sp := range []otlpSpan{login, refresh, exchange} {
		if sp.trace == refresh.trace && sp.id != refresh.id {
			t.Errorf("span %q shares the refresh's trace: each request is a trace of its own", sp.name)
		}
	}
	if backend == "bolt" {
		// The CLI's `clients approve` went through the admin socket.
		approve := recv.waitSpan(t, "admin POST /v1/clients/approve", serverSpan("admin POST /v1/clients/approve", ""))
		wantChild(t, recv, approve, "bolt update client")
	}
	t.Logf("spans received:\n%s", recv.dump())
	// Nothing the spans say is a secret.
	recv.mu.Lock()
	for _, sp := range recv.spans {
		for k, v := range sp.attrs {
			for _, secretValue := range []string{secret, tok.RefreshToken, tok.AccessToken, r.str("refresh_token"), e2ePassword, code} {
				if strings.Contains(v, secretValue) {
					t.Errorf("span %q attribute %s holds a secret", sp.name, k)
				}
			}
		}
	}
	recv.mu.Unlock()
}

// wantStore checks that parent has the span of the store operation op
// with its backend's children: on bbolt, the write-ahead log's write then
// fsync; on PostgreSQL, the statements (their SQL without arguments).
func wantStore(t *testing.T, r *otlpReceiver, parent otlpSpan, backend, op string) {
	t.Helper()
	span := wantChild(t, r, parent, backend+" "+op)
	if backend == "bolt" {
		write := wantChild(t, r, span, "bolt wal write")
		fsync := wantChild(t, r, span, "bolt wal fsync")
		if write.end > fsync.start {
			t.Errorf("%s: the log's fsync started before its write ended", op)
		}
		if fsync.attrs["oauthd.batch_ops"] == "" {
			t.Errorf("%s: fsync span without oauthd.batch_ops: %v", op, fsync.attrs)
		}
		return
	}
	statements := 0
	for _, kids := range r.children(span) {
		for _, k := range kids {
			if k.attrs["db.system.name"] == "postgresql" && k.attrs["db.query.text"] != "" {
				statements++
				if k.start < span.start || k.end > span.end {
					t.Errorf("%s: statement %q outside its operation's span", op, k.name)
				}
			}
		}
	}
	if statements == 0 {
		t.Errorf("%s: no statement span under %q:\n%s", op, span.name, r.dump())
	}
}

// TestTracesThroughGateway checks that the gateway's span reaches its
// upstream as a W3C traceparent (the upstream's parent is the gateway's
// server span, in the gateway's trace), and that a caller's own
// traceparent is linked, not followed.
func TestTracesThroughGateway(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	recv := newOTLPReceiver(t)
	up := &upstreamStub{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	cmd := exec.Command(oauthdBin, "gateway", "--listen", "127.0.0.1:0", "--upstream", upSrv.URL, "--issuer", e.base, "--dpop-trust-host")
	cmd.Env = otelEnv(recv)
	addr, _ := startProcess(t, cmd, "gateway", gatewayListenRE, nil)
	gw := "http://" + addr

	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, "PROFILE_READ")
	verifier := oauth2.GenerateVerifier()
	code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	const callerTrace = "0af7651916cd43dd8448eb211c80319c"
	hdr := http.Header{"Traceparent": {"00-" + callerTrace + "-b7ad6b7169203331-01"}}
	if status, body := e2eGet(t, gw+"/v2/me", tok.AccessToken, hdr); status != http.StatusOK {
		t.Fatalf("gateway /v2/me = %d %s", status, body)
	}
	seen := up.take()
	if len(seen) != 1 {
		t.Fatalf("upstream saw %d requests; want 1", len(seen))
	}
	tp := strings.Split(seen[0].Header.Get("Traceparent"), "-")
	if len(tp) != 4 || tp[0] != "00" || len(tp[1]) != 32 || len(tp[2]) != 16 || tp[3] != "01" {
		t.Fatalf("upstream's traceparent %q; want 00-<trace>-<span>-01", seen[0].Header.Get("Traceparent"))
	}
	if tp[1] == callerTrace {
		t.Errorf("the gateway continued the caller's trace; a caller's traceparent must only be linked")
	}
	span := recv.waitSpan(t, "the gateway's span of GET /v2/me", func(s otlpSpan) bool { return s.id == tp[2] })
	if span.trace != tp[1] || span.kind != tracepb.Span_SPAN_KIND_SERVER || span.service != "oauthd-gateway" || span.parent != "" {
		t.Errorf("upstream's parent span: trace %s kind %v service %q parent %q; want the gateway's root server span of trace %s",
			span.trace, span.kind, span.service, span.parent, tp[1])
	}
	if len(span.links) != 1 || span.links[0] != callerTrace {
		t.Errorf("gateway span links %v; want the caller's trace %s", span.links, callerTrace)
	}
	// The gateway's fetch of the issuer's keys is a client span.
	recv.waitSpan(t, "fetch JWKS", func(s otlpSpan) bool {
		return s.name == "fetch JWKS" && s.kind == tracepb.Span_SPAN_KIND_CLIENT && s.service == "oauthd-gateway" && s.attrs["http.response.status_code"] == "200"
	})
}
