package load

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws a bar on a terminal and plain lines elsewhere.
type progress struct {
	cfg   Config
	bar   *progressbar.ProgressBar
	start time.Time
	n     int
}

func newProgress(cfg Config, total int) *progress {
	p := &progress{cfg: cfg, start: time.Now()}
	if cfg.Progress {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(cfg.Log),
			progressbar.OptionSetDescription("pushing"), progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return p
}

func (p *progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// phase switches to a time-based bar of seconds.
func (p *progress) phase(name string, seconds int) {
	p.start = time.Now()
	p.n = 0
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = progressbar.NewOptions(seconds, progressbar.OptionSetWriter(p.cfg.Log),
			progressbar.OptionSetDescription(name), progressbar.OptionClearOnFinish())
	}
}

func (p *progress) tick(admitted, drained, counter int64) {
	p.n++
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("sampling: admitted %d, counter %d", admitted, counter))
		_ = p.bar.Add(1)
		return
	}
	writeLine(p.cfg.Log, "gate-e2e: t+%2ds admitted %d drained %d counter %d\n", p.n, admitted, drained, counter)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

func writeLine(w io.Writer, format string, a ...any) { fmt.Fprintf(w, format, a...) }
