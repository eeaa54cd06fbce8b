package conformance

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/gate/libs/capability"
	"github.com/queen-mq/gate/libs/miniqueen"
)

// A test that needs something of the broker runs when the broker has it,
// skips naming what it needs, what the broker answered and the fix when a
// real broker lacks it, and fails when the in-process miniqueen (which has
// everything) or an unanswered probe leaves it unknown.
func TestANeedRunsSkipsOrFails(t *testing.T) {
	t.Parallel()
	lacking := capability.Report{URL: "http://queen:6632", Version: "0.15.1", Checks: []capability.Check{
		{Need: capability.KV, Problem: "POST /api/v1/kv answered HTTP 404 no_such_route", Fix: "run Queen 1.0.4 or newer with its kv store on"},
		{Need: capability.Depth, Present: true},
	}}
	for _, tc := range []struct {
		name      string
		rep       capability.Report
		need      capability.Need
		inProcess bool
		want      needVerdict
		says      []string
	}{
		{"present", lacking, capability.Depth, false, needRun, nil},
		{"a real broker lacks it", lacking, capability.KV, false, needSkip, []string{"kv incr with max", "http://queen:6632", "0.15.1", "no_such_route", "1.0.4"}},
		{"miniqueen lacks it", lacking, capability.KV, true, needFail, []string{"miniqueen lacks", "must have everything"}},
		{"the probe did not finish", capability.Report{URL: "http://queen:6632", Err: errors.New("connection refused")}, capability.KV, false, needFail, []string{"could not finish", "connection refused"}},
	} {
		got, reason := judgeNeed(tc.rep, tc.need, tc.inProcess)
		if got != tc.want {
			t.Errorf("%s: verdict %d (%s), want %d", tc.name, got, reason, tc.want)
		}
		for _, w := range tc.says {
			if !strings.Contains(reason, w) {
				t.Errorf("%s: reason %q does not say %q", tc.name, reason, w)
			}
		}
	}
}

// The suite against a broker without kv and without the depth route (a
// miniqueen switched to Queen 0.15.1's routes, standing in for
// GATE_TEST_QUEEN_URL): every test of kv or the depth route skips with its
// reason, the wire tests that need neither run and pass, and a test with a
// kv side check still tests what it is about.
func TestTheSuiteSkipsWhatABrokerLacks(t *testing.T) {
	t.Parallel()
	old := miniqueen.RunT(t, miniqueen.WithoutKV(), miniqueen.WithoutDepth())
	standIns.Store(t.Name()+"/", old.URL())
	t.Cleanup(func() { standIns.Delete(t.Name() + "/") })
	suite := []struct {
		name string
		f    func(*testing.T)
		skip bool
	}{
		{"kv incr over max", TestSemantic01_IncrOverMaxRefusesWithoutClamping, true},
		{"kv create-only ttl", TestSemantic02_LiveCounterKeepsItsExpiry, true},
		{"riders", TestSemantic7_RequiredIncrRidersCommitWithAppliedSlotsCarryingValues, true},
		{"depth", TestSemantic20_DepthCountsAgainstTheNamedGroupsCursor, true},
		{"expiresAt format", TestSemantic25_ExpiresAtIsRFC3339WithOffsetAndCreatedAtIsUTCZ, true},
		{"push dedup", TestSemantic14_RepeatedTransactionIDOnTheSamePartitionIsADuplicate, false},
		{"exclusive claim", TestSemantic08_LeasedPartitionIsSkippedBySameGroupOnly, false},
		{"cumulative ack with a depth side check", TestSemantic11_AckOfTheLastMessageSettlesTheWholeClaimAndReleasesTheLease, false},
		{"retry hand-back", TestSemantic11_RetryAckInATransactionHandsTheTailBackAtOnce, false},
	}
	var mu sync.Mutex
	skipped, failed := map[string]bool{}, map[string]bool{}
	t.Run("suite", func(g *testing.T) {
		for _, tc := range suite {
			g.Run(tc.name, func(st *testing.T) {
				defer func() {
					mu.Lock()
					skipped[tc.name], failed[tc.name] = st.Skipped(), st.Failed()
					mu.Unlock()
				}()
				tc.f(st)
			})
		}
	})
	for _, tc := range suite {
		if skipped[tc.name] != tc.skip || failed[tc.name] {
			t.Errorf("%s: skipped %v, failed %v; want skipped %v and never failed", tc.name, skipped[tc.name], failed[tc.name], tc.skip)
		}
	}
}

// What the suite's broker has of what Gate needs, said once per run (with
// -v, or when a test skips for it): miniqueen must have everything; a real
// broker's lacks are reported, and the tests that need them skip naming
// them.
func TestTheBrokerSaysWhatItHas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rep := e.capabilities(t)
	if rep.Err != nil {
		t.Fatalf("the capability probe of %s could not finish: %v", rep.URL, rep.Err)
	}
	t.Logf("broker %s, version %q", rep.URL, rep.Version)
	for _, c := range rep.Checks {
		if c.Present {
			t.Logf("  has %s", c.Need.What())
			continue
		}
		t.Logf("  lacks %s: %s (%s); the tests that need it skip", c.Need.What(), c.Problem, c.Fix)
		if !e.real() {
			t.Errorf("miniqueen lacks %s: it must have everything Gate needs", c.Need.What())
		}
	}
}
