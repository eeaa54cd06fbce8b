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
