package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("GATE_STAGE_BATCH", "lots")
	cases := []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"help"}, 0, "gate-api [serve]"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"serve", "extra"}, 2, "takes no arguments"},
		{nil, 2, "GATE_STAGE_BATCH"},
		{[]string{"serve"}, 2, "GATE_STAGE_BATCH"},
		{[]string{"diff", "g.json"}, 2, "--server is required"},
		{[]string{"apply", "--server", "http://127.0.0.1:1"}, 2, "no files given"},
		{[]string{"help"}, 0, "gate-api apply --server URL"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.mention) {
			t.Errorf("run(%q) = %d, output %q %q; want %d mentioning %q", c.args, code, out.String(), errOut.String(), c.code, c.mention)
		}
	}
}
