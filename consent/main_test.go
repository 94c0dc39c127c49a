package consent

import (
	"os"
	"testing"

	"oauthd/consent/consenttest"
)

// TestMain runs the tests and, when the browser tests were skipped for want
// of Chromium, prints one line that says so (consenttest.Main).
func TestMain(m *testing.M) { os.Exit(consenttest.Main(m)) }
