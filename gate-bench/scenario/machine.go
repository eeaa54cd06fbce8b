package scenario

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Machine describes where the bench ran: CPU model, cores, memory, OS and
// Go version.
func Machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	mem := ""
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb int64
			if n, _ := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); n == 1 {
				mem = fmt.Sprintf(", %.1f GiB RAM", float64(kb)/(1<<20))
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%s, %d cores%s, %s/%s, %s", model, runtime.NumCPU(), mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
