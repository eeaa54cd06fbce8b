package shadowlimits_test

import (
	"testing"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

func TestMain(m *testing.M) { apitest.VerifyTestMain(m) }
