// Command gate-probe is the health check of Gate's images, which are
// distroless (no shell, no curl): it GETs each URL and exits 0 when every
// one answers 200. With --wait D it retries for up to D (compose's
// one-shot broker-ready service waits for Queen and NATS this way).
//
//	gate-probe http://127.0.0.1:8788/health
//	gate-probe --wait 180s http://queen:6632/health http://nats:8222/healthz
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	wait := time.Duration(0)
	if len(args) >= 2 && args[0] == "--wait" {
		d, err := time.ParseDuration(args[1])
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "gate-probe: --wait %q is not a positive duration (e.g. 180s)\n", args[1])
			return 2
		}
		wait, args = d, args[2:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: gate-probe [--wait DURATION] URL...")
		return 2
	}
	deadline := time.Now().Add(wait)
	for _, u := range args {
		for {
			err := probe(u)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "gate-probe: %s: %v\n", u, err)
				return 1
			}
			time.Sleep(time.Second)
		}
	}
	return 0
}

func probe(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", res.Status)
	}
	return nil
}
