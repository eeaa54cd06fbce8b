package scenario

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's utime and stime: USER_HZ,
// which is 100 on every Linux this bench runs on (the kernel exports that
// value to user space whatever its own HZ).
const clockTick = 10 * time.Millisecond

// procCPU is the user + system CPU time process pid has used so far, read
// from /proc (false where there is none: not Linux, or the process is gone).
func procCPU(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) from one
// /proc/PID/stat line; the command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12].
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || u < 0 || s < 0 {
		return 0, false
	}
	return time.Duration(u+s) * clockTick, true
}

// cpuMeter measures the CPU a set of processes spends between start and
// stop.
type cpuMeter struct {
	pids   []int
	before []time.Duration
	ok     bool
}

func startCPU(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, ok: true}
	for _, p := range pids {
		d, ok := procCPU(p)
		m.ok = m.ok && ok
		m.before = append(m.before, d)
	}
	return m
}

// stop returns the CPU spent by each process since start (ok false when
// any could not be read).
func (m *cpuMeter) stop() ([]time.Duration, bool) {
	out := make([]time.Duration, len(m.pids))
	ok := m.ok
	for i, p := range m.pids {
		d, good := procCPU(p)
		ok = ok && good
		out[i] = d - m.before[i]
	}
	return out, ok
}

// perItem formats d spread over n items in microseconds ("-" when
// unknown).
func perItem(d time.Duration, n int, ok bool) string {
	if !ok || n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(d.Microseconds())/float64(n))
}

// machineCPU is the CPU time all cores have spent busy and in all since
// boot, from the first line of /proc/stat (false where there is none).
func machineCPU() (busy, total time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachineCPU(line)
}

// parseMachineCPU reads the "cpu" line of /proc/stat: user, nice, system,
// idle, iowait, irq, softirq, steal, … in clock ticks. Idle and iowait are
// not busy; guest time is already inside user, so it is not added again.
func parseMachineCPU(line string) (busy, total time.Duration, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	var v [8]int64
	for i := 0; i < len(v) && i+1 < len(f); i++ {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false
		}
		v[i] = n
	}
	idle := v[3] + v[4]
	var all int64
	for _, n := range v {
		all += n
	}
	return time.Duration(all-idle) * clockTick, time.Duration(all) * clockTick, true
}

// loadMeter measures, over one row, how busy the whole machine was and how
// much CPU each named process took.
type loadMeter struct {
	names       []string
	procs       *cpuMeter
	busy, total time.Duration
	ok          bool
	t0          time.Time
}

// namedProc is a process a loadMeter reports by name.
type namedProc struct {
	name string
	pid  int
}

// startLoad starts a loadMeter over procs, in their order (a pid of 0 is
// left out).
func startLoad(procs []namedProc) *loadMeter {
	m := &loadMeter{t0: time.Now()}
	var pids []int
	for _, p := range procs {
		if p.pid > 0 {
			m.names = append(m.names, p.name)
			pids = append(pids, p.pid)
		}
	}
	m.procs = startCPU(pids...)
	m.busy, m.total, m.ok = machineCPU()
	return m
}

// stop formats the row's load: the machine's busy share of all its cores,
// then each process's CPU as a share of one core ("" when unknown).
func (m *loadMeter) stop() string {
	busy, total, ok := machineCPU()
	spent, pok := m.procs.stop()
	wall := time.Since(m.t0)
	if !ok || !m.ok || !pok || total <= m.total || wall <= 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "machine %.0f%% busy", 100*float64(busy-m.busy)/float64(total-m.total))
	for i, n := range m.names {
		fmt.Fprintf(&b, ", %s %.0f%%", n, 100*spent[i].Seconds()/wall.Seconds())
	}
	return b.String()
}
