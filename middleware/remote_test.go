package middleware

import "testing"

// TestRemoteBackend runs the middleware suite again with every cache and
// session store behind a real native-protocol server over TCP.
func TestRemoteBackend(t *testing.T) {
	remoteMode = true
	defer func() { remoteMode = false }()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"HitMissAndAge", TestHitMissAndAge},
		{"ResponseFreshness", TestResponseFreshness},
		{"RequestDirectives", TestRequestDirectives},
		{"UnstorableResponses", TestUnstorableResponses},
		{"Vary", TestVary},
		{"ConditionalRequests", TestConditionalRequests},
		{"StampedeRunsHandlerOnce", TestStampedeRunsHandlerOnce},
		{"StampedeNeverSharesPersonalResponses", TestStampedeNeverSharesPersonalResponses},
		{"StampedeRespectsVary", TestStampedeRespectsVary},
		{"EvictByTag", TestEvictByTag},
		{"LargeResponses", TestLargeResponses},
		{"SessionDependentResponsesNotCached", TestSessionDependentResponsesNotCached},
		{"EchoResponseCache", TestEchoResponseCache},
		{"SessionsCounter", TestSessionsCounter},
		{"SessionsLazyAndRefresh", TestSessionsLazyAndRefresh},
		{"SessionsCookieBeforeBody", TestSessionsCookieBeforeBody},
		{"SessionsTamperedCookie", TestSessionsTamperedCookie},
		{"SessionsGorillaStyle", TestSessionsGorillaStyle},
		{"EchoSessions", TestEchoSessions},
	} {
		t.Run(tc.name, tc.test)
	}
}
