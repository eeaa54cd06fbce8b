package miniqueen

import (
	"slices"
	"sort"
	"strings"
)

// kvSpace is one kv namespace: its entries by key, and the same keys in
// byte order for prefix listings. A listing used to scan every key of the
// namespace and sort the matches on every page, so paging through n rows
// of a namespace of N keys cost about n/page × N log N: at ten thousand
// graphs (documents, status rows, change rows) the broker spent its idle
// time there. Now the order is kept: a key that comes is noted in added
// and merged into sorted by the next listing (O(N + a log a) for a new
// keys, nothing when none came); a key that goes stays in sorted until
// that merge, and a listing skips it because entries no longer holds it.
type kvSpace struct {
	// ns is the namespace's name (the store's own copy).
	ns      string
	entries map[string]*kvEntry
	// sorted holds every key of entries in byte order, and possibly keys
	// deleted since the last merge; added holds the keys set since then
	// that sorted may lack (unsorted, possibly repeated).
	sorted []string
	added  []string
}

func newKVSpace(ns string) *kvSpace { return &kvSpace{ns: ns, entries: map[string]*kvEntry{}} }

// set stores e under key (nil deletes it).
func (k *kvSpace) set(key string, e *kvEntry) {
	if e == nil {
		delete(k.entries, key)
		return
	}
	if _, had := k.entries[key]; !had {
		k.added = append(k.added, key)
	}
	k.entries[key] = e
}

// keys returns every key in byte order (the slice is the space's own:
// read it, never keep it past the next set).
func (k *kvSpace) keys() []string {
	if len(k.added) == 0 && len(k.sorted) <= 2*len(k.entries)+64 {
		return k.sorted
	}
	slices.Sort(k.added)
	merged := make([]string, 0, len(k.entries))
	i, j := 0, 0
	keep := func(key string) {
		if _, ok := k.entries[key]; ok && (len(merged) == 0 || merged[len(merged)-1] != key) {
			merged = append(merged, key)
		}
	}
	for i < len(k.sorted) || j < len(k.added) {
		switch {
		case j == len(k.added) || (i < len(k.sorted) && k.sorted[i] <= k.added[j]):
			keep(k.sorted[i])
			i++
		default:
			keep(k.added[j])
			j++
		}
	}
	k.sorted, k.added = merged, nil
	return k.sorted
}

// from returns the keys that start with prefix and sort after after, in
// byte order, as a slice of keys() to be read while it starts with prefix:
// callers stop at the first key without it.
func (k *kvSpace) from(prefix, after string) []string {
	all := k.keys()
	start := sort.SearchStrings(all, prefix)
	if after >= prefix {
		// The first key strictly after after.
		start = sort.Search(len(all), func(i int) bool { return all[i] > after })
	}
	end := start + sort.Search(len(all)-start, func(i int) bool { return !strings.HasPrefix(all[start+i], prefix) })
	return all[start:end]
}
