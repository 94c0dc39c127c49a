package datatest

import (
	"testing"
	"time"

	"oauthd/data"
)

// t0 is the suite's fixed clock. Storage never reads the clock; tests pass
// times explicitly.
var t0 = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)

// RunStoreTests runs the conformance suite. newStore returns a fresh, empty
// store for each subtest; the suite closes it (Close may be called twice).
func RunStoreTests(t *testing.T, newStore func(t *testing.T) data.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s data.Store)
	}{
		{"Users", testUsers},
		{"CreateUsersAllOrNothing", testCreateUsers},
		{"UpdateUser", testUpdateUser},
		{"CanonicalIdentifiers", testCanonicalIdentifiers},
		{"DisableUserRevokes", testDisableUser},
		{"Nonces", testNonces},
		{"Clients", testClients},
		{"AgentHosts", testAgentHosts},
		{"ClientRulesAtCreate", testClientRulesAtCreate},
		{"ClientRulesAtUpdate", testClientRulesAtUpdate},
		{"ClientStatusTransitions", testClientStatusTransitions},
		{"ClientUpdateErrorWritesNothing", testClientUpdateErrorWritesNothing},
		{"ClientSecretsConcurrent", testClientSecretsConcurrent},
		{"AuthCodeSingleUse", testAuthCodeSingleUse},
		{"AuthCodeExchangeErrorWritesNothing", testAuthCodeExchangeError},
		{"AuthCodeConcurrentExchange", testAuthCodeConcurrent},
		{"RotateRefreshToken", testRotate},
		{"RotateReuseRevokesFamily", testRotateReuse},
		{"RotateUpdateErrorWritesNothing", testRotateUpdateError},
		{"RotateConcurrent", testRotateConcurrent},
		{"RotateUpdateDecidesReuse", testRotateUpdateDecidesReuse},
		{"RotateKeepsGraceFields", testRotateGraceFields},
		{"RotateCannotChangeIDs", testRotateCannotChangeIDs},
		{"Families", testFamilies},
		{"RevocationTombstones", testRevocations},
		{"Grants", testGrants},
		{"UserFamilies", testUserFamilies},
		{"RevokeApp", testRevokeApp},
		{"RevokeAppRace", testRevokeAppRace},
		{"ConsentedCode", testConsentedCode},
		{"ClientReview", testClientReview},
		{"ConsentedCodeRace", testConsentedCodeRace},
		{"Sessions", testSessions},
		{"Keys", testKeys},
		{"KeysConcurrentPromote", testKeysConcurrent},
		{"NoncesOnce", testNoncesOnce},
		{"NoncesConcurrent", testNoncesConcurrent},
		{"DeviceCodes", testDeviceCodes},
		{"DeviceCodeCap", testDeviceCodeCap},
		{"DeviceCodeCapConcurrent", testDeviceCodeCapConcurrent},
		{"DevicePollRace", testDevicePollRace},
		{"DeviceCodeGC", testDeviceCodeGC},
		{"GarbageCollect", testGC},
		{"GarbageCollectAfterRotation", testGCAfterRotation},
		{"TimesRoundTripInUTC", testUTC},
		{"RecordsRoundTripNormalized", testNormalized},
		{"EmptySlicesRoundTripNormalized", testEmptySlices},
		{"OIDCFields", testOIDCFields},
		{"CopiesAreIndependent", testCopies},
		{"CancelledContext", testCancelled},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { s.Close() })
			tc.run(t, s)
		})
	}
}
