package main

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"oauthd/cmd/internal/wiring"
	"oauthd/keys/verify"
)

// feedOptions are the gateway's flags for the issuer's revoked-grants feed.
type feedOptions struct {
	enabled  bool
	url      string
	interval time.Duration
	maxStale time.Duration
}

// AddFlags registers the flags.
func (o *feedOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "revocation-feed", true,
		"follow the issuer's revoked-grants feed and refuse tokens of revoked grants")
	fs.StringVar(&o.url, "revocation-feed-url", "",
		"the feed's URL (default ISSUER/.well-known/revoked-grants)")
	fs.DurationVar(&o.interval, "revocation-feed-interval", verify.DefaultFeedInterval,
		"how often to fetch the feed (at least 100ms)")
	fs.DurationVar(&o.maxStale, "revocation-feed-max-stale", 0,
		"refuse every token once the feed has not been fetched for this long (0: keep using the last list)")
}

// check is the feed flags' rules (gatewayOptions.config runs it).
func (o *feedOptions) check() error {
	if !o.enabled {
		return nil
	}
	if o.url != "" {
		if _, ok := wiring.HTTPURL(o.url); !ok {
			return fmt.Errorf("--revocation-feed-url %q must be an absolute http or https URL", o.url)
		}
	}
	if o.interval < verify.MinFeedInterval {
		return fmt.Errorf("--revocation-feed-interval %s is too short (at least %s; turn the feed off with --revocation-feed=false)", o.interval, verify.MinFeedInterval)
	}
	if o.maxStale < 0 {
		return fmt.Errorf("--revocation-feed-max-stale %s must not be negative", o.maxStale)
	}
	return nil
}

// follower returns the feed follower, or nil when the feed is off; o is
// checked.
func (o *feedOptions) follower(issuer string, keySet verify.KeySource, logger *slog.Logger) (*verify.RevocationFeed, error) {
	if !o.enabled {
		return nil, nil
	}
	if o.url == "" {
		o.url = strings.TrimRight(issuer, "/") + verify.FeedPath
	}
	return verify.NewRevocationFeed(verify.FeedConfig{URL: o.url, Issuer: issuer, Keys: keySet,
		Interval: o.interval, MaxStale: o.maxStale, Logger: logger})
}
