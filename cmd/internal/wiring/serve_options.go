package wiring

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

// ServeOptions are the flags of `oauthd serve`.
type ServeOptions struct {
	Addr          string
	BaseURL       string
	AppURL        string
	Demo          bool
	CodeTTL       time.Duration
	RefreshIdle   time.Duration
	RefreshMax    time.Duration
	ReuseGrace    time.Duration
	DPoPWindow    time.Duration
	DebugAddr     string
	PasswordSlots int
	Proxies       []string
	// Resources are the APIs tokens may be bound to (RFC 8707).
	Resources []string
	// MetaPrivate: client ID metadata documents may be fetched from
	// loopback and private addresses.
	MetaPrivate bool
	// MetaMinTTL, MetaMaxTTL: how long a fetched metadata document is
	// used, whatever its Cache-Control says.
	MetaMinTTL, MetaMaxTTL time.Duration
	// DBSession: a URL for the connection that needs a session (LISTEN)
	// when --db is a transaction pool (docs/POSTGRESQL.md "Behind
	// PgBouncer"); DB is --db (a global flag), set by the caller before Check.
	DBSession, DB string
	// The login handover (docs/LOGIN-HANDOVER.md): all three or none.
	LoginURL, LoginIssuer, LoginJWKS string
	LoginJWKSMaxAge                  time.Duration
	Trace                            Tracing // tracing.go
	// ipx and trusted are --trusted-proxy as Check parsed it, once: how
	// a request's source address is found (issuer.TrustedProxies), and
	// the peers whose traceparent is followed (tracing.go).
	ipx     echo.IPExtractor
	trusted []netip.Prefix

	Now func() time.Time // the clock of the issuer, keys, verifier and pages; nil: time.Now (tests inject one)
	// AdminSocket: the path Wire listens on for the admin socket before
	// it opens the database; "" for none (bench, a shared database).
	AdminSocket string
}

// AddFlags registers the serve flags, each with its default: a constant
// of the package that owns the setting. A new flag is one line here (its
// variable OAUTHD_<NAME> and file key serve.<name> follow from its name,
// docs/CONFIG.md), plus its rule in Check if it has one.
func (o *ServeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "listen address; port 0 picks a free port")
	fs.StringVar(&o.BaseURL, "base-url", "", "public API base URL, the token issuer (default http://<listen address>)")
	fs.StringVar(&o.AppURL, "app-url", "", "public URL of the consent pages (default http://<listen address>)")
	fs.StringVar(&o.LoginURL, "login-url", "", "hand the login to the platform: its login page (needs --login-issuer and --login-jwks; default: the built-in login form)")
	fs.StringVar(&o.LoginIssuer, "login-issuer", "", "the iss of the platform's login assertions")
	fs.StringVar(&o.LoginJWKS, "login-jwks", "", "the platform's public keys: a JWKS URL, or a JWKS or PEM file")
	fs.DurationVar(&o.LoginJWKSMaxAge, "login-jwks-max-age", handover.DefaultMaxAge,
		"the longest the platform's keys are used before they are fetched again, so the longest a key the platform removed is still accepted; a shorter Cache-Control max-age of the JWKS is followed")
	fs.StringVar(&o.DBSession, "db-session-url", "", "when --db is a transaction pool (PgBouncer pool_mode=transaction): a postgres:// URL of the same database that keeps a session (straight to PostgreSQL or a session-mode pool), for the change listener's LISTEN")
	fs.BoolVar(&o.Demo, "demo", false, "seed a demo user and an approved demo client and print how to use them")
	fs.DurationVar(&o.CodeTTL, "code-ttl", issuer.DefaultCodeTTL, "authorization code lifetime (at most 10m)")
	fs.DurationVar(&o.RefreshIdle, "refresh-idle", issuer.DefaultRefreshIdle, "refresh token idle lifetime, renewed by each refresh")
	fs.DurationVar(&o.RefreshMax, "refresh-max", issuer.DefaultRefreshMax, "refresh token absolute lifetime from the authorization")
	fs.DurationVar(&o.ReuseGrace, "refresh-reuse-grace", issuer.DefaultRefreshReuseGrace,
		"within this time after a rotation, the previous refresh token may be presented once more (a lost response) and rotates again instead of revoking the grant; 0 disables, at most 5m")
	fs.DurationVar(&o.DPoPWindow, "dpop-window", verify.DefaultDPoPWindow, "how far a DPoP proof's iat may be from the server's clock, either way (RFC 9449 §11.1); between 5s and 10m")
	fs.StringSliceVar(&o.Proxies, "trusted-proxy", nil, "CIDR of a reverse proxy whose X-Forwarded-For is believed (repeatable; comma-separated in the variable); default none: the source address is the TCP peer's")
	_ = fs.SetAnnotation("trusted-proxy", AnnEnv, []string{"OAUTHD_TRUSTED_PROXIES"})
	fs.StringSliceVar(&o.Resources, "resource", nil, "an API (absolute https URL, as its clients name it) whose tokens may be bound to it with RFC 8707's resource parameter; its tokens' aud is that URL (repeatable; comma-separated in the variable); default none: resource is refused with invalid_target")
	_ = fs.SetAnnotation("resource", AnnEnv, []string{"OAUTHD_RESOURCES"})
	fs.BoolVar(&o.MetaPrivate, "client-metadata-private-networks", false, "let AI assistants' client ID metadata documents be fetched from loopback, private and link-local addresses too (tests, private networks); default off: public internet addresses only, checked on the address connected to")
	fs.DurationVar(&o.MetaMinTTL, "client-metadata-min-ttl", issuer.DefaultMetadataMinTTL,
		"the shortest time a fetched client ID metadata document is used before it is fetched again, whatever its Cache-Control says (no-store included)")
	fs.DurationVar(&o.MetaMaxTTL, "client-metadata-max-ttl", issuer.DefaultMetadataMaxTTL,
		"the longest time a fetched client ID metadata document is used, whatever its Cache-Control says; so the longest a change to the document takes to be seen")
	fs.IntVar(&o.PasswordSlots, "password-slots", 0, "password checks (argon2id, 19 MiB each) that run at once; 0: the usable cores")
	fs.StringVar(&o.DebugAddr, "debug-addr", "", "serve Go's pprof profiles at http://<addr>/debug/pprof/ (loopback only; default off)")
	o.Trace.AddFlags(fs, "oauthd")
}

// Check is every rule of serve's settings, run before anything is opened,
// listened on or written: a typo never leaves a new database behind. It
// keeps what it parsed (--trusted-proxy; tracing's on or off) for Wire
// and serve.
func (o *ServeOptions) Check() error {
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return fmt.Errorf("--addr %q: %w; use host:port, e.g. 127.0.0.1:8080", o.Addr, err)
	}
	for _, f := range []struct{ name, url string }{{"--base-url", o.BaseURL}, {"--app-url", o.AppURL}} {
		if f.url == "" {
			continue
		}
		if u, ok := HTTPURL(f.url); !ok || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%s %q: use an http(s) URL without query or fragment, e.g. https://auth.example.com", f.name, f.url)
		}
	}
	if err := o.checkHandover(); err != nil {
		return err
	}
	if err := backend.CheckSessionURL(o.DB, o.DBSession); err != nil {
		return err
	}
	if o.CodeTTL <= 0 || o.CodeTTL > issuer.MaxCodeTTL {
		return fmt.Errorf("--code-ttl %s: use a duration between 1s and %s", o.CodeTTL, issuer.MaxCodeTTL)
	}
	if o.RefreshIdle <= 0 || o.RefreshMax <= 0 {
		return fmt.Errorf("--refresh-idle %s / --refresh-max %s: use positive durations (defaults %s and %s)",
			o.RefreshIdle, o.RefreshMax, issuer.DefaultRefreshIdle, issuer.DefaultRefreshMax)
	}
	if o.ReuseGrace < 0 || o.ReuseGrace > issuer.MaxRefreshReuseGrace {
		return fmt.Errorf("--refresh-reuse-grace %s: use a duration between 0 (off) and %s", o.ReuseGrace, issuer.MaxRefreshReuseGrace)
	}
	if err := CheckDPoPWindow(o.DPoPWindow); err != nil {
		return err
	}
	if o.MetaMinTTL <= 0 || o.MetaMaxTTL < o.MetaMinTTL {
		return fmt.Errorf("--client-metadata-min-ttl %s / --client-metadata-max-ttl %s: use positive durations, the maximum not below the minimum (defaults %s and %s)",
			o.MetaMinTTL, o.MetaMaxTTL, issuer.DefaultMetadataMinTTL, issuer.DefaultMetadataMaxTTL)
	}
	ipx, err := issuer.TrustedProxies(o.Proxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxy %w", err)
	}
	o.ipx, o.trusted = ipx, prefixes(o.Proxies)
	if err := issuer.CheckResources(o.Resources); err != nil {
		return fmt.Errorf("--resource %w", err)
	}
	if o.PasswordSlots < 0 {
		return fmt.Errorf("--password-slots %d: use 1 or more (0 means the usable cores)", o.PasswordSlots)
	}
	if err := o.Trace.Check(); err != nil {
		return err
	}
	if o.DebugAddr != "" {
		return CheckDebugAddr(o.DebugAddr)
	}
	return nil
}

// checkHandover checks the --login-* flags: all three or none.
func (o *ServeOptions) checkHandover() error {
	set := 0
	for _, v := range []string{o.LoginURL, o.LoginIssuer, o.LoginJWKS} {
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
	if _, ok := HTTPURL(o.LoginURL); !ok {
		return fmt.Errorf("--login-url %q must be an http(s) URL of the platform's login page", o.LoginURL)
	}
	if o.LoginJWKSMaxAge < time.Second {
		return fmt.Errorf("--login-jwks-max-age %s: use a duration of 1s or more (default %s)", o.LoginJWKSMaxAge, handover.DefaultMaxAge)
	}
	return nil
}

// HTTPURL parses raw as an absolute http or https URL with a host; false
// for anything else. Every URL setting of serve, gateway and tracing is
// checked with it.
func HTTPURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// CheckDPoPWindow checks a --dpop-window (serve's and gateway's).
func CheckDPoPWindow(d time.Duration) error {
	if d != 0 && (d < verify.MinDPoPWindow || d > verify.MaxDPoPWindow) {
		return fmt.Errorf("--dpop-window %s: use a duration between %s and %s", d, verify.MinDPoPWindow, verify.MaxDPoPWindow)
	}
	return nil
}

// CheckDebugAddr checks that addr is a loopback host:port.
func CheckDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--debug-addr %q: use a loopback address such as 127.0.0.1:6060 (profiles must not be public)", addr)
	}
	return nil
}

// DefaultServeOptions are serve's options when no flag, variable or file
// sets them (oauthd-bench's in-process server runs with them), not yet
// checked.
func DefaultServeOptions() ServeOptions {
	var o ServeOptions
	o.AddFlags(pflag.NewFlagSet("serve", pflag.ContinueOnError))
	return o
}

// Trusted is the --trusted-proxy networks as Check parsed them.
func (o *ServeOptions) Trusted() []netip.Prefix { return o.trusted }
