package memory_test

import (
	"testing"

	"oauthd/data"
	"oauthd/data/datatest"
	"oauthd/data/memory"
)

func TestStore(t *testing.T) {
	datatest.RunStoreTests(t, func(*testing.T) data.Store { return memory.New() })
}
