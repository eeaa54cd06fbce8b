package live

import (
	"strconv"
	"testing"
)

// An episode lasts while its backoff holds: a 429 inside it extends it
// without beginning another; one after it ends begins the next; nodes are
// apart; and the memory stays bounded, forgetting ended episodes first.
func TestHoldEpisodes(t *testing.T) {
	t.Parallel()
	var h holdEpisodes
	if !h.begins("a/g/n", 1_000, 31_000) {
		t.Fatal("the first backoff of a node does not begin an episode")
	}
	if h.begins("a/g/n", 20_000, 50_000) {
		t.Fatal("a 429 while the backoff holds began another episode")
	}
	if h.begins("a/g/n", 40_000, 70_000) {
		t.Fatal("the episode did not last until its extended end (50 s)")
	}
	if !h.begins("a/g/m", 40_000, 70_000) {
		t.Fatal("another node's first backoff does not begin an episode")
	}
	if !h.begins("a/g/n", 70_000, 100_000) {
		t.Fatal("a 429 after the backoff ended does not begin a new episode")
	}
	for i := range maxEpisodes + 10 {
		h.begins("k"+strconv.Itoa(i), 200_000, 201_000)
	}
	if len(h.until) > maxEpisodes {
		t.Fatalf("%d episodes remembered, want at most %d", len(h.until), maxEpisodes)
	}
}
