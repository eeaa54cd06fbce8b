package scenario

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	// A command name with spaces and a ')' must not shift the fields.
	line := "4242 (gate relay) x) S 1 4242 4242 0 -1 4194560 120 0 0 0 731 269 0 0 20 0 18 0 1234 0 0"
	d, ok := parseStatCPU(line)
	if !ok || d != (731+269)*clockTick {
		t.Fatalf("parseStatCPU = %v, %v; want %v", d, ok, (731+269)*clockTick)
	}
	for _, bad := range []string{"", "12 (x) S 1 2", "12 (x) S 1 2 3 4 5 6 7 8 9 u s"} {
		if _, ok := parseStatCPU(bad); ok {
			t.Errorf("parseStatCPU(%q) accepted a line without two tick counts", bad)
		}
	}
}

// This process's own CPU, read the way the bench reads the relay's, grows
// while it spins (up to 5 s of wall time, however loaded the machine).
func TestProcCPUSeesWork(t *testing.T) {
	before, ok := procCPU(os.Getpid())
	if !ok {
		t.Skip("no /proc here: the overhead table then prints - for CPU per item")
	}
	deadline := time.Now().Add(5 * time.Second)
	for x := 0; time.Now().Before(deadline); x++ {
		if x%100000 == 0 {
			if now, _ := procCPU(os.Getpid()); now-before >= 3*clockTick {
				return
			}
		}
	}
	after, _ := procCPU(os.Getpid())
	t.Fatalf("CPU grew by %v over 5 s of spinning", after-before)
}

func TestParseMachineCPUCountsIdleAndIowaitAsNotBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	busy, total, ok := parseMachineCPU("cpu  100 5 50 800 20 3 2 10 40 0")
	if !ok || busy != (100+5+50+3+2+10)*clockTick || total != (100+5+50+800+20+3+2+10)*clockTick {
		t.Fatalf("parseMachineCPU = %v, %v, %v", busy, total, ok)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4", "cpu 1 2 x 4", "cpu 1 2", "intr 5 6 7 8 9"} {
		if _, _, ok := parseMachineCPU(bad); ok {
			t.Fatalf("parseMachineCPU(%q) read a line it should refuse", bad)
		}
	}
}
