package load

import (
	"encoding/json"
	"fmt"
	"os"
)

// Dump is a run's raw material: the declared numbers and everything the run
// saw. Judge(d.Observation, d.Params) reproduces the run's verdict, so a
// failing run written with GATE_E2E_DUMP becomes a unit test's input.
type Dump struct {
	Params      Params      `json:"params"`
	Observation Observation `json:"observation"`
}

// WriteDump writes d to path as JSON.
func WriteDump(path string, d Dump) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encoding the observation: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the observation to %s: %w", path, err)
	}
	return nil
}

// ReadDump reads a dump WriteDump wrote.
func ReadDump(path string) (Dump, error) {
	var d Dump
	b, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("decoding %s: %w", path, err)
	}
	return d, nil
}
