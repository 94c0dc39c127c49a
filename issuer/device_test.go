package issuer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

// devEnv is a token env with two device clients: "tv" (public) and
// "room" (confidential, secret env.secretA).
func devEnv(t *testing.T, mutate ...func(*Config)) *tkEnv {
	env := newTkEnv(t, mutate...)
	for _, c := range []data.Client{
		{ID: "tv", Type: data.Public},
		{ID: "room", Type: data.Confidential, Secrets: []data.ClientSecret{{ID: "cs_r", Hash: data.Hash(env.secretA), CreatedAt: tkT0}}},
	} {
		c.Name, c.OwnerID, c.Status, c.CreatedAt, c.UpdatedAt = "Room display "+c.ID, 1, data.StatusApproved, tkT0, tkT0
		c.Scopes = []string{"BOOKING_READ", "EVENT_TYPE_READ"}
		c.GrantTypes = []string{data.GrantDeviceCode, data.GrantRefreshToken}
		if err := env.store.CreateClient(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

type deviceAuth struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int    `json:"expires_in"`
	Interval                int    `json:"interval"`
}

func devReq(remote string, kv ...string) tkReq {
	return tkReq{path: devicePath, body: tkForm(kv...), remote: remote}
}

func (env *tkEnv) deviceAuth(kv ...string) deviceAuth {
	env.t.Helper()
	rec := env.do(devReq("198.51.100.7:1", append([]string{"client_id", "tv"}, kv...)...))
	var d deviceAuth
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil {
		env.t.Fatalf("device authorization: %d %s", rec.Code, rec.Body)
	}
	return d
}

func pollReq(client, deviceCode string) tkReq {
	return tkReq{body: tkForm("grant_type", data.GrantDeviceCode, "client_id", client, "device_code", deviceCode)}
}

func TestDeviceAuthorization(t *testing.T) {
	env := devEnv(t)
	rec := env.do(devReq("198.51.100.7:1", "client_id", "tv", "scope", "BOOKING_READ"))
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	var d deviceAuth
	_ = json.Unmarshal(rec.Body.Bytes(), &d)
	if len(d.UserCode) != 9 || d.UserCode[4] != '-' || data.CanonicalUserCode(d.UserCode) == "" {
		t.Errorf("user_code = %q; want XXXX-XXXX of %s", d.UserCode, data.UserCodeAlphabet)
	}
	if d.VerificationURI != "https://app.example.com/device" ||
		d.VerificationURIComplete != "https://app.example.com/device?user_code="+d.UserCode ||
		d.ExpiresIn != 600 || d.Interval != 5 || !strings.HasPrefix(d.DeviceCode, data.PrefixDeviceCode) {
		t.Errorf("response = %+v", d)
	}
	stored, err := env.store.GetDeviceCode(context.Background(), data.CanonicalUserCode(d.UserCode))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(stored)
	if strings.Contains(string(raw), d.DeviceCode[len(data.PrefixDeviceCode)+15:]) {
		t.Errorf("the stored record holds the device code: %s", raw)
	}
	if stored.ClientID != "tv" || fmt.Sprint(stored.Scopes) != "[BOOKING_READ]" || stored.State != data.DevicePending {
		t.Errorf("stored = %+v", stored)
	}
	// Without scope: all the client's reviewed scopes.
	if d := env.deviceAuth(); d.UserCode == "" {
		t.Fatal("no user code")
	}

	tests := []struct {
		name, code string
		status     int
		req        tkReq
	}{
		{"scope outside the client's", "invalid_scope", 400, devReq("198.51.100.8:1", "client_id", "tv", "scope", "PROFILE_READ")},
		{"unknown scope", "invalid_scope", 400, devReq("198.51.100.8:1", "client_id", "tv", "scope", "NOPE")},
		{"client without the grant", "unauthorized_client", 400, devReq("198.51.100.8:1", "client_id", "pub")},
		{"confidential client without its secret", "invalid_client", 401, devReq("198.51.100.8:1", "client_id", "room")},
		{"unknown client", "invalid_client", 401, devReq("198.51.100.8:1", "client_id", "nope")},
		{"GET", "method_not_allowed", 405, tkReq{path: devicePath, method: http.MethodGet}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := env.do(tc.req)
			if rec.Code != tc.status || tkOAuthErr(t, rec) != tc.code {
				t.Fatalf("%d %s; want %d %s", rec.Code, rec.Body, tc.status, tc.code)
			}
		})
	}
	// A confidential client authenticates as at the token endpoint.
	rec = env.do(tkReq{path: devicePath, header: [][2]string{tkBasic("room", env.secretA)}, remote: "198.51.100.9:1"})
	if rec.Code != 200 {
		t.Fatalf("confidential client: %d %s", rec.Code, rec.Body)
	}
}

// TestDeviceErrors: every answer RFC 8628 §3.5 gives a poll, then the
// tokens once.
func TestDeviceErrors(t *testing.T) {
	ctx := context.Background()
	type step struct {
		name    string
		before  func(env *tkEnv, d deviceAuth)
		req     func(env *tkEnv, d deviceAuth) tkReq
		status  int
		code    string
		checkFn func(t *testing.T, env *tkEnv, d deviceAuth)
	}
	poll := func(env *tkEnv, d deviceAuth) tkReq { return pollReq("tv", d.DeviceCode) }
	approve := func(env *tkEnv, d deviceAuth) {
		if err := env.s.ApproveDevice(ctx, d.UserCode, Login{UserID: tkUser}); err != nil {
			env.t.Fatal(err)
		}
	}
	wait := func(env *tkEnv, _ deviceAuth) { env.advance(5 * time.Second) }
	tests := []struct {
		name  string
		steps []step
	}{
		{"authorization_pending", []step{{name: "poll", req: poll, status: 400, code: "authorization_pending"}}},
		{"slow_down raises the interval by 5 s", []step{
			{name: "first", req: poll, status: 400, code: "authorization_pending"},
			{name: "too soon", before: func(env *tkEnv, _ deviceAuth) { env.advance(2 * time.Second) }, req: poll, status: 400, code: "slow_down",
				checkFn: func(t *testing.T, env *tkEnv, d deviceAuth) {
					s, _ := env.store.GetDeviceCode(ctx, data.CanonicalUserCode(d.UserCode))
					if s.Interval != 10 {
						t.Errorf("interval after slow_down = %d; want 10", s.Interval)
					}
				}},
			{name: "5 s is now too soon", before: wait, req: poll, status: 400, code: "slow_down"},
			{name: "15 s later", before: func(env *tkEnv, _ deviceAuth) { env.advance(15 * time.Second) }, req: poll, status: 400, code: "authorization_pending"},
		}},
		{"access_denied", []step{{name: "poll", before: func(env *tkEnv, d deviceAuth) {
			if err := env.s.DenyDevice(ctx, d.UserCode, tkUser); err != nil {
				env.t.Fatal(err)
			}
		}, req: poll, status: 400, code: "access_denied"}}},
		{"expired_token", []step{{name: "poll", before: func(env *tkEnv, _ deviceAuth) { env.advance(DeviceCodeTTL) }, req: poll, status: 400, code: "expired_token"}}},
		{"expired_token after the collector removed it", []step{{name: "poll", before: func(env *tkEnv, _ deviceAuth) {
			env.advance(DeviceCodeTTL + time.Minute)
			if r, err := env.store.GarbageCollect(ctx, env.clock()); err != nil || r.DeviceCodes != 1 {
				env.t.Fatalf("GC = %+v, %v", r, err)
			}
		}, req: poll, status: 400, code: "expired_token"}}},
		{"expired_token after approval", []step{{name: "poll", before: func(env *tkEnv, d deviceAuth) {
			approve(env, d)
			env.advance(DeviceCodeTTL + time.Second)
		}, req: poll, status: 400, code: "expired_token"}}},
		{"invalid_grant: a forged device code", []step{{name: "poll", req: func(env *tkEnv, d deviceAuth) tkReq {
			return pollReq("tv", d.DeviceCode[:len(d.DeviceCode)-2]+"AA")
		}, status: 400, code: "invalid_grant"}}},
		{"invalid_grant: not a device code", []step{{name: "poll", req: func(env *tkEnv, d deviceAuth) tkReq {
			return pollReq("tv", "oauthd_dc_nothing")
		}, status: 400, code: "invalid_grant"}}},
		{"invalid_grant: another client's device code", []step{{name: "poll", req: func(env *tkEnv, d deviceAuth) tkReq {
			r := pollReq("", d.DeviceCode)
			r.header = [][2]string{tkBasic("room", env.secretA)}
			r.body = tkForm("grant_type", data.GrantDeviceCode, "device_code", d.DeviceCode)
			return r
		}, status: 400, code: "invalid_grant"}}},
		{"invalid_request: no device_code", []step{{name: "poll", req: func(env *tkEnv, d deviceAuth) tkReq {
			return tkReq{body: tkForm("grant_type", data.GrantDeviceCode, "client_id", "tv")}
		}, status: 400, code: "invalid_request"}}},
		{"unauthorized_client: a client without the grant", []step{{name: "poll", req: func(env *tkEnv, d deviceAuth) tkReq {
			return pollReq("pub", d.DeviceCode)
		}, status: 400, code: "unauthorized_client"}}},
		{"tokens once, then invalid_grant", []step{
			{name: "approved", before: approve, req: poll, status: 200, checkFn: func(t *testing.T, env *tkEnv, d deviceAuth) {}},
			{name: "again", before: wait, req: poll, status: 400, code: "invalid_grant"},
		}},
		{"a second decision is refused", []step{{name: "poll", before: func(env *tkEnv, d deviceAuth) {
			approve(env, d)
			if err := env.s.DenyDevice(ctx, d.UserCode, tkUser); !errors.Is(err, ErrDeviceCode) {
				env.t.Fatalf("deny after approve = %v; want ErrDeviceCode", err)
			}
			if err := env.s.ApproveDevice(ctx, d.UserCode, Login{UserID: tkUser}); !errors.Is(err, ErrDeviceCode) {
				env.t.Fatalf("approve twice = %v; want ErrDeviceCode", err)
			}
		}, req: poll, status: 200}}},
		{"access_denied: the user removed the app after approving", []step{{name: "poll", before: func(env *tkEnv, d deviceAuth) {
			approve(env, d)
			if _, err := env.store.RevokeApp(ctx, tkUser, "tv"); err != nil {
				env.t.Fatal(err)
			}
		}, req: poll, status: 400, code: "access_denied"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := devEnv(t)
			env.t = t
			d := env.deviceAuth()
			for _, st := range tc.steps {
				if st.before != nil {
					st.before(env, d)
				}
				rec := env.do(st.req(env, d))
				got := ""
				if rec.Code != 200 {
					got = tkOAuthErr(t, rec)
				}
				if rec.Code != st.status || got != st.code {
					t.Fatalf("%s: %d %s; want %d %s", st.name, rec.Code, rec.Body, st.status, st.code)
				}
				if st.checkFn != nil {
					st.checkFn(t, env, d)
				}
			}
		})
	}
}

// TestDeviceTokens: an approved device gets an access token for the user,
// a refresh token that works, and the consent is recorded like any other.
func TestDeviceTokens(t *testing.T) {
	env := devEnv(t)
	d := env.deviceAuth("scope", "BOOKING_READ")
	dr, err := env.s.FindDevice(context.Background(), strings.ToLower(strings.ReplaceAll(d.UserCode, "-", " ")))
	if err != nil || dr.Client.ID != "tv" || dr.Client.Name != "Room display tv" {
		t.Fatalf("FindDevice = %+v, %v", dr, err)
	}
	if err := env.s.ApproveDevice(context.Background(), d.UserCode, Login{UserID: tkUser}); err != nil {
		t.Fatal(err)
	}
	tok := env.mustTokens(env.do(pollReq("tv", d.DeviceCode)))
	if tok.RefreshToken == "" || tok.Scope != "BOOKING_READ" {
		t.Fatalf("tokens = %+v", tok)
	}
	vc, err := env.s.cfg.Verifier.Verify(context.Background(), tok.AccessToken)
	if err != nil || !vc.HasUser() || vc.Subject != fmt.Sprint(tkUser) {
		t.Fatalf("access token claims = %+v, %v", vc, err)
	}
	g, err := env.store.GetGrant(context.Background(), tkUser, "tv")
	if err != nil || fmt.Sprint(g.Scopes) != "[BOOKING_READ]" {
		t.Fatalf("grant = %+v, %v", g, err)
	}
	env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "refresh_token", "client_id", "tv", "refresh_token", tok.RefreshToken)}))
}

// TestDevicePollRace: of many polls of an approved device code at once,
// exactly one gets tokens.
func TestDevicePollRace(t *testing.T) {
	env := devEnv(t)
	d := env.deviceAuth()
	if err := env.s.ApproveDevice(context.Background(), d.UserCode, Login{UserID: tkUser}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rec := env.do(pollReq("tv", d.DeviceCode))
			codes[i], bodies[i] = rec.Code, rec.Body.String()
		})
	}
	wg.Wait()
	ok := 0
	for i, c := range codes {
		switch {
		case c == 200:
			ok++
		case c == 400 && (strings.Contains(bodies[i], "invalid_grant") || strings.Contains(bodies[i], "slow_down")):
		default:
			t.Errorf("poll %d: %d %s", i, c, bodies[i])
		}
	}
	if ok != 1 {
		t.Fatalf("%d polls got tokens; want exactly 1", ok)
	}
}

// TestDeviceCodeFlood: the device-code request is bounded per address,
// per client, and by the cap on a client's outstanding codes, whatever
// the number of addresses; the collector frees the cap.
func TestDeviceCodeFlood(t *testing.T) {
	const max = 40
	env := devEnv(t, func(c *Config) { c.DeviceCodeMax = max })
	// One address: 20 at once, then 429 with Retry-After.
	okOne := 0
	for range 50 {
		rec := env.do(devReq("203.0.113.1:1", "client_id", "tv"))
		switch rec.Code {
		case 200:
			okOne++
		case 429:
			if rec.Header().Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After: %v", rec.Header())
			}
		default:
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if okOne != deviceLimits[0].Burst {
		t.Fatalf("one address got %d device codes; want %d (the per-address burst)", okOne, deviceLimits[0].Burst)
	}
	// Many addresses: the client's cap holds; the codes stored are those answered.
	var stored []string
	for i := range 500 {
		rec := env.do(devReq(fmt.Sprintf("10.%d.%d.1:1", i/250, i%250), "client_id", "tv"))
		switch rec.Code {
		case 200:
			var d deviceAuth
			_ = json.Unmarshal(rec.Body.Bytes(), &d)
			stored = append(stored, d.UserCode)
		case 429:
			if tkOAuthErr(t, rec) != "too_many_requests" {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if okOne+len(stored) != max {
		t.Fatalf("the client holds %d device codes; want the cap %d", okOne+len(stored), max)
	}
	// Another client is not affected by the first one's flood.
	if rec := env.do(tkReq{path: devicePath, header: [][2]string{tkBasic("room", env.secretA)}, remote: "10.9.9.9:1"}); rec.Code != 200 {
		t.Fatalf("other client: %d %s", rec.Code, rec.Body)
	}
	// Expired and swept, the cap is free again.
	env.advance(DeviceCodeTTL + time.Minute)
	r, err := env.store.GarbageCollect(context.Background(), env.clock())
	if err != nil || r.DeviceCodes != max+1 {
		t.Fatalf("GC = %+v, %v; want %d device codes removed", r, err, max+1)
	}
	if rec := env.do(devReq("10.200.0.1:1", "client_id", "tv")); rec.Code != 200 {
		t.Fatalf("after GC: %d %s", rec.Code, rec.Body)
	}
}
