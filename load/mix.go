package load

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
)

// MixEntry is one model of a Mix and its weight.
type MixEntry struct {
	Name   string
	Weight int
}

// Mix is the models (or LoRA adapters served under one endpoint) a load's
// requests are shared among, each by its weight: "a:70,b:20,c:10" sends
// 70 of every 100 requests to a. Empty: every request goes to the
// client's one model.
type Mix []MixEntry

// The bounds of a Mix: a mix names models a person chose, and its
// shuffled blocks (see mixer) are as long as the weights' sum.
const (
	MaxMixModels = 64
	MaxMixWeight = 10000
)

// ParseMix reads a list of NAME:WEIGHT separated by commas, each weight
// a whole number above 0 ("a:70,b:20,c:10"). A spec without a comma is no
// mix (nil, nil): it is one model's name, which may hold a colon itself
// (Ollama's "qwen2.5:0.5b").
func ParseMix(spec string) (Mix, error) {
	if !strings.Contains(spec, ",") {
		return nil, nil
	}
	var m Mix
	total := 0
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		i := strings.LastIndexByte(part, ':')
		if i <= 0 {
			return nil, fmt.Errorf("bad model mix %q: %q is not NAME:WEIGHT, e.g. a:70,b:20,c:10", spec, part)
		}
		name := strings.TrimSpace(part[:i])
		w, err := strconv.Atoi(strings.TrimSpace(part[i+1:]))
		if err != nil || w < 1 {
			return nil, fmt.Errorf("bad model mix %q: the weight of %q is not a whole number above 0", spec, name)
		}
		for _, e := range m {
			if e.Name == name {
				return nil, fmt.Errorf("bad model mix %q: %q is named twice", spec, name)
			}
		}
		total += w
		m = append(m, MixEntry{Name: name, Weight: w})
		if len(m) > MaxMixModels || total > MaxMixWeight {
			return nil, fmt.Errorf("bad model mix %q: at most %d models and a sum of weights of at most %d", spec, MaxMixModels, MaxMixWeight)
		}
	}
	return m, nil
}

// check reports what the engine cannot use in m.
func (m Mix) check() error {
	total := 0
	for i, e := range m {
		if e.Name == "" || e.Weight < 1 {
			return fmt.Errorf("model %d: a name and a weight above 0 are needed", i+1)
		}
		total += e.Weight
	}
	if len(m) > MaxMixModels || total > MaxMixWeight {
		return fmt.Errorf("at most %d models and a sum of weights of at most %d", MaxMixModels, MaxMixWeight)
	}
	if len(m) == 1 {
		return errors.New("a mix of one model is that model: name it alone")
	}
	return nil
}

// String is m as ParseMix reads it back ("" for none).
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.Name + ":" + strconv.Itoa(e.Weight)
	}
	return strings.Join(parts, ",")
}

// Names are the mix's models in its order.
func (m Mix) Names() []string {
	out := make([]string, len(m))
	for i, e := range m {
		out[i] = e.Name
	}
	return out
}

// mixer deals a Mix's models to requests by number. The weights, divided
// by their greatest common divisor, make a block of as many slots (7, 2
// and 1 for 70/20/10); each block of requests is the block's slots in a
// shuffled order drawn from the seed and the block's number. So every
// block holds each model exactly its share, the order within a block is
// not a pattern a server's batching could lock to, and request n's
// model depends on the seed and n alone: a run with the same seed sends
// the same sequence.
type mixer struct {
	names []string
	slots []uint16 // a block: model i repeated by its reduced weight
	seed  uint64
	// last is the newest block shuffled: requests come in order, so one
	// block serves as many requests as it has slots before the next.
	last atomic.Pointer[mixBlock]
}

// mixBlock is one shuffled block.
type mixBlock struct {
	n     uint64
	order []uint16
}

// newMixer is m's dealer (nil for no mix).
func newMixer(m Mix, seed uint64) *mixer {
	if len(m) == 0 {
		return nil
	}
	g := 0
	for _, e := range m {
		g = gcd(g, e.Weight)
	}
	x := &mixer{names: m.Names(), seed: seed}
	for i, e := range m {
		for range e.Weight / g {
			x.slots = append(x.slots, uint16(i))
		}
	}
	return x
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// pick is the model of request n (from 0).
func (x *mixer) pick(n uint64) string {
	size := uint64(len(x.slots))
	b := n / size
	blk := x.last.Load()
	if blk == nil || blk.n != b {
		blk = &mixBlock{n: b, order: append([]uint16(nil), x.slots...)}
		rng := rand.New(rand.NewPCG(x.seed^0x6a09e667f3bcc909, b))
		rng.Shuffle(len(blk.order), func(i, j int) { blk.order[i], blk.order[j] = blk.order[j], blk.order[i] })
		x.last.Store(blk)
	}
	return x.names[blk.order[n%size]]
}
