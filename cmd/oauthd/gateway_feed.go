package main

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"oauthd/keys/verify"
)

// feedOptions are the gateway's flags for the issuer's revoked-grants feed.
type feedOptions struct {
	enabled  bool
	url      string
	interval time.Duration
	maxStale time.Duration
}

// AddFlags registers the flags; env reads OAUTHD_GATEWAY_<name>.
func (o *feedOptions) AddFlags(fs *pflag.FlagSet, env func(name, def string) string) {
	fs.BoolVar(&o.enabled, "revocation-feed", env("REVOCATION_FEED", "true") != "false",
		"follow the issuer's revoked-grants feed and refuse tokens of revoked grants (env OAUTHD_GATEWAY_REVOCATION_FEED)")
	fs.StringVar(&o.url, "revocation-feed-url", env("REVOCATION_FEED_URL", ""),
		"the feed's URL (default ISSUER/.well-known/revoked-grants; env OAUTHD_GATEWAY_REVOCATION_FEED_URL)")
	fs.DurationVar(&o.interval, "revocation-feed-interval", envDuration("OAUTHD_GATEWAY_REVOCATION_FEED_INTERVAL", verify.DefaultFeedInterval),
		"how often to fetch the feed (env OAUTHD_GATEWAY_REVOCATION_FEED_INTERVAL)")
	fs.DurationVar(&o.maxStale, "revocation-feed-max-stale", envDuration("OAUTHD_GATEWAY_REVOCATION_FEED_MAX_STALE", 0),
		"refuse every token once the feed has not been fetched for this long (0: keep using the last list; env OAUTHD_GATEWAY_REVOCATION_FEED_MAX_STALE)")
}

// follower returns the feed follower, or nil when the feed is off.
func (o *feedOptions) follower(issuer string, keySet verify.KeySource, logger *slog.Logger) (*verify.RevocationFeed, error) {
	if !o.enabled {
		return nil, nil
	}
	if o.url == "" {
		o.url = strings.TrimRight(issuer, "/") + verify.FeedPath
	} else if u, err := url.Parse(o.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--revocation-feed-url %q must be an absolute http or https URL", o.url)
	}
	if o.interval < 100*time.Millisecond {
		return nil, fmt.Errorf("--revocation-feed-interval %s is too short (at least 100ms; turn the feed off with --revocation-feed=false)", o.interval)
	}
	if o.maxStale < 0 {
		return nil, fmt.Errorf("--revocation-feed-max-stale must not be negative")
	}
	return verify.NewRevocationFeed(verify.FeedConfig{URL: o.url, Issuer: issuer, Keys: keySet,
		Interval: o.interval, MaxStale: o.maxStale, Logger: logger})
}
