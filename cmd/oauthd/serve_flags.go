package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/pflag"

	"oauthd/cmd/internal/backend"
	"oauthd/consent/handover"
	"oauthd/issuer"
	"oauthd/keys/verify"
)

// serveOptions are the flags of `oauthd serve`.
type serveOptions struct {
	addr        string
	baseURL     string
	appURL      string
	demo        bool
	codeTTL     time.Duration
	refreshIdle time.Duration
	refreshMax  time.Duration
	reuseGrace  time.Duration
	dpopWindow  time.Duration
	debugAddr   string
	pwSlots     int
	proxies     []string
	// resources are the APIs tokens may be bound to (RFC 8707).
	resources []string
	// metaPrivate: client ID metadata documents may be fetched from
	// loopback and private addresses.
	metaPrivate bool
	// metaMinTTL, metaMaxTTL: how long a fetched metadata document is
	// used, whatever its Cache-Control says.
	metaMinTTL, metaMaxTTL time.Duration
	// dbSession: a URL for the connection that needs a session (LISTEN)
	// when --db is a transaction pool (docs/POSTGRESQL.md "Behind
	// PgBouncer"); db is --db (a global flag), set by run before check.
	dbSession, db string
	// The login handover (docs/LOGIN-HANDOVER.md): all three or none.
	loginURL, loginIssuer, loginJWKS string
	loginJWKSMaxAge                  time.Duration
	trace                            tracingOptions // tracing.go
	// ipx and trusted are --trusted-proxy as check parsed it, once: how
	// a request's source address is found (issuer.TrustedProxies), and
	// the peers whose traceparent is followed (tracing.go).
	ipx     echo.IPExtractor
	trusted []netip.Prefix

	now func() time.Time // the clock of the issuer, keys, verifier and pages; nil: time.Now (tests inject one)
	// adminSocket: the path wire listens on for the admin socket before
	// it opens the database; "" for none (bench, a shared database).
	adminSocket string
}

// AddFlags registers the serve flags, each with its default: a constant
// of the package that owns the setting. A new flag is one line here (its
// variable OAUTHD_<NAME> and file key serve.<name> follow from its name,
// docs/CONFIG.md), plus its rule in check if it has one.
func (o *serveOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address; port 0 picks a free port")
	fs.StringVar(&o.baseURL, "base-url", "", "public API base URL, the token issuer (default http://<listen address>)")
	fs.StringVar(&o.appURL, "app-url", "", "public URL of the consent pages (default http://<listen address>)")
	fs.StringVar(&o.loginURL, "login-url", "", "hand the login to the platform: its login page (needs --login-issuer and --login-jwks; default: the built-in login form)")
	fs.StringVar(&o.loginIssuer, "login-issuer", "", "the iss of the platform's login assertions")
	fs.StringVar(&o.loginJWKS, "login-jwks", "", "the platform's public keys: a JWKS URL, or a JWKS or PEM file")
	fs.DurationVar(&o.loginJWKSMaxAge, "login-jwks-max-age", handover.DefaultMaxAge,
		"the longest the platform's keys are used before they are fetched again, so the longest a key the platform removed is still accepted; a shorter Cache-Control max-age of the JWKS is followed")
	fs.StringVar(&o.dbSession, "db-session-url", "", "when --db is a transaction pool (PgBouncer pool_mode=transaction): a postgres:// URL of the same database that keeps a session (straight to PostgreSQL or a session-mode pool), for the change listener's LISTEN")
	fs.BoolVar(&o.demo, "demo", false, "seed a demo user and an approved demo client and print how to use them")
	fs.DurationVar(&o.codeTTL, "code-ttl", issuer.DefaultCodeTTL, "authorization code lifetime (at most 10m)")
	fs.DurationVar(&o.refreshIdle, "refresh-idle", issuer.DefaultRefreshIdle, "refresh token idle lifetime, renewed by each refresh")
	fs.DurationVar(&o.refreshMax, "refresh-max", issuer.DefaultRefreshMax, "refresh token absolute lifetime from the authorization")
	fs.DurationVar(&o.reuseGrace, "refresh-reuse-grace", issuer.DefaultRefreshReuseGrace,
		"within this time after a rotation, the previous refresh token may be presented once more (a lost response) and rotates again instead of revoking the grant; 0 disables, at most 5m")
	fs.DurationVar(&o.dpopWindow, "dpop-window", verify.DefaultDPoPWindow, "how far a DPoP proof's iat may be from the server's clock, either way (RFC 9449 §11.1); between 5s and 10m")
	fs.StringSliceVar(&o.proxies, "trusted-proxy", nil, "CIDR of a reverse proxy whose X-Forwarded-For is believed (repeatable; comma-separated in the variable); default none: the source address is the TCP peer's")
	_ = fs.SetAnnotation("trusted-proxy", annEnv, []string{"OAUTHD_TRUSTED_PROXIES"})
	fs.StringSliceVar(&o.resources, "resource", nil, "an API (absolute https URL, as its clients name it) whose tokens may be bound to it with RFC 8707's resource parameter; its tokens' aud is that URL (repeatable; comma-separated in the variable); default none: resource is refused with invalid_target")
	_ = fs.SetAnnotation("resource", annEnv, []string{"OAUTHD_RESOURCES"})
	fs.BoolVar(&o.metaPrivate, "client-metadata-private-networks", false, "let AI assistants' client ID metadata documents be fetched from loopback, private and link-local addresses too (tests, private networks); default off: public internet addresses only, checked on the address connected to")
	fs.DurationVar(&o.metaMinTTL, "client-metadata-min-ttl", issuer.DefaultMetadataMinTTL,
		"the shortest time a fetched client ID metadata document is used before it is fetched again, whatever its Cache-Control says (no-store included)")
	fs.DurationVar(&o.metaMaxTTL, "client-metadata-max-ttl", issuer.DefaultMetadataMaxTTL,
		"the longest time a fetched client ID metadata document is used, whatever its Cache-Control says; so the longest a change to the document takes to be seen")
	fs.IntVar(&o.pwSlots, "password-slots", 0, "password checks (argon2id, 19 MiB each) that run at once; 0: the usable cores")
	fs.StringVar(&o.debugAddr, "debug-addr", "", "serve Go's pprof profiles at http://<addr>/debug/pprof/ (loopback only; default off)")
	o.trace.AddFlags(fs, "oauthd")
}

// check is every rule of serve's settings, run before anything is opened,
// listened on or written: a typo never leaves a new database behind. It
// keeps what it parsed (--trusted-proxy; tracing's on or off) for wire
// and run.
func (o *serveOptions) check() error {
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return fmt.Errorf("--addr %q: %w; use host:port, e.g. 127.0.0.1:8080", o.addr, err)
	}
	for _, f := range []struct{ name, url string }{{"--base-url", o.baseURL}, {"--app-url", o.appURL}} {
		if f.url == "" {
			continue
		}
		if u, ok := httpURL(f.url); !ok || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%s %q: use an http(s) URL without query or fragment, e.g. https://auth.example.com", f.name, f.url)
		}
	}
	if err := o.checkHandover(); err != nil {
		return err
	}
	if err := backend.CheckSessionURL(o.db, o.dbSession); err != nil {
		return err
	}
	if o.codeTTL <= 0 || o.codeTTL > issuer.MaxCodeTTL {
		return fmt.Errorf("--code-ttl %s: use a duration between 1s and %s", o.codeTTL, issuer.MaxCodeTTL)
	}
	if o.refreshIdle <= 0 || o.refreshMax <= 0 {
		return fmt.Errorf("--refresh-idle %s / --refresh-max %s: use positive durations (defaults %s and %s)",
			o.refreshIdle, o.refreshMax, issuer.DefaultRefreshIdle, issuer.DefaultRefreshMax)
	}
	if o.reuseGrace < 0 || o.reuseGrace > issuer.MaxRefreshReuseGrace {
		return fmt.Errorf("--refresh-reuse-grace %s: use a duration between 0 (off) and %s", o.reuseGrace, issuer.MaxRefreshReuseGrace)
	}
	if err := checkDPoPWindow(o.dpopWindow); err != nil {
		return err
	}
	if o.metaMinTTL <= 0 || o.metaMaxTTL < o.metaMinTTL {
		return fmt.Errorf("--client-metadata-min-ttl %s / --client-metadata-max-ttl %s: use positive durations, the maximum not below the minimum (defaults %s and %s)",
			o.metaMinTTL, o.metaMaxTTL, issuer.DefaultMetadataMinTTL, issuer.DefaultMetadataMaxTTL)
	}
	ipx, err := issuer.TrustedProxies(o.proxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxy %w", err)
	}
	o.ipx, o.trusted = ipx, prefixes(o.proxies)
	if err := issuer.CheckResources(o.resources); err != nil {
		return fmt.Errorf("--resource %w", err)
	}
	if o.pwSlots < 0 {
		return fmt.Errorf("--password-slots %d: use 1 or more (0 means the usable cores)", o.pwSlots)
	}
	if err := o.trace.check(); err != nil {
		return err
	}
	if o.debugAddr != "" {
		return checkDebugAddr(o.debugAddr)
	}
	return nil
}

// checkHandover checks the --login-* flags: all three or none.
func (o *serveOptions) checkHandover() error {
	set := 0
	for _, v := range []string{o.loginURL, o.loginIssuer, o.loginJWKS} {
		if v != "" {
			set++
		}
	}
	switch set {
	case 0:
		return nil
	case 3:
	default:
		return errors.New("the login handover needs all of --login-url, --login-issuer and --login-jwks (see docs/LOGIN-HANDOVER.md)")
	}
	if _, ok := httpURL(o.loginURL); !ok {
		return fmt.Errorf("--login-url %q must be an http(s) URL of the platform's login page", o.loginURL)
	}
	if o.loginJWKSMaxAge < time.Second {
		return fmt.Errorf("--login-jwks-max-age %s: use a duration of 1s or more (default %s)", o.loginJWKSMaxAge, handover.DefaultMaxAge)
	}
	return nil
}

// httpURL parses raw as an absolute http or https URL with a host; false
// for anything else. Every URL setting of serve, gateway and tracing is
// checked with it.
func httpURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// checkDPoPWindow checks a --dpop-window (serve's and gateway's).
func checkDPoPWindow(d time.Duration) error {
	if d != 0 && (d < verify.MinDPoPWindow || d > verify.MaxDPoPWindow) {
		return fmt.Errorf("--dpop-window %s: use a duration between %s and %s", d, verify.MinDPoPWindow, verify.MaxDPoPWindow)
	}
	return nil
}

// checkDebugAddr checks that addr is a loopback host:port.
func checkDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--debug-addr %q: use a loopback address such as 127.0.0.1:6060 (profiles must not be public)", addr)
	}
	return nil
}
