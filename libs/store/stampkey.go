package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/queen-mq/gate/libs/cost"
	"github.com/queen-mq/gate/libs/queen"
)

// StampKeyKey is the kv row of the fleet's stamp key: the HMAC key every
// relay signs the `_gate` stamps' charges with and gate-api verifies a
// settle's stamp with. Whichever binary needs it first creates it
// (putIfAbsent, random, forever); every other one reads the winner's.
// Deleting the row makes every stamp signed before unverifiable (their
// settles are refused as altered) and the next reader mints a new key.
const StampKeyKey = "stamp-key"

// StampSigner returns the signer of the fleet's stamp key, creating the
// key when there is none.
func (s *Store) StampSigner(ctx context.Context) (*cost.Signer, error) {
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("minting a stamp key: %w", err)
	}
	val, _ := json.Marshal(base64.StdEncoding.EncodeToString(key[:]))
	res, err := s.c.KV(ctx, queen.KVPutIfAbsent(s.ns, StampKeyKey, val, queen.PutOpts{Forever: true}))
	if err == nil && res.Refused() {
		err = res.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("reading the stamp key (kv %s/%s): %w", s.ns, StampKeyKey, err)
	}
	if len(res.Results) != 1 {
		return nil, fmt.Errorf("reading the stamp key: the broker answered %d results for 1 op", len(res.Results))
	}
	r := res.Results[0]
	if !r.Applied && r.Reason != queen.KVExists {
		return nil, fmt.Errorf("reading the stamp key: putIfAbsent refused (%s)", r.Reason)
	}
	var enc string
	if err := json.Unmarshal(r.Value, &enc); err != nil {
		return nil, fmt.Errorf("the stamp key row %s/%s is not a base64 string: %w", s.ns, StampKeyKey, err)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("the stamp key row %s/%s is not base64: %w", s.ns, StampKeyKey, err)
	}
	return cost.NewSigner(raw)
}
