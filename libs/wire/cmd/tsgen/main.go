// Command tsgen writes the web app's TypeScript types from package wire:
//
//	go run ./libs/wire/cmd/tsgen            # writes gate-console/ui/src/wire.gen.ts
//	go run ./libs/wire/cmd/tsgen -o FILE    # elsewhere, "-" for stdout
//
// Run it from the repository root after changing a type in libs/wire; a
// test in libs/wire fails while the committed file is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/queen-mq/gate/libs/wire/internal/tsgen"
)

// DefaultOut is the generated file, relative to the repository root.
const DefaultOut = "gate-console/ui/src/wire.gen.ts"

func main() {
	src := flag.String("src", "libs/wire", "the wire package's directory")
	out := flag.String("o", DefaultOut, "the TypeScript file to write (- for stdout)")
	flag.Parse()
	b, err := tsgen.Generate(*src)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tsgen: %v\n", err)
		os.Exit(1)
	}
	if *out == "-" {
		_, _ = os.Stdout.Write(b)
		return
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "tsgen: %v\n", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "tsgen: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("tsgen: wrote %s (%d bytes)\n", *out, len(b))
}
