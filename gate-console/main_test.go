package main

import (
	"strings"
	"testing"
)

func TestBootRefusalExits2WithOneLinePerProblem(t *testing.T) {
	var out strings.Builder
	env := map[string]string{"GATE_DEV_EMAIL": "dev@example.com", "GATE_PUBLIC_URL": "https://gate.example.com"}
	code := run(nil, func(k string) string { return env[k] }, &out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if code != 2 || len(lines) != 2 || !strings.Contains(lines[1], "GATE_DEV_EMAIL") || !strings.Contains(lines[1], "https") {
		t.Fatalf("exit %d, stderr:\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"serve"}, func(string) string { return "" }, &out); code != 2 || !strings.Contains(out.String(), "no arguments") {
		t.Fatalf("an argument: exit %d %s", code, out.String())
	}
}
