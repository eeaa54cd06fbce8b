package jsonkit

import (
	"bytes"
	"testing"
)

// runOracle is Run one byte at a time.
func runOracle(b []byte, i int) int {
	for ; i < len(b); i++ {
		if !Plain(b[i]) {
			return i
		}
	}
	return len(b)
}

func TestPlainIsTheJSONRule(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' || c == 0x7f
		if got := Plain(byte(c)); got != want {
			t.Errorf("Plain(%#x) = %v, want %v", c, got, want)
		}
	}
}

// Every byte value at every position of a word, after every start, with a
// second non-plain byte after it (the borrow it causes must not hide the
// first): Run finds the first, for both the []byte and the string form.
func TestRunFindsTheFirstNonPlainByte(t *testing.T) {
	for size := 0; size <= 24; size++ {
		for pos := 0; pos < size; pos++ {
			for c := 0; c < 256; c++ {
				b := bytes.Repeat([]byte{'a'}, size)
				b[pos] = byte(c)
				if pos+1 < size {
					b[pos+1] = 0x00
				}
				for start := 0; start <= size; start++ {
					want := runOracle(b, start)
					if got := Run(b, start); got != want {
						t.Fatalf("Run(%q, %d) = %d, want %d", b, start, got, want)
					}
					if got := Run(string(b), start); got != want {
						t.Fatalf("Run(string %q, %d) = %d, want %d", b, start, got, want)
					}
				}
			}
		}
	}
}

func FuzzRun(f *testing.F) {
	f.Add([]byte(`"0198f0aa-0000-7000-8000-000000000001","x\"y\\z"`), 1)
	f.Add([]byte("caf\xc3\xa9 \x01\x7f\x80\xff"), 0)
	f.Fuzz(func(t *testing.T, b []byte, start int) {
		if start < 0 || start > len(b) {
			return
		}
		if got, want := Run(b, start), runOracle(b, start); got != want {
			t.Fatalf("Run(%q, %d) = %d, want %d", b, start, got, want)
		}
	})
}

func BenchmarkRun(b *testing.B) {
	id := []byte(`0198f0aa-0000-7000-8000-000000000001"`)
	b.SetBytes(int64(len(id)))
	for b.Loop() {
		if Run(id, 0) != len(id)-1 {
			b.Fatal("wrong end")
		}
	}
}
