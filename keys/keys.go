package keys

import (
	"cmp"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"oauthd/data"
	"oauthd/keys/verify"
)

// Sentinel errors. Operations wrap them with what they were doing; test
// them with errors.Is.
var (
	// ErrNoSigningKey: there is no active key to sign with (or no next key
	// to promote).
	ErrNoSigningKey = errors.New("no signing key")
	// ErrUnknownKey: no published key has that kid. It is the same value as
	// [verify.ErrUnknownKey], so a [Manager] is a [verify.KeySource].
	ErrUnknownKey = verify.ErrUnknownKey
	// ErrBadMasterKey: the master key does not open the sealed private
	// keys. Nothing was changed.
	ErrBadMasterKey = errors.New("the master key does not open the signing keys; use the master key they were sealed with")
	// ErrUnsupportedAlg: only ES256, EdDSA and RS256 keys are made and used.
	ErrUnsupportedAlg = errors.New("unsupported signing algorithm; use ES256, EdDSA or RS256")
	// ErrSealed: the stored private keys are sealed and no master key was
	// given.
	ErrSealed = errors.New("signing keys are encrypted; set OAUTHD_MASTER_KEY or --master-key-file")
)

// Defaults of [Config].
const (
	DefaultAlg        = verify.ES256
	DefaultTokenTTL   = 1800 * time.Second
	DefaultLeeway     = 60 * time.Second
	DefaultJWKSMaxAge = 60 * time.Second
	// RunInterval is how often [Manager.Run] prunes and reloads.
	RunInterval = time.Minute
)

// Store is the slice of [data.Store] the key manager uses.
type Store interface {
	ListKeys(ctx context.Context) ([]data.SigningKey, error)
	// UpdateKeys replaces the key set by update(current) in one transaction.
	UpdateKeys(ctx context.Context, update func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error)
}

// Config configures a [Manager].
type Config struct {
	// Store holds the keys. Required.
	Store Store
	// Logger logs lifecycle changes (kids, never key material). Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// MasterKey (32 bytes, see [ParseMasterKey]) seals private keys at rest
	// with AES-256-GCM. Nil: private keys are stored unsealed.
	MasterKey []byte
	// Alg of generated keys: "ES256" (default, P-256), "EdDSA" (Ed25519)
	// or "RS256" (2048-bit).
	Alg string
	// TokenTTL is the access-token lifetime: a retired key stays
	// published for TokenTTL + Leeway. Default 1800s.
	TokenTTL time.Duration
	// Leeway is the verifiers' clock skew allowance. Default 60s.
	Leeway time.Duration
	// JWKSMaxAge is the JWKS Cache-Control max-age. Default 60s: short, so
	// that a revoked key leaves resource servers' caches within a minute.
	JWKSMaxAge time.Duration
}

// Info describes a key, without key material. JSON names per CONTRACT.md
// (oauthd keys list --json).
type Info struct {
	KID         string        `json:"kid"`
	Alg         string        `json:"alg"`
	State       data.KeyState `json:"state"`
	CreatedAt   time.Time     `json:"created_at"`
	ActivatedAt time.Time     `json:"activated_at,omitzero"`
	RetiredAt   time.Time     `json:"retired_at,omitzero"`
}

// MarshalJSON writes a key never activated or not retired with null
// activated_at or retired_at (every --json record names all its fields).
func (i Info) MarshalJSON() ([]byte, error) {
	type fields Info
	at := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return json.Marshal(struct {
		fields
		ActivatedAt *time.Time `json:"activated_at"`
		RetiredAt   *time.Time `json:"retired_at"`
	}{fields(i), at(i.ActivatedAt), at(i.RetiredAt)})
}

func infoOf(k data.SigningKey) Info {
	return Info{KID: k.KID, Alg: k.Alg, State: k.State, CreatedAt: k.CreatedAt, ActivatedAt: k.ActivatedAt, RetiredAt: k.RetiredAt}
}

// Manager manages the signing keys. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	log    *slog.Logger
	sealer *sealer // nil without a master key

	// mu serializes the store writes of this Manager with the snapshot
	// they produce, so a slower writer never installs an older snapshot.
	mu   sync.Mutex
	snap atomic.Pointer[snapshot]
}

var _ verify.KeySource = (*Manager)(nil)

// New loads the keys from cfg.Store. On an empty store it creates an
// active key and a next key. With a master key it seals keys stored
// unsealed; without one, sealed keys give [ErrSealed]; with the wrong one,
// [ErrBadMasterKey] (and the store is left as it was).
func New(ctx context.Context, cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		return nil, errors.New("keys: Config.Store is required")
	}
	if cfg.Alg == "" {
		cfg.Alg = DefaultAlg
	}
	if !supported(cfg.Alg) {
		return nil, fmt.Errorf("keys: alg %q: %w", cfg.Alg, ErrUnsupportedAlg)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = DefaultTokenTTL
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.JWKSMaxAge <= 0 {
		cfg.JWKSMaxAge = DefaultJWKSMaxAge
	}
	m := &Manager{cfg: cfg, log: cfg.Logger}
	if cfg.MasterKey != nil {
		s, err := newSealer(cfg.MasterKey)
		if err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
		m.sealer = s
	}
	if err := m.Reload(ctx); err != nil {
		return nil, err
	}
	if m.sealer == nil {
		m.log.WarnContext(ctx, "signing keys are stored unsealed; configure a master key to encrypt them at rest")
	}
	return m, nil
}

func supported(alg string) bool {
	return alg == verify.ES256 || alg == verify.EdDSA || alg == verify.RS256
}

// Reload re-reads the store (after the CLI changed it) and installs the
// keys it holds. It also repairs what it must: a missing active key
// (promoting next, or making one), a missing next key, and, with a master
// key, private keys stored unsealed.
func (m *Manager) Reload(ctx context.Context) error {
	ks, err := m.cfg.Store.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	if err := m.checkSealed(ks); err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for range 3 {
		needKeys, needSeal := m.needsRepair(ks)
		needSecret := !hasRefreshSecret(ks)
		if needKeys == 0 && !needSeal && !needSecret {
			break
		}
		var secret *data.SigningKey
		if needSecret {
			sk := newRefreshSecret(m.cfg.Now())
			secret = &sk
		}
		var cands []data.SigningKey
		for range needKeys {
			c, err := m.newKey(m.cfg.Alg)
			if err != nil {
				return fmt.Errorf("load signing keys: %w", err)
			}
			cands = append(cands, c)
		}
		now := m.cfg.Now()
		ks, err = m.cfg.Store.UpdateKeys(ctx, func(cur []data.SigningKey) ([]data.SigningKey, error) {
			return m.repair(cur, cands, secret, now)
		})
		if errors.Is(err, errNeedMoreKeys) {
			if ks, err = m.cfg.Store.ListKeys(ctx); err != nil {
				return fmt.Errorf("load signing keys: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("repair signing keys: %w", err)
		}
		if len(cands) > 0 {
			m.log.InfoContext(ctx, "signing keys created", "count", len(cands), "alg", m.cfg.Alg)
		}
	}
	return m.install(ks)
}

// CheckMasterKey fails as [New] would on the key set ks (read from a
// store, perhaps of an older schema) with masterKey (nil: none): with
// [ErrSealed] or [ErrBadMasterKey] unless every sealed private key opens
// with it. It writes nothing: serve calls it before it opens (and perhaps
// upgrades) the database, so that a start refused for its key changes
// nothing.
func CheckMasterKey(ks []data.SigningKey, masterKey []byte) error {
	m := &Manager{}
	if masterKey != nil {
		s, err := newSealer(masterKey)
		if err != nil {
			return fmt.Errorf("keys: %w", err)
		}
		m.sealer = s
	}
	if err := m.checkSealed(ks); err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	return nil
}

// checkSealed fails with ErrSealed or ErrBadMasterKey unless every sealed
// private key in ks opens with the master key.
func (m *Manager) checkSealed(ks []data.SigningKey) error {
	for _, k := range ks {
		if !k.Sealed || len(k.Private) == 0 {
			continue
		}
		if _, err := m.privateOf(k); err != nil {
			return err
		}
	}
	return nil
}

// privateOf returns the private part of k (a signing key's private JWK,
// the refresh-token secret), opened with the master key when sealed:
// ErrSealed without a master key, ErrBadMasterKey with the wrong one.
func (m *Manager) privateOf(k data.SigningKey) ([]byte, error) {
	if !k.Sealed {
		return k.Private, nil
	}
	if m.sealer == nil {
		return nil, ErrSealed
	}
	return m.sealer.open(k.KID, k.Private)
}

// needsRepair says how many keys repair needs and whether some private
// key needs sealing.
func (m *Manager) needsRepair(ks []data.SigningKey) (newKeys int, seal bool) {
	active, next := -1, -1
	for i, k := range ks {
		switch k.State {
		case data.KeyActive:
			active = i
		case data.KeyNext:
			next = i
		}
		if m.sealer != nil && !k.Sealed && len(k.Private) > 0 {
			seal = true
		}
	}
	switch {
	case active < 0 && next < 0:
		newKeys = 2
	case active < 0 || next < 0:
		newKeys = 1
	}
	return newKeys, seal
}

var errNeedMoreKeys = errors.New("key set changed; more new keys needed")

// repair is an UpdateKeys function: it gives the set an active and a next
// key (from cands as needed), the refresh-token secret (secret, when the
// set has none) and seals unsealed private keys.
func (m *Manager) repair(cur, cands []data.SigningKey, secret *data.SigningKey, now time.Time) ([]data.SigningKey, error) {
	out := slices.Clone(cur)
	if !hasRefreshSecret(out) {
		if secret == nil {
			return nil, errNeedMoreKeys
		}
		out = append(out, *secret)
	}
	take := func() (data.SigningKey, bool) {
		if len(cands) == 0 {
			return data.SigningKey{}, false
		}
		c := cands[0]
		cands = cands[1:]
		return c, true
	}
	active, next := indexOf(out, data.KeyActive), indexOf(out, data.KeyNext)
	if active < 0 {
		if next >= 0 {
			out[next].State, out[next].ActivatedAt = data.KeyActive, now
			next = -1
		} else {
			c, ok := take()
			if !ok {
				return nil, errNeedMoreKeys
			}
			c.State, c.ActivatedAt = data.KeyActive, now
			out = append(out, c)
		}
	}
	if next < 0 {
		c, ok := take()
		if !ok {
			return nil, errNeedMoreKeys
		}
		out = append(out, c)
	}
	if m.sealer != nil {
		for i, k := range out {
			if !k.Sealed && len(k.Private) > 0 {
				out[i].Private, out[i].Sealed = m.sealer.seal(k.KID, k.Private), true
			}
		}
	}
	return out, nil
}

func indexOf(ks []data.SigningKey, state data.KeyState) int {
	return slices.IndexFunc(ks, func(k data.SigningKey) bool { return k.State == state })
}

// Sign signs claims with the active key: a compact JWS with header alg,
// kid and typ "at+jwt" (RFC 9068 §2.1). It touches no store and parses no
// JWK.
func (m *Manager) Sign(claims Claims) (string, error) {
	s := m.snap.Load()
	if s == nil || s.active == nil {
		return "", ErrNoSigningKey
	}
	return s.active.sign(claims)
}

// Key implements [verify.KeySource] over the published keys (next, active
// and retired): a revoked or pruned key is unknown.
func (m *Manager) Key(ctx context.Context, kid string) (crypto.PublicKey, string, error) {
	if s := m.snap.Load(); s != nil {
		if k, ok := s.pub[kid]; ok {
			return k.Key, k.Alg, nil
		}
	}
	return nil, "", fmt.Errorf("kid %q: %w", truncate(kid, 64), ErrUnknownKey)
}

// List returns the stored keys: next first, then active, then retired
// keys, newest first.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	return List(ctx, m.cfg.Store)
}

// List returns the signing keys store holds (next, active, retired; the
// refresh-token secret is not one), without a [Manager]: it only reads,
// so listing a database that has no keys yet creates none (New would).
func List(ctx context.Context, store interface {
	ListKeys(ctx context.Context) ([]data.SigningKey, error)
}) ([]Info, error) {
	ks, err := store.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list signing keys: %w", err)
	}
	ks = signingKeys(ks)
	sortKeys(ks)
	out := make([]Info, len(ks))
	for i, k := range ks {
		out[i] = infoOf(k)
	}
	return out, nil
}

func stateRank(s data.KeyState) int {
	switch s {
	case data.KeyNext:
		return 0
	case data.KeyActive:
		return 1
	default:
		return 2
	}
}

// sortKeys orders ks next, active, retired (newest retirement first).
func sortKeys(ks []data.SigningKey) {
	slices.SortStableFunc(ks, func(a, b data.SigningKey) int {
		if c := cmp.Compare(stateRank(a.State), stateRank(b.State)); c != 0 {
			return c
		}
		if c := b.RetiredAt.Compare(a.RetiredAt); c != 0 {
			return c
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
