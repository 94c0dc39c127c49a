package issuer

import "testing"

// TestNewKeepsItsDefaults: the Config a Server keeps (Server.cfg) is the
// one its parts were built from, with every default filled in. The bounds
// of a metadata document's cache lifetime were once defaulted after the
// Server had copied cfg, so that Server.cfg held zeros where the cache
// held the defaults.
func TestNewKeepsItsDefaults(t *testing.T) {
	env := newAuthzEnv(t)
	cfg := env.s.cfg
	if got, want := cfg.MetadataMinTTL, DefaultMetadataMinTTL; got != want {
		t.Errorf("Server.cfg.MetadataMinTTL = %v; want %v", got, want)
	}
	if got, want := cfg.MetadataMaxTTL, DefaultMetadataMaxTTL; got != want {
		t.Errorf("Server.cfg.MetadataMaxTTL = %v; want %v", got, want)
	}
	if env.s.meta.min != cfg.MetadataMinTTL || env.s.meta.max != cfg.MetadataMaxTTL {
		t.Errorf("metadata cache bounds [%v, %v]; Server.cfg says [%v, %v]", env.s.meta.min, env.s.meta.max, cfg.MetadataMinTTL, cfg.MetadataMaxTTL)
	}
	if got, want := cfg.DeviceCodeMax, DefaultDeviceCodeMax; got != want {
		t.Errorf("Server.cfg.DeviceCodeMax = %d; want %d", got, want)
	}
}
