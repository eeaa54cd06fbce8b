package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/plan"
)

func TestBareJobArgsRoundTrip(t *testing.T) {
	j := bareJob{QueenURL: "http://127.0.0.1:6632", Source: "s", Group: "g", Dest: "d", Workers: 16, Batch: 200, Total: 1000, Deadline: 90 * time.Second, StampGraph: "bench-ovh-stamp0-1", Riders: true}
	args := j.args()
	if args[0] != BareLoopCommand {
		t.Fatalf("args start with %q, want the hidden command %q", args[0], BareLoopCommand)
	}
	got, err := parseBareJob(args[1:])
	if err != nil {
		t.Fatal(err)
	}
	if got != j {
		t.Fatalf("round trip: got %+v, want %+v", got, j)
	}
}

func TestBareJobRefusesIncompleteArgs(t *testing.T) {
	ok := bareJob{QueenURL: "http://q", Source: "s", Group: "g", Dest: "d", Workers: 1, Batch: 1, Total: 1, Deadline: time.Second}.args()[1:]
	for name, tc := range map[string]struct {
		drop, want string
		set        [2]string
	}{
		"no source":    {drop: "--source", want: "--source"},
		"zero total":   {set: [2]string{"--total", "0"}, want: "--total"},
		"bad deadline": {set: [2]string{"--deadline", "soon"}, want: "deadline"},
		"unknown flag": {set: [2]string{"--nope", "1"}, want: "nope"},
		"zero workers": {set: [2]string{"--workers", "0"}, want: "--workers"},
		"neg deadline": {set: [2]string{"--deadline", "-1s"}, want: "--deadline"},
	} {
		t.Run(name, func(t *testing.T) {
			args := slices.Clone(ok)
			if tc.drop != "" {
				i := slices.Index(args, tc.drop)
				args = slices.Delete(args, i, i+2)
			}
			if tc.set[0] != "" {
				if i := slices.Index(args, tc.set[0]); i >= 0 {
					args[i+1] = tc.set[1]
				} else {
					args = append(args, tc.set[0], tc.set[1])
				}
			}
			_, err := parseBareJob(args)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseBareJob(%q) = %v, want a usage error naming %s", args, err, tc.want)
			}
		})
	}
}

// The overhead runners must move the same bytes apart from what Gate adds:
// every runner's queue names, consumer group and stamp graph have the
// lengths gate-relay's have.
func TestOverheadRunnersUseNamesOfOneLength(t *testing.T) {
	b := &Bench{cfg: Config{App: "bench"}, runID: "42961"}
	gate := b.overheadGraph("riders", 2)
	ingress, group := plan.IngressQueue("bench", gate, "n"), plan.Group("bench", gate, "main", "n")
	runners := []string{"separate"}
	for r := range bareRunners {
		runners = append(runners, r)
	}
	for _, runner := range runners {
		g := b.overheadGraph(runner, 2)
		if g == gate || len(g) != len(gate) {
			t.Errorf("%s: graph %q, want a name of its own as long as %q", runner, g, gate)
		}
		if len(b.egressQueue(g, "")) != len(b.egressQueue(gate, "")) {
			t.Errorf("%s: egress %q is not as long as %q", runner, b.egressQueue(g, ""), b.egressQueue(gate, ""))
		}
	}
	src, bareGroup := b.bareNames(b.overheadGraph("bare", 2))
	if len(src) != len(ingress) || len(bareGroup) != len(group) {
		t.Errorf("bare loop: source %q and group %q, want the lengths of %q and %q", src, bareGroup, ingress, group)
	}
	if _, _, _, _, owned := plan.GateOwnedQueue(src); owned {
		t.Errorf("bare loop: source %q parses as a Gate-owned queue; a relay could claim it", src)
	}
}

// Every bare-loop row runs a runner the bench knows how to start, and
// every bare-loop runner but the plain loop prints a row.
func TestEveryBareRowHasItsRunner(t *testing.T) {
	rows := map[string]bool{}
	for _, x := range bareRows {
		if _, ok := bareRunners[x.runner]; !ok {
			t.Errorf("row %q runs %q, which bareRunners does not describe", x.label, x.runner)
		}
		rows[x.runner] = true
	}
	for r := range bareRunners {
		if r != "bare" && !rows[r] {
			t.Errorf("runner %q runs but prints no row", r)
		}
	}
}
