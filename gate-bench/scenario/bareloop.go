package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/queen-mq/gate/gate-bench/peer"
	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/queen"
)

// BareLoopCommand is the hidden first argument that makes gate-bench run
// one bare relay loop in its own process (see RunBareLoop). The overhead
// scenario starts it so that the loop Gate is compared with lives in a
// process of its own, as gate-relay does: same runtime, its own heap and
// garbage collector, nothing else of the bench's in the way.
const BareLoopCommand = "bare-loop"

// bareJob is what one bare-loop child does; its flags are the fields.
type bareJob struct {
	QueenURL, Source, Group, Dest string
	Workers, Batch, Total         int
	Deadline                      time.Duration
	// StampGraph, when set, makes the loop add a `_gate` stamp of Gate's
	// shape (this graph, path main, hop 1, node n) to every payload.
	StampGraph string
	// Riders makes the loop also charge every transaction the way
	// gate-relay's rider path does (peer.Job.RiderKey).
	Riders bool
	// AckLast settles each claim with one ack of its last message, as
	// gate-relay does (peer.Job.AckLast).
	AckLast bool
}

// bareResult is the child's one line of JSON on stdout.
type bareResult struct {
	Moved   int `json:"moved"`
	Commits int `json:"commits"`
}

func (j bareJob) args() []string {
	return []string{BareLoopCommand, "--queen", j.QueenURL, "--source", j.Source, "--group", j.Group, "--dest", j.Dest,
		"--workers", strconv.Itoa(j.Workers), "--batch", strconv.Itoa(j.Batch), "--total", strconv.Itoa(j.Total),
		"--deadline", j.Deadline.String(), "--stamp-graph", j.StampGraph, "--riders=" + strconv.FormatBool(j.Riders),
		"--ack-last=" + strconv.FormatBool(j.AckLast)}
}

func parseBareJob(args []string) (bareJob, error) {
	var j bareJob
	fs := flag.NewFlagSet(BareLoopCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&j.QueenURL, "queen", "", "broker URL")
	fs.StringVar(&j.Source, "source", "", "queue to pop")
	fs.StringVar(&j.Group, "group", "", "consumer group")
	fs.StringVar(&j.Dest, "dest", "", "queue to push to")
	fs.IntVar(&j.Workers, "workers", 16, "workers")
	fs.IntVar(&j.Batch, "batch", 200, "batch")
	fs.IntVar(&j.Total, "total", 0, "items to move")
	fs.DurationVar(&j.Deadline, "deadline", 2*time.Minute, "bound of the run")
	fs.StringVar(&j.StampGraph, "stamp-graph", "", "stamp every payload as this graph's relay would")
	fs.BoolVar(&j.Riders, "riders", false, "charge every transaction with gate-relay's kv riders")
	fs.BoolVar(&j.AckLast, "ack-last", false, "settle each claim with one ack of its last message, as gate-relay does")
	if err := fs.Parse(args); err != nil {
		return j, fmt.Errorf("%w: %s: %v", ErrUsage, BareLoopCommand, err)
	}
	switch {
	case j.QueenURL == "" || j.Source == "" || j.Group == "" || j.Dest == "":
		return j, fmt.Errorf("%w: %s needs --queen, --source, --group and --dest", ErrUsage, BareLoopCommand)
	case j.Workers < 1 || j.Batch < 1 || j.Total < 1:
		return j, fmt.Errorf("%w: %s needs --workers, --batch and --total of at least 1", ErrUsage, BareLoopCommand)
	case j.Deadline <= 0:
		return j, fmt.Errorf("%w: %s --deadline must be positive, e.g. 2m", ErrUsage, BareLoopCommand)
	}
	return j, nil
}

// RunBareLoop is the bare-loop child: pop Batch under a lease, settle each
// claim with one transaction (an ack and a push per item), no budget and
// no stamp unless --stamp-graph asks for one, until Total items moved; then
// print one bareResult line.
func RunBareLoop(ctx context.Context, args []string, out io.Writer) error {
	j, err := parseBareJob(args)
	if err != nil {
		return err
	}
	c, err := queen.New(j.QueenURL)
	if err != nil {
		return fmt.Errorf("%s: %w", BareLoopCommand, err)
	}
	job := peer.Job{Client: c, Source: j.Source, Group: j.Group, Dest: j.Dest, Workers: j.Workers, Batch: j.Batch,
		Total: j.Total, Deadline: j.Deadline, NoStamps: true, AckLast: j.AckLast}
	if j.StampGraph != "" {
		job.GateStamp = cost.GateStamp{Graph: j.StampGraph, Path: "main", Hop: 1, Node: "n"}
	}
	if j.Riders {
		job.RiderKey = "bench:riders:" + j.Dest
	}
	res, err := job.Run(ctx)
	if werr := json.NewEncoder(out).Encode(bareResult{Moved: res.Moved, Commits: res.Commits}); werr != nil && err == nil {
		err = werr
	}
	return err
}

// runBareChild runs job in a child gate-bench process and returns what it
// printed and the CPU (user + system) the child used.
func runBareChild(ctx context.Context, j bareJob) (bareResult, time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return bareResult{}, 0, fmt.Errorf("finding gate-bench's own executable for the bare loop: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, j.args()...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var res bareResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		return res, cpu, errors.Join(fmt.Errorf("the bare-loop child printed no result (%q): %w", stderr.String(), err), runErr)
	}
	if runErr != nil {
		return res, cpu, fmt.Errorf("the bare-loop child: %w (%s)", runErr, bytes.TrimSpace(stderr.Bytes()))
	}
	return res, cpu, nil
}
