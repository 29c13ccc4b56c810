package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/infertop/infertop/probe"
	"github.com/infertop/infertop/readlimit"
)

// Dataset is a fixed set of prompts, in an order shuffled by the seed and
// cycled through. With a dataset the prompt-length knob does not apply.
// A ShareGPT file's conversations are kept too, as their users' turns,
// for sessions (Sessions) to send turn by turn.
type Dataset struct {
	items []probe.Request
	next  atomic.Uint64
	convs [][]string // each conversation's user turns, in an order shuffled by the seed
	nextC atomic.Uint64
}

// LoadDataset reads JSONL (one {"prompt": ...} or {"messages": [...]} a
// line) or a ShareGPT JSON file (a list of {"conversations": [{"from":
// "human", "value": ...}, ...]}, whose first human turn is the prompt,
// and whose human turns are a session's user turns). Its errors are
// *SettingError (SettingDataset).
func LoadDataset(path string, seed uint64) (*Dataset, error) {
	data, err := readlimit.File(path, readlimit.Dataset)
	if err != nil {
		return nil, &SettingError{SettingDataset, err}
	}
	var items []probe.Request
	var convs [][]string
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		items, convs, err = shareGPT(t)
	} else {
		items, err = jsonl(data)
	}
	if err != nil {
		return nil, &SettingError{SettingDataset, fmt.Errorf("%s: %w", path, err)}
	}
	if len(items) == 0 {
		return nil, &SettingError{SettingDataset, fmt.Errorf("%s: no prompts in it", path)}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0xda7a5e7))
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	rng.Shuffle(len(convs), func(i, j int) { convs[i], convs[j] = convs[j], convs[i] })
	return &Dataset{items: items, convs: convs}, nil
}

func jsonl(data []byte) ([]probe.Request, error) {
	var out []probe.Request
	err := jsonLines(data, func(n int, line []byte) error {
		var item struct {
			Prompt   *string         `json:"prompt"`
			Messages []probe.Message `json:"messages"`
		}
		if err := json.Unmarshal(line, &item); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		switch {
		case item.Prompt == nil && item.Messages == nil:
			return fmt.Errorf(`line %d: neither "prompt" nor "messages"`, n)
		case item.Messages == nil && *item.Prompt == "", item.Prompt == nil && len(item.Messages) == 0:
			return fmt.Errorf(`line %d: the prompt is empty`, n)
		}
		prompt := ""
		if item.Prompt != nil {
			prompt = *item.Prompt
		}
		out = append(out, probe.Request{Prompt: prompt, Messages: item.Messages})
		return nil
	})
	return out, err
}

// shareGPT reads a ShareGPT list: each conversation's first human turn as
// a prompt, and its human turns (up to MaxTurns) as a conversation.
func shareGPT(data []byte) ([]probe.Request, [][]string, error) {
	var convs []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(data, &convs); err != nil {
		return nil, nil, fmt.Errorf("not a ShareGPT list: %w", err)
	}
	var out []probe.Request
	var users [][]string
	for _, c := range convs {
		var turns []string
		for _, turn := range c.Conversations {
			if (turn.From == "human" || turn.From == "user") && strings.TrimSpace(turn.Value) != "" && len(turns) < MaxTurns {
				turns = append(turns, turn.Value)
			}
		}
		if len(turns) > 0 {
			out = append(out, probe.Request{Prompt: turns[0]})
			users = append(users, turns)
		}
	}
	return out, users, nil
}

// Len is the number of prompts.
func (d *Dataset) Len() int { return len(d.items) }

// Conversations is the number of conversations (a ShareGPT file's; 0 for
// JSONL).
func (d *Dataset) Conversations() int { return len(d.convs) }

// MostTurns is the most user turns of any conversation (at most MaxTurns).
func (d *Dataset) MostTurns() int {
	most := 0
	for _, c := range d.convs {
		most = max(most, len(c))
	}
	return most
}

// takeConversation returns the next conversation's user turns, cycling.
func (d *Dataset) takeConversation() []string {
	return d.convs[(d.nextC.Add(1)-1)%uint64(len(d.convs))]
}

// take returns the next prompt, cycling.
func (d *Dataset) take() probe.Request {
	return d.items[(d.next.Add(1)-1)%uint64(len(d.items))]
}

// Clone is the same prompts in the same order with a cursor of its own,
// from the first: two engines that must send the same prompts (a
// comparison) each take from a clone.
func (d *Dataset) Clone() *Dataset { return &Dataset{items: d.items, convs: d.convs} }
